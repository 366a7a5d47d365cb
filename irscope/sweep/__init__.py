"""Sweeps: a grid of settings compiled in parallel, ranked, optionally timed.

configs (the grid) -> run (cache, then pool: the compile workers, then timing) -> rank (the table,
the winners as a recipe).
"""
