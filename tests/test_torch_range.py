"""The torch range the stand-in supports is declared once (standin/versions.py) and in the package's
metadata (the `torch` extra), and a capture outside it says so."""

from __future__ import annotations

import sys
from pathlib import Path

from irscope.standin import versions

ROOT = Path(__file__).resolve().parent.parent


def test_the_torch_extra_declares_the_tested_range():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - CI runs 3.11
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["torch"] == [versions.REQUIREMENT] == ["torch>=2.11,<2.15"]
    assert not any(r.startswith("torch") for r in extras["test"] + extras["capture"])  # never pulled unasked


def test_a_release_outside_the_range_is_said_and_one_inside_is_not():
    assert versions.note("2.11.0") is None and versions.note("2.14.1+cu130") is None
    assert versions.note("2.13.0+cpu") is None
    newer = versions.note("2.15.0")
    assert newer is not None and "newer" in newer and "2.11 to 2.14" in newer
    older = versions.note("2.10.0+cu126")
    assert older is not None and "older" in older
    assert versions.note("not a version") is None


def test_the_loaded_torch_is_read_only_when_imported(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__="2.9.1+cu128"))
    assert versions.loaded_note() == [versions.note("2.9.1+cu128")] and "older" in versions.loaded_note()[0]
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__="2.13.0+cpu"))
    assert versions.loaded_note() == []
    monkeypatch.delitem(sys.modules, "torch")
    assert versions.loaded_note() == []
