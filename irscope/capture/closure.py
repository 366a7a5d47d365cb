"""A captured kernel's closure as data: what a worker process needs to rebuild the JITFunction exactly,
from the capture's spec file alone, without running (or importing) the user's script.

    describe(jit)   -> (document, None) or (None, why not): recorded in the spec file as "closure"
    rebuild(doc)    -> the JITFunction, rebuilt in a worker; its Triton cache key must equal the
                       recorded one (rebuilt_exactly), else the worker says so and the capture is
                       dumped in irscope's own process as before

The document holds, for the kernel and every @jit function it calls (recursively, wherever defined):
its module name, source file, first line (its first decorator's, as Triton's starting_line_number)
and def line, its source lines as inspect read them, the JIT class and its arguments, and each
global its body reads, as data:

    {"module": NAME}              a module (only Triton's, torch's and the standard library's are
                                  imported in a worker: importing any other could run code)
    {"import": MODULE, "attr": Q} an object reachable as MODULE.Q (libdevice stubs, tl builtins)
    {"value": V}                  None, bool, int, float, str
    {"dtype": NAME}               a tl.dtype (tl.NAME)
    {"constexpr": REF}            tl.constexpr of one of these
    {"jit": KEY}                  another @jit function of the document (rebuilt from its lines)

The worker compiles each def with the ORIGINAL file name at its ORIGINAL lines (the other lines
blank) and seeds linecache with the recorded lines, so Triton reads the same source, line numbers
and file name: line info and debug paths in the dump stay exact. Decorators other than jit
(autotune, heuristics) are dropped: the spec already fixes constexprs and options.
Any doubt (a closure cell, a nested or indented def, a lambda, a global that is not plain data,
a module that is not known to be safe to import) -> None and the reason.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import linecache
import sys
import textwrap
from typing import Any

VERSION = 1
SAFE_PACKAGES = {"triton", "torch", "math", "copy", "operator", "functools", "itertools", "numpy", "typing"}
JIT_CLASSES = {"triton.runtime.jit:JITFunction", "triton.experimental.gluon._runtime:GluonJITFunction"}
JIT_ARGS = (
    "version",
    "do_not_specialize",
    "do_not_specialize_on_alignment",
    "debug",
    "noinline",
    "c_cache",
)  # the last: fbtriton's JITFunction only (recorded where the kernel has it)
IDENTITY = "__irscope_closure_identity__"


class Unsupported(Exception):
    """Why a closure cannot be recorded as data (the capture is then dumped in-process)."""


def describe(jit: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The closure document of a JITFunction, or (None, why it cannot be one)."""
    try:
        functions: dict[str, dict[str, Any]] = {}
        root = _function(jit, functions)
        return {"version": VERSION, "kernel": root, "functions": functions, "cache_key": jit.cache_key}, None
    except Unsupported as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001 - anything unexpected is a doubt: dumped in-process
        return None, f"its closure could not be read ({type(e).__name__}: {e})"


def _key(fn: Any) -> str:
    return f"{fn.__module__}:{fn.__qualname__}"


def _function(jit: Any, functions: dict[str, dict[str, Any]]) -> str:
    """Record one @jit function (and, recursively, the @jit functions it reads); its key."""
    fn = jit.fn
    key = _key(fn)
    if key in functions:
        return key
    cls = f"{type(jit).__module__}:{type(jit).__qualname__}"
    if cls not in JIT_CLASSES:
        raise Unsupported(f"{fn.__name__} is a {type(jit).__name__}, which workers do not rebuild")
    if fn.__closure__:
        raise Unsupported(f"{fn.__name__} reads variables of an enclosing function (a closure)")
    if "<" in fn.__qualname__ or "." in fn.__qualname__:
        raise Unsupported(f"{fn.__qualname__} is not defined at its module's top level")
    if getattr(jit, "_repr", None) is not None:
        raise Unsupported(f"{fn.__name__} has its own repr= (a function)")
    lines, first = inspect.getsourcelines(fn)
    if first != fn.__code__.co_firstlineno or list(lines) != list(jit.raw_src) or first != jit.starting_line_number:
        raise Unsupported(f"{fn.__name__}: its source lines are not where its code says")
    def_index = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def "))), None)
    if def_index is None:
        raise Unsupported(f"{fn.__name__}: its def is not found")
    indent = lines[def_index][: len(lines[def_index]) - len(lines[def_index].lstrip())]
    if indent and (first < 2 or not all(line.startswith(indent) or not line.strip() for line in lines)):
        raise Unsupported(f"{fn.__name__}: its def is indented unevenly")
    tree = ast.parse(textwrap.dedent("".join(lines[def_index:])))
    node = tree.body[0]
    if any(
        isinstance(n, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global, ast.Nonlocal))
        and n is not node
        for n in ast.walk(tree)
    ):
        raise Unsupported(f"{fn.__name__} defines a function, a lambda or a class, or declares global names")
    functions[key] = doc = {
        "module": fn.__module__,
        "file": fn.__code__.co_filename,
        "name": fn.__name__,
        "first_line": first,
        "def_line": first + def_index,
        "indent": indent,
        "lines": list(lines),
        "class": cls,
        "args": {a: _plain_jit_arg(getattr(jit, a), a, fn.__name__) for a in JIT_ARGS if hasattr(jit, a)},
        "globals": {},
    }
    for name in sorted(_read_names(node)):
        if name not in fn.__globals__:
            if hasattr(builtins, name):
                continue
            continue  # neither global nor builtin: Triton resolves it itself (or fails the same way)
        doc["globals"][name] = _ref(fn.__globals__[name], name, fn.__name__, functions)
    return key


def _plain_jit_arg(value: Any, arg: str, who: str) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, str)) for v in value):
        return list(value)
    raise Unsupported(f"{who}: its jit argument {arg}={value!r} is not plain data")


def _read_names(node: ast.AST) -> set[str]:
    """The global names a def reads: every name loaded, less its parameters and the names it binds."""
    bound = (
        {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)} if isinstance(node, ast.FunctionDef) else set()
    )
    loaded: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (loaded if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
    return loaded - bound


def _ref(value: Any, name: str, who: str, functions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One global as data (see the module's docstring), or Unsupported."""
    import triton.language as tl
    from triton.runtime.jit import JITCallable

    if isinstance(value, type(sys)):
        if value.__name__.split(".")[0] not in SAFE_PACKAGES or sys.modules.get(value.__name__) is not value:
            raise Unsupported(f"{who} reads the module {value.__name__} ({name}), which workers do not import")
        return {"module": value.__name__}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    if isinstance(value, tl.dtype):
        for attr, v in vars(tl).items():
            if isinstance(v, tl.dtype) and not attr.startswith("_") and v == value:
                return {"dtype": attr}
        raise Unsupported(f"{who} reads {name}, a dtype with no tl name")
    if isinstance(value, tl.constexpr):
        return {"constexpr": _ref(value.value, name, who, functions)}
    if isinstance(value, JITCallable):
        return {"jit": _function(value, functions)}
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and module.split(".")[0] in SAFE_PACKAGES:
        if _resolve(module, qualname) is value:
            return {"import": module, "attr": qualname}
    raise Unsupported(f"{who} reads {name} ({type(value).__name__}), which is not plain data")


def _resolve(module: str, qualname: str) -> Any:
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj
    except Exception:  # noqa: BLE001 - not reachable by name: not data
        return None


# ---------------------------------------------------------------- the worker's side


def rebuild(doc: dict[str, Any]) -> Any:
    """The kernel's JITFunction, rebuilt from the document (in a worker: never the user's script)."""
    if doc.get("version") != VERSION:
        raise ValueError(f"closure version {doc.get('version')!r}, this irscope reads {VERSION}")
    functions = doc["functions"]
    for f in functions.values():
        _seed_lines(f["file"], f["first_line"], f["lines"])
    namespaces: dict[tuple[str, str], dict[str, Any]] = {}
    built: dict[str, Any] = {}

    def build(key: str) -> Any:
        if key in built:
            return built[key]
        f = functions[key]
        ns = namespaces.setdefault((f["module"], f["file"]), {"__name__": f["module"], "__builtins__": builtins})
        later = {}
        for name, ref in f["globals"].items():
            if "jit" in ref:
                later[name] = ref["jit"]
            else:
                ns[name] = _value(ref)
        built[key] = jit = _define(f, ns)
        for name, callee in later.items():
            ns[name] = build(callee)
        return jit

    return build(doc["kernel"])


def rebuilt_exactly(jit: Any, doc: dict[str, Any]) -> bool:
    """Whether Triton sees the rebuilt kernel as the captured one: its cache key (source, line,
    every callee's key, constexpr globals) equals the recorded one."""
    return jit.cache_key == doc.get("cache_key")


def _value(ref: dict[str, Any]) -> Any:
    import triton.language as tl

    if "module" in ref:
        return importlib.import_module(ref["module"])
    if "value" in ref:
        return ref["value"]
    if "dtype" in ref:
        return getattr(tl, ref["dtype"])
    if "constexpr" in ref:
        return tl.constexpr(_value(ref["constexpr"]))
    if "import" in ref:
        obj = _resolve(ref["import"], ref["attr"])
        if obj is None:
            raise ValueError(f"{ref['import']}.{ref['attr']} is not importable here")
        return obj
    raise ValueError(f"a global the closure cannot read: {ref}")


def _define(f: dict[str, Any], ns: dict[str, Any]) -> Any:
    """The def compiled at its own file, lines and columns (blank lines before it, one identity decorator
    on its first decorator's line, so co_firstlineno is Triton's starting line), wrapped in its JIT class."""
    first, def_line, indent = f["first_line"], f["def_line"], f.get("indent", "")
    body = "".join(f["lines"][def_line - first :])
    decorator = f"{indent}@{IDENTITY}\n" + "\n" * (def_line - first - 1) if def_line > first else ""
    # an indented def (under a module-level `if`, as fla's exp2) is compiled under `if True:` on the line before
    head = ("\n" * (first - 2) + "if True:\n" if indent else "\n" * (first - 1)) + decorator
    code = compile(head + body, f["file"], "exec", dont_inherit=True)
    saved = ns.get(f["name"], IDENTITY)
    ns[IDENTITY] = lambda fn: fn
    try:
        exec(code, ns)  # noqa: S102 - the def's own lines, recorded from the kernel's file by describe()
        fn = ns[f["name"]]
    finally:
        ns.pop(IDENTITY, None)
        if saved is IDENTITY:
            ns.pop(f["name"], None)
        else:
            ns[f["name"]] = saved
    module, _, name = f["class"].partition(":")
    cls = getattr(importlib.import_module(module), name)
    args = dict(f["args"])
    args["do_not_specialize"] = args.get("do_not_specialize") or None
    args["do_not_specialize_on_alignment"] = args.get("do_not_specialize_on_alignment") or None
    return cls(fn, **args)


_REAL: dict[str, set[int]] = {}  # per file, the line numbers seeded with the file's own lines
END = "pass  # irscope: the recorded block ends here\n"


def _seed_lines(file: str, first: int, lines: list[str]) -> None:
    """linecache holds the recorded lines at their own numbers (merged with what an earlier kernel of
    the same file seeded; mtime None: never re-read from disk). The line after them, unless recorded,
    is a statement at column 0, so inspect's block ends where it ended in the file, not at another
    function's lines further down."""
    entry = linecache.cache.get(file)
    have = list(entry[2]) if entry is not None and len(entry) == 4 and entry[1] is None else []
    if not have:
        _REAL[file] = set()
    real = _REAL.setdefault(file, set())
    need = first + len(lines)
    have += ["\n"] * (need - len(have))
    have[first - 1 : need - 1] = lines
    real.update(range(first, need))
    if need not in real:
        have[need - 1] = END
    linecache.cache[file] = (sum(len(x) for x in have), None, have, file)
