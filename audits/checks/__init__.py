"""The audits themselves: reliability, discriminability, calibration, aggregation, simulation, clocks,
compare."""
