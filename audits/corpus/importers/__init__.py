"""Importers of other tools' result files into the timing corpus."""
