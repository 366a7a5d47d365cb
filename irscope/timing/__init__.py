"""Timing on a GPU: launches as data, inputs, statistics, and the process that holds the GPU."""
