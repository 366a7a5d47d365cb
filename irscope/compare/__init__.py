"""Comparing two dumps: normalisation of each stage and the diff engine."""
