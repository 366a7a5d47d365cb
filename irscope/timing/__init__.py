"""Timing on a GPU: launches as data, inputs, statistics, and the process that holds the GPU.

plan (what to time) -> bench (the method) -> session (the parent's side of the timing process)
-> gpu_process (the process: inputs, preflights) -> measure (the balanced rounds; clocks: the SM clock
watched, slow rounds dropped) -> statistics (the ratios, their intervals, the verdicts).
reference: --ref, a torch call timed in the same rounds (a grammar, parsed, never evaluated).
"""
