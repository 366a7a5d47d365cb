"""Sweeps: a grid of settings compiled in parallel, ranked, optionally timed."""
