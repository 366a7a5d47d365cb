"""The compile pipeline: a kernel spec and its settings become artifacts (every stage, stats)."""
