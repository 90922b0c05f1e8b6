"""Each audit's options and thresholds, declared without numpy or pandas (the command line reads them)."""
