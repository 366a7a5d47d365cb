"""irscope: see and steer what the Triton compiler makes of a kernel.

The flow, one module per concept:

    spec (kernel + specialization)  +  settings (target, options)
        -> compiler (triton.compile, with stage hooks)
        -> artifacts (stages, per-pass IR, stats)
        -> views (dump, passes, diff)

Importing this package is cheap: Triton is imported only when a command needs it,
and torch never on the dump path.
"""

__version__ = "0.1.0"
