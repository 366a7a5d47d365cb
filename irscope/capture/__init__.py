"""Capture: run a script unmodified and record every kernel it compiles (on a GPU or a stand-in)."""
