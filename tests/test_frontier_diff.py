"""The frontier comparison (issue #27 item 5): torch.compile's RMSNorm against liger-kernel's, each
captured on the stand-in GPU, compared by `irscope frontier CAPTURE_A CAPTURE_B` (the old `irscope diff CAPTURE_A CAPTURE_B` still works)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LAYERS = Path(__file__).parent / "data" / "layers"
ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(
        importlib.util.find_spec("liger_kernel") is None,
        reason="liger-kernel is not installed (pip install --no-deps 'liger-kernel>=0.6')",
    ),
]


def _irscope(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "irscope", *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    out = {}
    for side, script in (("a", "rmsnorm_inductor.py"), ("b", "rmsnorm_liger.py")):
        folder = tmp_path_factory.mktemp("frontier") / side
        p = _irscope("capture", str(LAYERS / script), "--target", "h100", "-o", str(folder), "--json")
        assert p.returncode == 0, p.stderr[-3000:]
        assert f"{script[:-3]}: checks passed" in p.stderr  # computed results, eager agrees
        out[side] = (folder, json.loads(p.stdout))
    return out


@pytest.fixture(scope="module")
def frontier(captures):
    p = _irscope("frontier", str(captures["a"][0]), str(captures["b"][0]), "--json")
    assert p.returncode == 0, p.stderr[-3000:]  # two implementations: neither equal nor different
    return json.loads(p.stdout)


def _manifest(folder: Path, kernel: dict) -> dict:
    return json.loads((folder / kernel["dump"] / "manifest.json").read_text())


def test_sides_name_what_made_each_kernel(frontier):
    assert frontier["irscope_frontier"] == 1
    a, b = frontier["a"]["kernels"], frontier["b"]["kernels"]
    assert Path(frontier["a"]["scripts"][0]).name == "rmsnorm_inductor.py"
    norm = [
        k
        for k in a
        if k["made_by"]["layer"] == "inductor"
        and k["direction"] == "forward"
        and {"aten.mean", "aten.rsqrt", "aten.pow"} & set(k["made_by"]["aten_ops"])
    ]
    assert norm and norm[0]["made_by"]["category"] in ("persistent_reduction", "reduction")
    assert any(k["direction"] == "backward" for k in a)
    by_name = {k["name"]: k for k in b}
    assert by_name["_rms_norm_forward_kernel"]["direction"] == "forward"
    assert by_name["_rms_norm_forward_kernel"]["made_by"] == {"layer": "hand-written"}
    assert by_name["_rms_norm_backward_kernel"]["direction"] == "backward"
    assert frontier["directions"] == ["forward", "backward"] and frontier["paired"]


def test_figures_are_the_dumps(captures, frontier):
    for side in ("a", "b"):
        folder, doc = captures[side]
        launched = {Path(k["capture"]["spec"]).name: k["capture"]["launches"] for k in doc["kernels"]}
        for k in frontier[side]["kernels"]:
            assert k["problem"] is None, k
            m = _manifest(folder, k)
            assert m["kernel"] == k["name"]
            stats = m["stats"]
            assert k["registers"] == stats["registers"] and k["spills"] == stats["spills"]
            assert k["shared_bytes"] == stats["shared_bytes"]
            assert k["occupancy"] == stats["occupancy"]["occupancy"]
            assert k["launches"] == launched[Path(k["spec"]).name] >= 1
            threads = m["options"]["num_warps"] * 32
            assert k["threads"] == threads
            for kind, field in (("global_load", "load_bytes"), ("global_store", "store_bytes")):
                expect = sum(int(bits) * n for bits, n in stats["ptx"][kind].items()) * threads // 8
                assert k[field] == expect > 0


def test_totals_add_up(frontier):
    for side in ("a", "b"):
        s = frontier[side]
        for scope, kernels in [("total", s["kernels"])] + [
            (d, [k for k in s["kernels"] if k["direction"] == d]) for d in s["by_direction"]
        ]:
            t = s["total"] if scope == "total" else s["by_direction"][scope]
            assert t["kernels"] == len(kernels)
            assert t["launches"] == sum(k["launches"] for k in kernels)
            assert t["load_bytes"] == sum(k["load_bytes"] for k in kernels)
            assert t["store_bytes"] == sum(k["store_bytes"] for k in kernels)
            assert t["spills"] == sum(k["spills"] for k in kernels)
            assert t["registers_max"] == max(k["registers"] for k in kernels)
            assert t["occupancy_min"] == min(k["occupancy"] for k in kernels)


def test_table_and_refusals(captures):
    a, b = str(captures["a"][0]), str(captures["b"][0])
    p = _irscope("frontier", a, b)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "frontier" in p.stdout and "_rms_norm_forward_kernel" in p.stdout and "not DRAM traffic" in p.stdout
    old = _irscope("diff", a, b)
    assert old.returncode == 0 and old.stdout == p.stdout
    assert "'irscope diff CAPTURE_A CAPTURE_B' is now 'irscope frontier CAPTURE_A CAPTURE_B'" in old.stderr
    p = _irscope("diff", a, b, "--stage", "ptx")
    assert p.returncode == 2 and "compared as they are" in p.stderr
    p = _irscope("frontier", a, b, "--stage", "ptx")
    assert p.returncode == 2 and "No such option '--stage'" in p.stderr


def test_a_capture_folder_is_data(captures, tmp_path):
    """A spec file that is a link to a file outside the folder is refused, never read."""
    import shutil

    hostile = tmp_path / "hostile"
    shutil.copytree(captures["b"][0], hostile, symlinks=True)
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"irscope_spec": 1, "kernel": "x"}))
    (hostile / "captures" / "zz-1.json").symlink_to(outside)
    p = _irscope("frontier", str(captures["a"][0]), str(hostile))
    assert p.returncode == 2 and "outside the folder" in p.stderr


def test_an_autotuners_timed_launches_and_unchosen_candidates_stay_out_of_the_run(captures, tmp_path):
    """On a GPU, Inductor benchmarks each config of a reduction ~100 times before the model's one launch
    (seen on the H200 at 8192x4096: 106 and 107 launches recorded). The per-run figures count the launches
    the model makes, with the chosen config only; the timed ones are shown beside, not added."""
    import shutil

    from irscope.compare.frontier import load_side

    folder = tmp_path / "a"
    shutil.copytree(captures["a"][0], folder)
    plain = load_side("a", captures["a"][0])
    spec = next(p for p in sorted((folder / "captures").glob("*.json")) if "rsqrt" in p.name)
    doc = json.loads(spec.read_text())
    won = dict(
        doc,
        launch=dict(
            doc["launch"], launches=107, timed_launches=106, autotune={"config": "R0_BLOCK=512", "winner": True}
        ),
    )
    lost = dict(
        doc,
        launch=dict(
            doc["launch"], launches=106, timed_launches=106, autotune={"config": "R0_BLOCK=256", "winner": False}
        ),
    )
    spec.write_text(json.dumps(won))
    spec.with_name(spec.stem + "-lost.json").write_text(json.dumps(lost))
    side = load_side("a", folder)
    fwd = [k for k in side.kernels if k.direction == "forward"]
    assert sorted((k.chosen, k.launches, k.timed_launches) for k in fwd) == [(False, 0, 106), (True, 1, 106)]
    assert side.by_direction["forward"].kernels == plain.by_direction["forward"].kernels
    assert side.by_direction["forward"].launches == plain.by_direction["forward"].launches
    assert side.total.launches == plain.total.launches
    p = _irscope("frontier", str(folder), str(captures["b"][0]))
    assert p.returncode == 0, p.stderr
    assert "R0_BLOCK=512, chosen" in p.stdout and "R0_BLOCK=256, not chosen" in p.stdout
    assert "1 (+106 timed)" in p.stdout
