"""Load a user's Python file and find the Triton / Gluon kernels in it.

User kernel files are code and are executed by design: the file is imported with its
folder first on sys.path, as `python file.py` would see its neighbours, under a private
module name (irscope_kernel_<hash>_<stem>) so that a file named math.py or numbers.py does
not replace the standard library's module. The `if __name__ == "__main__"` block does not
run. Loading runs under a time limit (--load-timeout); a file that calls sys.exit while it
is imported is one line, like any other failure to import it.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import os
import signal
import stat
import sys
import threading
import traceback
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path
from types import ModuleType
from typing import Any

from irscope import adapter, knobs
from irscope.errors import BadInput, did_you_mean


@dataclass
class KernelRef:
    name: str
    fn: Any  # triton JITFunction (or GluonJITFunction)
    file: Path
    is_gluon: bool
    autotuned: bool  # reached through @triton.autotune / @triton.heuristics


MAX_SOURCE_BYTES = 4 * 1024 * 1024  # a kernel file or script larger than this is not source code
DEFAULT_LOAD_TIMEOUT = knobs.LOAD_TIMEOUT.default  # the limit itself: knobs.LOAD_TIMEOUT (--load-timeout)


def set_load_timeout(seconds: float) -> None:
    """The limit on importing a kernel file (the CLI's --load-timeout; knobs.LOAD_TIMEOUT, process-wide)."""
    knobs.LOAD_TIMEOUT.set(seconds)


def check_python_file(file: Path, what: str = "a Python file with Triton kernels", require_py: bool = False) -> Path:
    """One-line errors for a file that is missing, a folder, not a regular file (a FIFO, a device),
    too large, not named .py (with require_py), or not valid Python: all before running it."""
    try:
        st = file.stat()
    except FileNotFoundError:
        raise BadInput(f"{file}: no such file") from None
    except OSError as e:
        raise BadInput(f"{file}: cannot read it ({e.strerror or e}); expected {what}") from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{file}: is a folder, expected {what}")
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{file}: not a regular file (a device, FIFO or socket); expected {what}")
    if require_py and file.suffix != ".py":
        raise BadInput(f"{file}: not a .py file; expected {what} (FILE.py), or a spec file (.json)")
    if st.st_size > MAX_SOURCE_BYTES:
        raise BadInput(
            f"{file}: {st.st_size / 2**20:.1f} MiB, too large for {what} (at most {MAX_SOURCE_BYTES // 2**20} MiB)"
        )
    try:
        with open(file, "rb") as f:
            raw = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as e:
        raise BadInput(f"{file}: cannot read it ({e.strerror or e}); expected {what}") from None
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as e:  # Triton reads a @jit function's source as UTF-8 (and says only
        line = raw[: e.start].count(b"\n") + 1  # "@jit functions should be defined in a Python file")
        raise BadInput(
            f"{file}:{line}: not UTF-8 text (byte {e.start}: {e.reason}); Triton reads kernel "
            f"source as UTF-8: save the file as UTF-8"
        ) from None
    try:
        compile(source, str(file), "exec")
    except SyntaxError as e:
        at = f":{e.lineno}" if e.lineno else ""
        raise BadInput(f"{file}{at}: syntax error: {e.msg}") from None
    except ValueError as e:  # a NUL byte in the source
        raise BadInput(f"{file}: not valid Python source: {e}") from None
    return file


def module_name(file: Path) -> str:
    """The private name a kernel file is imported under: it cannot collide with a real module."""
    digest = hashlib.sha1(str(file.resolve()).encode()).hexdigest()[:12]
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in file.stem)
    return f"irscope_kernel_{digest}_{stem}"


class _LoadTimeout(BaseException):
    """Raised by the timer in the importing frame (a BaseException: the file's `except Exception` cannot eat it)."""


@contextlib.contextmanager
def _time_limit(seconds: float):
    """SIGALRM after `seconds` (main thread only; elsewhere no limit can be set)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        raise _LoadTimeout()

    old_handler = signal.signal(signal.SIGALRM, expire)
    old_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_timer[0]:
            signal.setitimer(signal.ITIMER_REAL, *old_timer)


class _StdlibFirst:
    """A meta-path finder: a standard-library module imported later (by Triton, torch or the file)
    is never found in a kernel file's folder, though that folder is first on sys.path."""

    folders: set[str] = set()

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if path is not None or name not in getattr(sys, "stdlib_module_names", ()) or not cls.folders:
            return None
        return PathFinder.find_spec(name, [p for p in sys.path if p not in cls.folders])


def _add_folder(folder: str) -> None:
    if _StdlibFirst not in sys.meta_path:
        sys.meta_path.insert(0, _StdlibFirst)
    _StdlibFirst.folders.add(folder)
    if folder not in sys.path:
        sys.path.insert(0, folder)


@dataclass
class Observed:
    """What importing a kernel file touched: the files it opened and the environment variables it
    read (env None: it went through the whole environment). The cache's direct mode records them."""

    files: set[str]
    env: set[str] | None


OBSERVED: dict[str, Observed] = {}  # by the kernel file's resolved path
_watching: list[Observed] = []


def _audit(event: str, args: tuple) -> None:
    if _watching and event == "open" and isinstance(args[0], (str, bytes)):
        _watching[-1].files.add(os.fsdecode(args[0]))


class _WatchedEnviron(type(os.environ)):  # type: ignore[misc]  # os.environ's own class, taken at run time
    """os.environ while a kernel file is imported: every name read is noted (get, [], in, getenv)."""

    def __getitem__(self, key):
        if _watching and _watching[-1].env is not None:
            _watching[-1].env.add(key)
        return super().__getitem__(key)

    def __iter__(self):
        if _watching:
            _watching[-1].env = None
        return super().__iter__()


_hooked: list[bool] = []


@contextlib.contextmanager
def _observe(file: Path):
    """Note what the import of `file` opens and reads (sys.addaudithook: added once, idle outside)."""
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked.append(True)
    seen = Observed(set(), set())
    _watching.append(seen)
    plain = type(os.environ)
    os.environ.__class__ = _WatchedEnviron
    try:
        yield
    finally:
        os.environ.__class__ = plain
        _watching.pop()
        OBSERVED[str(file.resolve())] = seen


def load_module(path: str | Path) -> ModuleType:
    file = check_python_file(Path(path), require_py=True)
    name = module_name(file)
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise BadInput(f"{file}: cannot be imported as a Python module; expected a .py file with Triton kernels")
    module = importlib.util.module_from_spec(spec)
    _add_folder(str(file.resolve().parent))
    sys.modules[name] = module
    limit = knobs.LOAD_TIMEOUT.get()
    try:
        # what the file prints while it loads goes to stderr: stdout carries irscope's output (--json)
        with contextlib.redirect_stdout(sys.stderr), _time_limit(limit), _observe(file):
            spec.loader.exec_module(module)
    except _LoadTimeout:
        sys.modules.pop(name, None)
        raise BadInput(
            f"{file}: importing the file took longer than {limit:g} s (--load-timeout {limit:g}); "
            f"a kernel file should only define kernels when imported"
        ) from None
    except SystemExit as e:
        sys.modules.pop(name, None)
        line = _user_line(e, file)
        raise BadInput(
            f"{file}{line}: the file exited with status {e.code} while being imported "
            f'(sys.exit at import; put it under `if __name__ == "__main__":`)'
        ) from None
    except Exception as e:
        sys.modules.pop(name, None)
        line = _user_line(e, file)
        first = (str(e).strip().splitlines() or [""])[0]
        if isinstance(e, ImportError) and (e.name or "").startswith("triton.language.extra.tlx"):
            raise BadInput(
                f"{file}{line}: a TLX kernel, but this Triton ({adapter.triton_version()}) has no "
                f"triton.language.extra.tlx: TLX comes with Meta's fork (pip install fbtriton, then "
                f"irscope; see docs/guides/installation.md)"
            ) from None
        raise BadInput(f"{file}{line}: importing the file raised {type(e).__name__}: {first}") from e
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


def _names_used_by(kernels: dict[str, KernelRef]) -> set[str]:
    """Names that one kernel's source uses for another: device helpers and warp-specialize
    partitions (gl.warp_specialize([(partition, args), ...])), which return nothing but are no kernels."""
    used: set[str] = set()
    for name, ref in kernels.items():
        try:
            tree = ast.parse(getattr(ref.fn, "src", "") or "")
        except SyntaxError:
            continue
        used |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id != name}
    return used & set(kernels)


def find_kernels(module: ModuleType, file: Path) -> dict[str, KernelRef]:
    """Every @triton.jit / @gluon.jit kernel reachable from the module's globals."""
    found: dict[str, KernelRef] = {}
    for attr, obj in vars(module).items():
        fn = adapter.unwrap_kernel(obj)
        if fn is None:
            continue
        found[attr] = KernelRef(attr, fn, file, adapter.is_gluon(fn), fn is not obj)
    return found


def kernel_ref(obj: object) -> KernelRef:
    """A kernel given as an object (the Python API: a @triton.jit / @gluon.jit function, or one under
    @triton.autotune / @triton.heuristics), used as it is: its file is the one it was defined in."""
    fn = adapter.unwrap_kernel(obj)
    if fn is None:
        raise BadInput(
            f"{obj!r}: not a @triton.jit or @gluon.jit kernel (nor one under @triton.autotune); "
            f"give the kernel function, or a file path and its name"
        )
    inner = getattr(fn, "fn", None)
    name = str(getattr(inner, "__name__", None) or getattr(fn, "__name__", "kernel"))
    code = getattr(inner, "__code__", None)
    file = Path(code.co_filename if code is not None else f"<{name}>")
    return KernelRef(name, fn, file, adapter.is_gluon(fn), fn is not obj)


def select_kernels(file: str | Path, names: list[str] | None, every: bool = False) -> list[KernelRef]:
    """The kernels the user asked for (--kernel, repeatable), or the file's only kernel (with
    `every`: all the kernels the file defines, as `irscope signature` lists them)."""
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
    referenced = _names_used_by(kernels)
    defined_here = {
        n: k
        for n, k in kernels.items()
        if getattr(k.fn, "module", None) == module.__name__ and not _returns_value(k.fn) and n not in referenced
    }
    candidates = defined_here or kernels
    if len(candidates) > 1 and not every:
        raise BadInput(f"{path}: {len(candidates)} kernels, pick one with --kernel: {', '.join(sorted(candidates))}")
    return list(candidates.values())
