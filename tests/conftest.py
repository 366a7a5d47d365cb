"""Fixtures only (what tests share otherwise is in tests/helpers.py): an isolated irscope cache, the
CLI runner, and the one skip rule for GPU tests (the `gpu` marker: skipped without a GPU)."""

from __future__ import annotations

import os

import pytest

from tests.helpers import run_cli


@pytest.fixture(autouse=True, scope="session")
def _session_cache(tmp_path_factory):
    """Tests never read or write the user's ~/.cache/irscope."""
    old = os.environ.get("IRSCOPE_CACHE_DIR")
    os.environ["IRSCOPE_CACHE_DIR"] = str(tmp_path_factory.mktemp("irscope-cache"))
    yield
    if old is None:
        os.environ.pop("IRSCOPE_CACHE_DIR", None)
    else:
        os.environ["IRSCOPE_CACHE_DIR"] = old


@pytest.fixture
def cli():
    return run_cli
