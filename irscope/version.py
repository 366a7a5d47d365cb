"""irscope's version, in the lowest layer: the compiler writes it into every manifest and the cache's
direct mode into every record, so it must not live in the root package (which loads the API)."""

__version__ = "0.1.0"
