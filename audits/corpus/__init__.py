"""The timing corpus: its schema, reading, validation and writing, importers and the synthetic generator."""
