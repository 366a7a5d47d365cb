"""Steering the compiler: recipes (TOML data) and pins (IR rewrites checked against the output)."""
