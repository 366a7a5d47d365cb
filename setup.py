"""Only one thing is decided here rather than in pyproject.toml: whether irscope asks for `triton`.

The module `triton` comes from several distributions: upstream `triton`, Meta's fork `fbtriton`
(with TLX), `pytorch-triton`, `triton-rocm`/`pytorch-triton-rocm`, `triton-xpu`. Requiring the
distribution `triton` would make pip install upstream Triton over a fork that already provides the
module. So the requirement is added only when the environment being installed into has no other
provider of the module. pip builds in an isolated environment, so the check asks the target
interpreter itself (sys.executable, without the build environment's path).
"""

import os
import subprocess
import sys

from setuptools import setup

TRITON_PROVIDERS = ("fbtriton", "pytorch-triton", "pytorch-triton-rocm", "triton-rocm", "pytorch-triton-xpu")
TRITON = "triton>=3.5"  # the compiler irscope drives (3.6, 3.9 and fbtriton 3.7 are tested)

PROBE = (
    "import importlib.metadata as m, sys\n"
    f"names = {TRITON_PROVIDERS!r}\n"
    "found = [n for n in names if any(d.metadata['Name'].lower() == n for d in m.distributions())]\n"
    "sys.stdout.write(found[0] if found else '')\n"
)


def _other_triton_provider() -> str:
    """The installed distribution other than `triton` that provides the module, or ''."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}
    try:
        out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


DEPENDENCIES = [
    "click>=8.1",                         # command-line parsing
    "rich>=13",                           # tables and syntax colouring on a terminal
    "pygments>=2.16",                     # the lexers of --stage's colours (views/lexers.py; rich brings it too)
    "tomli>=2; python_version < '3.11'",  # recipes are TOML (tomllib from 3.11)
]

provider = os.environ.get("IRSCOPE_TRITON_PROVIDER") or _other_triton_provider()
setup(install_requires=DEPENDENCIES + ([] if provider else [TRITON]))
