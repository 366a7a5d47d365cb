"""The architecture's rules, read from the source (docs/architecture.md says why each holds).

- no import cycle between irscope's modules, imports inside functions included (a lazy import may
  point down, never up or round);
- imports inside functions only for heavy or optional third-party packages, at the command
  boundary (irscope/cli), or for the optional machinery LAZY names (kept off the plain dump's start-up);
- the layers point one way: errors, knobs, stages, records <- adapter <- kernel <- artifacts <- compile <- standin <- steer <- jobs <- capture, compare, timing <- sweep, releases, profile <- report <- views <- api <- direct <- cli;
- only views and cli speak click or rich;
- no module over 500 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "irscope"
HEAVY = ("triton", "torch", "rich", "click", "numpy", "ctypes", "ray", "optuna", "pynvml", "amdsmi", "jinja2", "tqdm",
         "playwright")
# a module may import from its own layer and the layers before it
LAYERS = [("errors", "knobs", "stages", "records"), ("adapter",), ("kernel",), ("artifacts",), ("compile",), ("standin",), ("steer",), ("jobs",), ("capture", "compare", "timing", "workers"), ("sweep", "releases", "profile"),
          ("report",), ("views",), ("api",), ("direct",), ("cli", "__main__", "__init__", "entry")]
MAX_LINES = 500
# Optional machinery kept off the plain dump's start-up (a cached re-dump pays only for what it uses):
# the module that imports it inside a function -> what it imports there, and why.
LAZY = {
    "irscope.direct.recorder": {
        "irscope.kernel.loader": "what the kernel file's import opened, only once a full run is to be recorded",
        "irscope.adapter": "the env Triton's key reads, only once a full run is to be recorded "
                           "(a direct hit reads its record without it)",
        "irscope.jobs": "a spec file read, only once a full run is to be recorded",
        "irscope.steer.recipes": "where a recipe was found, only once a full run with --recipe is to be recorded",
        "irscope.views.dump": "the dump's summary, only once a full dump is to be recorded",
        "irscope.views.console": "the console the summary renders into, only once a full dump is to be recorded"},
    "irscope.direct.serve": {"irscope.views.dump": "the dump's views, only to render what the direct mode served",
                             "irscope.views.console": "the console a served dump's summary renders into"},
    "irscope.entry": {"irscope.cli": "click and every command, only when the cache's direct mode cannot serve, "
                                     "or to render a served passes or lines on a terminal"},
    "irscope.jobs": {"irscope.steer.recipes": "reading recipe files (TOML), only when --recipe names one",
                     "irscope.steer.pins": "the pin grammar and its MLIR helpers, only when pins are given",
                     "irscope.standin.gpu": "the stand-in GPU, only to load a captured script for a replay"},
    "irscope.steer.layering": {"irscope.steer.pins": "the pin model (ConstPin), only when a recipe is applied"},
    "irscope.steer.pinset": {"irscope.steer.checks": "checks of the output, only once a compile ran",
                             "irscope.steer.layouts": "the TTGIR rewrite, only once a compile runs",
                             "irscope.steer.loops": "the TTIR rewrite, only once a compile runs",
                             "irscope.steer.partitions": "the partition-register rewrite, only once a compile runs"},
}


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = ast.parse(path.read_text(), str(path))
    return out


def _imported(node: ast.Import | ast.ImportFrom, name: str, known: set[str]) -> list[str]:
    """The irscope modules an import statement loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("irscope")]
    base = node.module or ""
    if node.level:  # relative: resolve against the importing module's package
        parts = name.split(".")[:-node.level] if not name.endswith("__init__") else name.split(".")
        base = ".".join(parts + ([base] if base else []))
    if not base.startswith("irscope"):
        return []
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, (ast.If, ast.Try)):  # version guards: still module level
            found.extend(n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return found


def _all_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement: module level, version guards and inside functions (lazy ones)."""
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _graph(mods: dict[str, ast.Module], imports) -> dict[str, set[str]]:
    known = set(mods)
    return {name: {m for node in imports(tree) for m in _imported(node, name, known) if m != name}
            for name, tree in mods.items()}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m in graph and not state.get(m) and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if not state.get(n) and (found := visit(n)):
            return found
    return None


def test_no_import_cycles():
    cycle = _find_cycle(_graph(_modules(), _top_level_imports))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_cycles_through_imports_inside_functions():
    """A lazy import (inside a function) may point down, never up or round: with every import
    counted, the modules still form no circle."""
    cycle = _find_cycle(_graph(_modules(), _all_imports))
    assert cycle is None, "import cycle (imports inside functions included): " + " -> ".join(cycle or [])


def _layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else "__init__"
    return next(i for i, names in enumerate(LAYERS) if part in names)


def test_layers_point_one_way():
    mods = _modules()
    known = set(mods)
    wrong = []
    for name, tree in mods.items():
        if name == "irscope":
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for m in _imported(node, name, known):
                    if m != "irscope" and _layer(m) > _layer(name):
                        wrong.append(f"{name} imports {m}")
    assert not wrong, wrong


def test_imports_inside_functions_only_for_heavy_packages_or_at_the_command_boundary():
    wrong = []
    for name, tree in _modules().items():
        if name.startswith("irscope.cli"):
            continue
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    mods = ["." if node.level else node.module or ""]
                else:
                    continue
                if isinstance(node, ast.ImportFrom) and node.module and any(
                        node.module == lazy or f"{node.module}.{a.name}" == lazy for a in node.names
                        for lazy in LAZY.get(name, {})):
                    continue
                wrong += [f"{name}:{node.lineno}: {m}" for m in mods if m.split(".")[0] not in HEAVY]
    assert not wrong, wrong


def test_only_views_and_the_cli_speak_click_or_rich():
    wrong = []
    for name, tree in _modules().items():
        if name.startswith(("irscope.views", "irscope.cli")):
            continue
        for node in ast.walk(tree):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            wrong += [f"{name}:{node.lineno}: {m}" for m in mods if m.split(".")[0] in ("click", "rich")]
    assert not wrong, wrong


def test_no_module_over_the_size_of_one_concept():
    big = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, big
