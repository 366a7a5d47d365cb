"""A timed sweep on a real GPU (moved from tests/test_sweep.py): it states the winner against a --ref torch call.
The CPU side of sweeps (grids, workers, the cache, ranking) stays in tests/test_sweep*.py."""

from __future__ import annotations

import pytest

from tests.helpers import VECTOR_ADD, run_cli

pytestmark = pytest.mark.gpu


def test_timed_sweep_states_the_winner_against_a_reference(tmp_path):
    r = run_cli(
        "sweep",
        str(VECTOR_ADD),
        "--signature",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "--axis",
        "num_warps=2,4,8",
        "--time",
        "--args",
        "x_ptr=randn(1048576, fp32), y_ptr=randn(1048576, fp32), out_ptr=empty(1048576, fp32), n_elements=1048576",
        "--grid",
        "cdiv(n_elements, BLOCK_SIZE)",
        "--ref",
        "torch.add(x_ptr, y_ptr)",
        "--max-seconds",
        "4",
        "--no-db",
        "-o",
        str(tmp_path / "o"),
    )
    assert r.code == 0, r.err
    assert "winner" in r.out and "the time of torch.add(x_ptr, y_ptr)" in r.out, r.out[-1500:]
