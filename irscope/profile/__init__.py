"""`irscope profile`: where the time goes, per Python line, measured.

The kernel is dumped (map.json: which SASS offset came from which line, and which TTGIR ops), run
once in a child process under Nsight Compute (or Proton's PC sampling where ncu is missing); the
tool's per-instruction counters are joined through the dump's SASS listing to the lines (join),
and the kernel's totals become a measured roofline point against the chip table (roofline).
Modules: ncu (its command line and its CSV pages), proton (the hatchet fallback), join, roofline,
child (the launch the tool watches), command (the whole run).
"""
