"""Labelled data for the benchmarks and tests (not shipped in the package)."""
