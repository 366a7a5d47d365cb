"""irscope.capture, irscope.sweep and irscope.profile name the API's functions whatever was imported first: a
package of the same name loaded before irscope.api (a test module or a user's code importing
irscope.capture.closure) must not shadow the function."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT


def test_a_package_imported_first_does_not_shadow_the_function():
    code = (
        "import irscope.capture.closure, irscope.sweep.command, irscope.profile.command, irscope\n"
        "from irscope.capture import closure\n"
        "print(callable(irscope.capture), callable(irscope.sweep), callable(irscope.profile),\n"
        "      irscope.capture.__module__, closure.__name__, sys.modules['irscope.capture'].__name__)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", "import sys\n" + code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True", "True", "True", "irscope.api", "irscope.capture.closure", "irscope.capture"]
