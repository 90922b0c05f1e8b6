"""Runs audits over a corpus: the whole audit in memory and on Dask (partitioned)."""
