"""Collecting a corpus: suites, the output checker, languages, sandboxes, campaigns, background load, provenance."""
