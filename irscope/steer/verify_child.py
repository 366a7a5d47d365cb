"""The MLIR parser/verifier run on an edited module in a child process.

Triton's native code asserts on layouts it cannot build (e.g. an nvidia_mma instrShape the
hardware lacks: `nvidiaMmaTile ... Assertion 'n % (kWidth * 4) == 0' failed`), and an assertion
aborts the whole process: nothing printed, exit 134. layouts.py's rules reject the known cases
first; this is the net under them. The child parses and verifies the module as triton.compile on
a file would; an abort there becomes one line for the user instead of a dead irscope.

    python -m irscope.steer.verify_child   (stdin: {"text", "ext", "backend", "arch", "warp_size"})
    exit 0: verified; exit 1: rejected, the MLIR diagnostics on stderr; killed by a signal: aborted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

from irscope.adapter import make_backend
from irscope.kernel.targets import Target

TIMEOUT_S = 120


def verify_isolated(text: str, ext: str, target) -> str | None:
    """The verifier's diagnostic for this module (an abort included), or None when it verifies."""
    request = json.dumps(
        {"text": text, "ext": ext, "backend": target.backend, "arch": target.arch, "warp_size": target.warp_size}
    )
    try:
        p = subprocess.run(
            [sys.executable, "-m", "irscope.steer.verify_child"],
            input=request,
            text=True,
            capture_output=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"the MLIR verifier did not finish in {TIMEOUT_S} s"
    if p.returncode == 0:
        return None
    lines = [ln.strip() for ln in p.stderr.splitlines() if ln.strip()]
    if p.returncode < 0:
        try:
            name = signal.Signals(-p.returncode).name
        except ValueError:
            name = f"signal {-p.returncode}"
        why = next((ln.split("Assertion", 1)[1].strip() for ln in lines if "Assertion" in ln), None)
        why = f"assertion {why}" if why else (lines[-1] if lines else "no message")
        return f"Triton's native code aborted ({name}) on it: {why}"
    diags = [ln.split("error:", 1)[1].strip() for ln in lines if "error:" in ln]
    return "; ".join(dict.fromkeys(diags)) or (lines[-1] if lines else f"the verifier exited {p.returncode}")


def _child() -> int:
    from triton._C.libtriton import ir

    req = json.loads(sys.stdin.read())
    target = Target(req["backend"], req["arch"], req["warp_size"])
    with tempfile.TemporaryDirectory(prefix="irscope-verify-") as d:
        path = os.path.join(d, f"kernel.{req['ext']}")
        with open(path, "w") as f:
            f.write(req["text"])
        context = ir.context()
        ir.load_dialects(context)
        make_backend(target).load_dialects(context)
        try:
            ir.parse_mlir_module(path, context)
        except Exception as e:  # RuntimeError('Parse MLIR file failed.'); the diagnostics are on stderr
            sys.stderr.write(f"\n{e}\n")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(_child())
