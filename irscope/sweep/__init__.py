"""Sweeps: a grid (or a search) of settings compiled in parallel, ranked, optionally timed.

configs (the grid, ranges) -> search (proposals a generation at a time) -> run (cache, then the pool
or Ray tasks: the compiles; then the timers: this GPU or one Ray actor per GPU) -> timed (batches on
one scale, the finalists re-timed) -> history (the database) -> rank (the table, the winners as a recipe).
"""
