"""Across Triton releases: environments with another Triton (envs), the worker that dumps there
(worker), a diff side compiled in one (sides), a capture diffed across two (captures), and the
bisect over the releases between a good and a bad one (bisect)."""
