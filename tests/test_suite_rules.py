"""The suite's own rules: a test that needs torch is marked `torch` (the README's set-up has no torch, and CI's
torch lane selects them with -m torch), and conftest skips exactly those, with one reason, where torch is
missing."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

from tests import conftest

TESTS = Path(__file__).resolve().parent


def _marks(decorators: list[ast.expr]) -> set[str]:
    """The pytest.mark.NAME names among decorators or a pytestmark value (a name bound to one counts as
    its name: needs_torch, needs_helion are how modules spell it)."""
    names = set()
    for d in decorators:
        for node in ast.walk(d):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "mark":
                names.add(node.attr)
            elif isinstance(node, ast.Name) and node.id.startswith("needs_"):
                names.add(node.id)
    return names


def _needs_torch(body: list[ast.stmt]) -> bool:
    """Imports torch, or asks pytest.importorskip("torch")."""
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            return True
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "importorskip"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).split(".")[0] == "torch"
        ):
            return True
    return False


def _torch_marked_names(tree: ast.Module) -> set[str]:
    """Module-level names bound to a marker that includes torch (needs_torch = pytest.mark.torch, a
    decorator function that applies it)."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and "torch" in _marks([node.value]):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.FunctionDef) and "torch" in _marks(
            [n for n in ast.walk(node) if isinstance(n, ast.Attribute)]
        ):
            names.add(node.name)
    return names


def _unmarked_torch_tests(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    module_marks: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            module_marks |= _marks([node.value])
    if {"torch", "gpu"} & module_marks:
        return []
    torch_names = _torch_marked_names(tree)
    top = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    bad = []
    if _needs_torch([n for n in top if not isinstance(n, ast.Assign) or "pytestmark" not in ast.dump(n)]):
        bad.append(f"{path.name}: imports torch at its top without pytestmark = pytest.mark.torch")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test") and _needs_torch(node.body):
            marks = _marks(node.decorator_list)
            if not ({"torch", "gpu"} & marks or torch_names & marks):
                bad.append(f"{path.name}::{node.name}")
    return bad


def test_every_test_that_imports_torch_is_marked_torch():
    bad = [b for path in sorted(TESTS.glob("test_*.py")) for b in _unmarked_torch_tests(path)]
    assert not bad, "needs torch but is not marked torch (the README's set-up would fail it): " + ", ".join(bad)


def test_the_check_sees_an_unmarked_torch_test(tmp_path):
    """The rule above can fail: an unmarked test that imports torch, and a module importing it at its top."""
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n\ndef test_a():\n    import torch\n\n\n"
        "@pytest.mark.torch\ndef test_b():\n    pytest.importorskip('torch')\n"
    )
    assert _unmarked_torch_tests(tmp_path / "test_x.py") == ["test_x.py::test_a"]
    (tmp_path / "test_y.py").write_text("import pytest\ntorch = pytest.importorskip('torch')\n")
    assert _unmarked_torch_tests(tmp_path / "test_y.py") == [
        "test_y.py: imports torch at its top without pytestmark = pytest.mark.torch"
    ]


class _Item:
    def __init__(self, *marks: str):
        self.marks = {m: getattr(pytest.mark, m) for m in marks}
        self.added: list = []

    def get_closest_marker(self, name):
        return self.marks.get(name)

    def add_marker(self, marker, append=True):
        self.added.append(marker)


@pytest.mark.parametrize("torch_found", [True, False])
def test_conftest_skips_torch_tests_only_where_torch_is_missing(monkeypatch, torch_found):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: (real("json") if torch_found else None) if name == "torch" else real(name, *a),
    )
    monkeypatch.setattr(conftest, "_no_cuda_gpu", lambda: "")
    torch_test, plain, gpu_test = _Item("torch"), _Item(), _Item("torch", "gpu")
    conftest.pytest_collection_modifyitems(None, [torch_test, plain, gpu_test])
    assert plain.added == [] and gpu_test.added == []  # a gpu test has the gpu rule's own reason
    if torch_found:
        assert torch_test.added == []
    else:
        (mark,) = torch_test.added
        assert mark.name == "skipif" and mark.args == (True,) and mark.kwargs["reason"].startswith("needs torch:")


@pytest.mark.parametrize(
    "dist, args, expected",
    [
        ("load", ("-n", "auto"), "loadfile"),  # -n alone: one worker per test file
        ("load", ("-n", "2", "--dist", "load"), "load"),  # asked for: kept
        ("load", ("-n", "2", "--dist=worksteal"), "load"),
        ("no", (), "no"),  # no xdist run: nothing set
    ],
)
def test_xdist_gives_a_test_file_to_one_worker_unless_told_otherwise(dist, args, expected):
    class Config:
        option = type("Option", (), {"dist": dist})()
        invocation_params = type("Params", (), {"args": args})()

    config = Config()
    conftest.pytest_configure(config)
    assert config.option.dist == expected


def test_no_kernel_or_script_file_is_named_as_a_standard_library_module():
    """The loader puts a kernel file's folder first on sys.path (its own meta-path finder keeps the standard
    library first in this process), and a child started with multiprocessing's spawn inherits that sys.path
    without the finder: examples/pitfalls/copy.py shadowed `copy` in test_sweep_history's writers."""
    root = Path(__file__).resolve().parent.parent
    files = [*(root / "examples").rglob("*.py"), *(root / "tests" / "data").rglob("*.py")]
    shadowing = sorted(str(p.relative_to(root)) for p in files if p.stem in sys.stdlib_module_names)
    assert not shadowing, shadowing
