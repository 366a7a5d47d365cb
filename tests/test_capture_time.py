"""Where a capture's time goes (#42 item 5): --json's capture.timing names every phase and its parts add up;
the dumps' part counts compiles, cache hits and reused compiles and sums the stages; a long capture says so
in one line. A dump takes the script's own compile of an Inductor kernel (the same Triton hash) instead of
compiling it again, and it is the same dump a fresh compile of its spec file makes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from irscope.capture.records import ScriptRun
from irscope.kernel.targets import parse_target
from irscope.views.capture import LONG_S, long_line
from tests.helpers import FBTRITON, ROOT

LAYERS = ROOT / "tests" / "data" / "layers"

SCRIPT = """\
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256}, num_warps=8)], key=["n"])
@triton.jit
def twice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


x = torch.randn(1000, device="cuda")
y = torch.empty_like(x)
twice[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, y, 1000)
assert torch.allclose(y, x * 2)
"""


def _capture(script: Path, out: Path, env: dict[str, str], *flags: str) -> tuple[dict, str]:
    p = subprocess.run(
        [sys.executable, "-m", "irscope", "capture", str(script), "--compile-only", "--target", "cuda:90"]
        + ["-o", str(out), "--json", *flags],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **env),
        cwd=out.parent,
        timeout=900,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout), p.stderr


def _close(a: float, b: float, n: int = 1) -> bool:
    """Equal but for the rounding of n figures to 0.01 s each."""
    return abs(a - b) <= 0.011 * n


@pytest.fixture(scope="module")
def twice(tmp_path_factory):
    """The script captured with an empty irscope cache, then again on the filled one."""
    tmp = tmp_path_factory.mktemp("ctime")
    script = tmp / "twice.py"
    script.write_text(SCRIPT)
    env = {"IRSCOPE_CACHE_DIR": str(tmp / "cache")}
    cold = _capture(script, tmp / "cold", env, "--jobs", "2")[0]
    warm = _capture(script, tmp / "warm", env, "--jobs", "1")[0]
    return cold, warm


@pytest.mark.torch
def test_the_phases_add_up_to_the_wall_time(twice):
    for doc in twice:
        t = doc["capture"]["timing"]
        assert _close(t["wall_s"], t["script_s"] + t["specs_s"] + t["dumps_s"] + t["other_s"], 4)
        parts = t["script_parts"]
        assert set(parts) == {"interpreter_s", "launch_checks_s", "inductor_compiles_s", "rest_s"}
        assert _close(sum(parts.values()), t["script_s"], 5)
        assert parts["launch_checks_s"] > 0  # compile-only: each kernel's launch compiled to TTGIR in the script
        assert parts["inductor_compiles_s"] == 0  # no torch.compile here


@pytest.mark.torch
def test_the_dumps_part_counts_and_sums_the_compiles(twice):
    cold, warm = (doc["capture"] for doc in twice)
    d = cold["timing"]["dumps"]
    assert (d["compiled"], d["from_cache"], d["failed"], d["skipped"], d["reused"]) == (2, 0, 0, 0, 0)
    # every stage of a CUDA compile, then nvdisasm's SASS and the source map, summed over the two dumps
    assert list(d["stages_s"]) == ["frontend", "ttir", "ttgir", "llir", "ptx", "cubin", "sass", "map"]
    assert all(v >= 0 for v in d["stages_s"].values())
    assert d["compile_s"] + 0.1 >= sum(d["stages_s"].values())  # the stages are inside the compile's own clock
    # Triton's JIT runs the stages up to the cubin in a GPU run too; SASS and the map are irscope's alone
    jit = sum(v for k, v in d["stages_s"].items() if k not in ("sass", "map"))
    assert d["jit_s"] > 0 and _close(d["jit_s"], jit, 6)
    assert d["irscope_only_s"] >= d["stages_s"]["sass"] + d["stages_s"]["map"] - 0.02
    # two workers: the parent waited on them; what they spent on dumps is what each dump took
    assert d["workers"] == 2 and d["waiting_on_workers_s"] > 0 and d["in_process_s"] == 0
    assert _close(d["worker_busy_s"], sum(c["dump_s"] for c in cold["captures"]), 3)
    assert {c["served"] for c in cold["captures"]} == {"compiled"}
    # the warm run: both dumps from irscope's cache, in-process (--jobs 1), nothing compiled
    w = warm["timing"]["dumps"]
    assert (w["compiled"], w["from_cache"], w["stages_s"], w["compile_s"], w["workers"]) == (0, 2, {}, 0, 0)
    assert w["in_process_s"] > 0 and {c["served"] for c in warm["captures"]} == {"cache"}


@pytest.mark.torch
def test_the_slowest_dumps_are_named_slowest_first(twice):
    cap = twice[0]["capture"]
    top = cap["timing"]["top_kernels"]
    assert len(top) == 2 and top[0]["dump_s"] >= top[1]["dump_s"]
    labels = {f"{c['kernel']} [{c['config']}]": c for c in cap["captures"]}
    for k in top:
        assert k["kernel"] in labels and k["folder"] == labels[k["kernel"]]["folder"]
        assert k["served"] == "compiled" and 0 < k["sass_s"] <= k["compile_s"]


def _run_with(timing: dict) -> ScriptRun:
    target = parse_target("cuda:90")
    run = ScriptRun(Path("x.py"), [], target, "--target", "compile-only", [], 3)
    run.timing = timing
    return run


def test_a_long_capture_says_where_its_time_went_in_one_line():
    timing = {
        "wall_s": LONG_S + 60,
        "script_s": 50.0,
        "script_parts": {"interpreter_s": 1.0, "launch_checks_s": 0.0, "inductor_compiles_s": 45.0, "rest_s": 4.0},
        "specs_s": 1.0,
        "dumps_s": 38.0,
        "dumps": {"compiled": 40, "from_cache": 2, "reused": 40, "stages_s": {"sass": 60.0, "map": 3.0}},
        "top_kernels": [{"kernel": "triton_mm [BLOCK_M=64]", "dump_s": 2.5}],
    }
    line = long_line(_run_with(timing))
    assert line is not None and "\n" not in line
    assert f"took {LONG_S + 60:.0f} s" in line and "Inductor's compiles 45 s" in line
    assert "40 compiled (40 reusing the script's compile), 2 from cache" in line
    assert "nvdisasm (sass) 60 s" in line and "triton_mm [BLOCK_M=64] 2.5 s" in line
    assert "--no-sass skips nvdisasm (60 s of the dumps' work)" in line  # the lever, where SASS is a fifth or more
    less = {**timing["dumps"], "stages_s": {"llir": 60.0, "cubin": 40.0, "sass": 10.0}}
    assert "--no-sass" not in (long_line(_run_with({**timing, "dumps": less})) or "")
    assert long_line(_run_with({**timing, "wall_s": LONG_S - 1})) is None  # a short capture: the time line only


@pytest.mark.torch
def test_a_dump_takes_the_scripts_own_inductor_compile_and_it_is_the_same_dump(tmp_path):
    """Inductor compiles each kernel in the script (compile-only: on the stand-in GPU); its dump takes that
    compile (same compile identity) and is, stage for stage, the dump irscope compiles itself: the second
    capture below finds Triton's cache filled (Inductor's compiles are cache hits, no stage runs), so its
    dumps are compiled afresh."""
    triton_caches = {"TRITON_CACHE_DIR": str(tmp_path / "triton"), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "ind")}
    first, err = _capture(LAYERS / "inductor_mlp.py", tmp_path / "a", {**triton_caches, "IRSCOPE_CACHE_DIR": "c1"})
    assert "inductor_mlp: checks passed" in err
    second, _ = _capture(LAYERS / "inductor_mlp.py", tmp_path / "b", {**triton_caches, "IRSCOPE_CACHE_DIR": "c2"})
    t = first["capture"]["timing"]
    assert t["script_parts"]["inductor_compiles_s"] > 0
    if FBTRITON and not t["dumps"]["reused"]:
        # fbtriton 3.7.4's CompiledKernel.metadata keeps extern_libs as names alone (['libdevice'], upstream keeps
        # (name, path) pairs), so the compile's options cannot be parsed again and adapter.compile_identity gives
        # None: no Prebuilt, every dump compiles again, as before the reuse: exact, not faster
        assert t["dumps"]["compiled"] == len(first["capture"]["captures"])
        pytest.skip("fbtriton: Inductor's compile is not reused (its dumps compile again); see the comment above")
    reused = {Path(c["folder"]).name: c for c in first["capture"]["captures"] if c["served"] == "reused"}
    assert reused and t["dumps"]["reused"] == len(reused) == t["dumps"]["compiled"]
    assert set(t["dumps"]["stages_s"]) == {"sass", "map"}  # the stages ran in the script, not in the dumps
    assert t["dumps"]["jit_s"] == 0  # ... where Inductor's compiles are counted (script_parts)
    fresh = {Path(c["folder"]).name: c for c in second["capture"]["captures"] if c["folder"]}
    assert {c["served"] for c in fresh.values()} == {"compiled"} and set(fresh) == set(reused)
    for name, c in reused.items():
        mine, theirs = Path(c["folder"]), Path(fresh[name]["folder"])
        for stage in ("ttir", "ttgir", "llir", "ptx", "cubin", "sass"):
            a, b = next(mine.glob(f"*.{stage}")), next(theirs.glob(f"*.{stage}"))
            assert a.read_bytes() == b.read_bytes(), f"{c['kernel']}: {stage} differs from irscope's own compile"
        report = lambda f: [x for x in (f / "ptxas.log").read_text().splitlines() if "time =" not in x]
        assert report(mine) == report(theirs)  # registers, spills, stack: all but ptxas' own compile time
        ours, again = (json.loads((f / "manifest.json").read_text()) for f in (mine, theirs))
        assert ours["stats"] == again["stats"]
        # Triton's hash is of the route: the launch's (Inductor's ASTSource) vs irscope's bind, printed otherwise
        drop = lambda m: {k: v for k, v in m["metadata"].items() if k != "hash"}
        assert drop(ours) == drop(again)
        assert set(ours["times_ms"]) == set(again["times_ms"])


def test_a_slow_dump_that_was_skipped_or_failed_is_named_so():
    """A config the autotuner would drop (OutOfResources) is "skipped" among the slowest, not "failed"."""
    from irscope.capture.records import Capture
    from irscope.capture.replay import top_kernels

    run = _run_with({})

    def cap(i: int, dump_s: float, **kw) -> Capture:
        return Capture(i, "k", None, str(i), {}, {}, {}, {}, config=f"BLOCK={i}", dump_s=dump_s, **kw)

    run.captures = [
        cap(0, 1.0, skipped="would not launch: out of resource: shared memory"),
        cap(1, 2.0, failure="compile failed in stage 'ttgir'"),
    ]
    assert [(k["kernel"], k["served"]) for k in top_kernels(run)] == [
        ("k [BLOCK=1]", "failed"),
        ("k [BLOCK=0]", "skipped"),
    ]


@pytest.mark.torch
def test_no_sass_leaves_out_nvdisasm_only_and_the_spec_file_makes_it(tmp_path):
    """--no-sass: every stage up to the cubin, the resources and the PTX mix are dumped, no SASS is made and
    the timing has no nvdisasm; replaying the capture's spec file (irscope dump SPEC) makes that kernel's SASS."""
    script = tmp_path / "twice.py"  # its launches under __main__: replaying a spec file imports the file
    head, launches = SCRIPT.split("\n\n\nx = ")
    script.write_text(
        head + '\n\n\nif __name__ == "__main__":\n' + "".join(f"    {ln}\n" for ln in ("x = " + launches).splitlines())
    )
    doc, _ = _capture(script, tmp_path / "out", {"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")}, "--no-sass")
    caps = doc["capture"]["captures"]
    assert len(caps) == 2 and {c["served"] for c in caps} == {"compiled"}
    for cap in caps:
        folder = Path(cap["folder"])
        manifest = json.loads((folder / "manifest.json").read_text())
        assert "sass" not in manifest["stages"] and not list(folder.glob("*.sass"))
        assert manifest["stages"]["cubin"] and next(folder.glob("*.cubin")).read_bytes()[:4] == b"\x7fELF"
        assert "ld.global" in next(folder.glob("*.ptx")).read_text()
        assert manifest["stats"]["registers"] > 0  # ptxas' report: the resources do not need the SASS
    d = doc["capture"]["timing"]["dumps"]
    assert "sass" not in d["stages_s"] and d["jit_s"] > 0
    # the SASS of one kernel, from its spec file
    spec = caps[0]["spec"]
    r = subprocess.run(
        [sys.executable, "-m", "irscope", "dump", spec, "-o", str(tmp_path / "one"), "--stage", "sass"],
        capture_output=True,
        text=True,
        env=dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT)),
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "LDG.E" in r.stdout and "STG.E" in r.stdout  # the kernel's global load and store, in SASS


def test_no_sass_is_refused_where_it_cannot_mean_anything(tmp_path):
    """With --stage sass (the stage it leaves out), and on a kernel file's dump (a capture's flag): one line,
    exit 2, before anything runs."""
    from tests.helpers import EXAMPLES, run_cli

    script = tmp_path / "s.py"
    script.write_text("raise SystemExit('must not run')\n")
    r = run_cli("capture", str(script), "--no-sass", "--stage", "sass", "-o", str(tmp_path / "o"))
    assert r.code == 2 and "--stage sass with --no-sass" in r.err and "must not run" not in r.err + r.out
    r = run_cli(
        "dump",
        str(EXAMPLES / "vector_add.py"),
        "--kernel",
        "add_kernel",
        "--signature",
        "*fp32, *fp32, *fp32, i32, 1024",
        "--no-sass",
        "-o",
        str(tmp_path / "o2"),
    )
    assert r.code == 2 and "--no-sass: applies when FILE is a script run for capture" in r.err, r.err
