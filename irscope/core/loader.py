"""Load a user's Python file and find the Triton / Gluon kernels in it.

User kernel files are code and are executed by design: the file is imported as a
module named after its stem, with its folder first on sys.path, as `python file.py`
would see its neighbours. The `if __name__ == "__main__"` block does not run.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from irscope.core import adapter
from irscope.errors import BadInput, did_you_mean


@dataclass
class KernelRef:
    name: str
    fn: object          # triton JITFunction (or GluonJITFunction)
    file: Path
    is_gluon: bool
    autotuned: bool     # reached through @triton.autotune / @triton.heuristics


def check_python_file(file: Path, what: str = "a Python file with Triton kernels") -> Path:
    """One-line errors for a file that is missing, a folder, or not valid Python (before running it)."""
    if not file.exists():
        raise BadInput(f"{file}: no such file")
    if file.is_dir():
        raise BadInput(f"{file}: is a folder, expected {what}")
    source = file.read_text(encoding="utf-8", errors="replace")
    try:
        compile(source, str(file), "exec")
    except SyntaxError as e:
        raise BadInput(f"{file}:{e.lineno}: syntax error: {e.msg}") from None
    return file


def load_module(path: str | Path) -> ModuleType:
    file = check_python_file(Path(path))
    name = f"{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    folder = str(file.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        # what the file prints while it loads goes to stderr: stdout carries irscope's output (--json)
        with contextlib.redirect_stdout(sys.stderr):
            spec.loader.exec_module(module)
    except Exception as e:
        sys.modules.pop(name, None)
        line = _user_line(e, file)
        raise BadInput(f"{file}{line}: importing the file raised {type(e).__name__}: {e}") from e
    return module


def _user_line(exc: BaseException, file: Path) -> str:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).resolve() == file.resolve():
            return f":{frame.lineno}"
    return ""


def _returns_value(fn) -> bool:
    """Device helpers return values; kernels do not. Used to keep helpers out of the default list."""
    try:
        tree = ast.parse(fn.src if hasattr(fn, "src") else "")
    except SyntaxError:
        return False
    return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(tree))


def find_kernels(module: ModuleType, file: Path) -> dict[str, KernelRef]:
    """Every @triton.jit / @gluon.jit kernel reachable from the module's globals."""
    found: dict[str, KernelRef] = {}
    for attr, obj in vars(module).items():
        fn = adapter.unwrap_kernel(obj)
        if fn is None:
            continue
        found[attr] = KernelRef(attr, fn, file, adapter.is_gluon(fn), fn is not obj)
    return found


def select_kernels(file: str | Path, names: list[str] | None) -> list[KernelRef]:
    """The kernels the user asked for (--kernel, repeatable), or the file's only kernel."""
    path = Path(file)
    module = load_module(path)
    kernels = find_kernels(module, path)
    if not kernels:
        raise BadInput(f"{path}: no @triton.jit or @gluon.jit kernel found")
    if names:
        chosen = []
        for name in names:
            if name not in kernels:
                raise BadInput(
                    f"{path}: no kernel named {name!r}{did_you_mean(name, kernels)}; "
                    f"kernels in the file: {', '.join(sorted(kernels))}"
                )
            chosen.append(kernels[name])
        return chosen
    defined_here = {
        n: k for n, k in kernels.items()
        if getattr(k.fn, "module", None) == module.__name__ and not _returns_value(k.fn)
    }
    candidates = defined_here or kernels
    if len(candidates) > 1:
        raise BadInput(
            f"{path}: {len(candidates)} kernels, pick one with --kernel: {', '.join(sorted(candidates))}"
        )
    return list(candidates.values())
