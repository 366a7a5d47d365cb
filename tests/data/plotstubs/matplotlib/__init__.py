"""A stand-in matplotlib for the capture tests (see ../README.md): draws nothing."""
