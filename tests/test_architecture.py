"""The architecture's rules (docs/architecture.md says why each holds).

The import contracts are import-linter's, in pyproject.toml's [tool.importlinter] (imports inside
functions count there too); `lint-imports` checks them, and so does the first test here:
- the layers point one way: errors, knobs, stages, version, records <- adapter <- kernel <- artifacts <-
  compile <- standin <- steer <- jobs <- capture, compare, timing, workers <- sweep, releases, profile <-
  report <- views <- direct <- api <- cli, entry, __main__ (and nothing below the API imports the root
  package, which loads the API);
- no import cycle: sibling modules and packages form no circle, at every depth;
- only views and cli speak click or rich.

What import-linter cannot tell, an import inside a function from one at module level, is checked here:
- imports inside functions only for heavy or optional third-party packages, at the command boundary
  (irscope/cli), or for the optional machinery LAZY names (kept off the plain dump's start-up).

Function size is ruff's (C901 complexity, PLR0913 arguments, PLR0915 statements; pyproject.toml), in
place of a cap on a module's lines.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "irscope"
HEAVY = (
    "triton",
    "torch",
    "rich",
    "click",
    "numpy",
    "ctypes",
    "ray",
    "optuna",
    "pynvml",
    "amdsmi",
    "jinja2",
    "tqdm",
    "playwright",
)
# Optional machinery kept off the plain dump's start-up (a cached re-dump pays only for what it uses):
# the module that imports it inside a function -> what it imports there, and why.
LAZY = {
    "irscope": {"irscope.api": "the Python API, on first use of irscope.dump & co. (`import irscope` stays cheap)"},
    "irscope.direct.recorder": {
        "irscope.kernel.loader": "what the kernel file's import opened, only once a full run is to be recorded",
        "irscope.adapter": "the env Triton's key reads, only once a full run is to be recorded "
        "(a direct hit reads its record without it)",
        "irscope.jobs": "a spec file read, only once a full run is to be recorded",
        "irscope.steer.recipes": "where a recipe was found, only once a full run with --recipe is to be recorded",
        "irscope.views.dump": "the dump's summary, only once a full dump is to be recorded",
        "irscope.views.console": "the console the summary renders into, only once a full dump is to be recorded",
    },
    "irscope.direct.serve": {
        "irscope.views.dump": "the dump's views, only to render what the direct mode served",
        "irscope.views.console": "the console a served dump's summary renders into",
    },
    "irscope.views.dump": {"irscope.views.lexers": "Pygments and the stages' lexers, only to print a stage in colour"},
    "irscope.entry": {
        "irscope.cli": "click and every command, only when the cache's direct mode cannot serve, "
        "or to render a served passes or lines on a terminal",
        "irscope.compile.status": "the supervisor, only when the direct mode cannot serve (a cached repeat never forks)",
        "irscope.capture.salvage": "a captured script's captures, only once the script ended the process",
        "irscope.capture.command": "a capture's exit status, only once the script ended the process",
        "irscope.views.capture": "the capture's views, only once the script ended the process",
        "irscope.views.safe": "control characters escaped, only for the line said about a death by a signal",
    },
    "irscope.jobs": {
        "irscope.steer.recipes": "reading recipe files (TOML), only when --recipe names one",
        "irscope.steer.pins": "the pin grammar and its MLIR helpers, only when pins are given",
        "irscope.standin.gpu": "the stand-in GPU, only to load a captured script for a replay",
    },
    "irscope.steer.layering": {"irscope.steer.pins": "the pin model (ConstPin), only when a recipe is applied"},
    "irscope.steer.pinset": {
        "irscope.steer.checks": "checks of the output, only once a compile ran",
        "irscope.steer.layouts": "the TTGIR rewrite, only once a compile runs",
        "irscope.steer.loops": "the TTIR rewrite, only once a compile runs",
        "irscope.steer.partitions": "the partition-register rewrite, only once a compile runs",
    },
}


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = ast.parse(path.read_text(), str(path))
    return out


@pytest.mark.skipif(
    importlib.util.find_spec("importlinter") is None, reason="import-linter is not installed (pip install -e '.[test]')"
)
def test_the_import_contracts_hold():
    """lint-imports over pyproject.toml's contracts: every one kept."""
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command as c; c()",
            "--no-cache",
            "--no-logo",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and "0 broken." in run.stdout, run.stdout + run.stderr


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
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.module
                    and any(
                        node.module == lazy or f"{node.module}.{a.name}" == lazy
                        for a in node.names
                        for lazy in LAZY.get(name, {})
                    )
                ):
                    continue
                wrong += [f"{name}:{node.lineno}: {m}" for m in mods if m.split(".")[0] not in HEAVY]
    assert not wrong, wrong
