"""Capture: `irscope capture SCRIPT` runs an unmodified script and dumps every kernel it compiles.

The CPU tests capture compile-only (--compile-only, so they mean the same on a GPU machine):
the script runs on irscope's stand-in GPU (CPU tensors; launches recorded, and computed by
Triton's interpreter). That a real run captures the same kernels, down to the PTX, is checked on a GPU in
tests/gpu/test_capture_gpu.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irscope import adapter
from irscope.capture import replay, runner
from irscope.kernel.targets import parse_target
from irscope.standin import gpu as standin
from tests.helpers import DATA, VECTOR_ADD, run_cli, run_in

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

SCRIPT = DATA / "capture_tutorial.py"
RAISES = DATA / "capture_raises.py"
STAGES = {
    "cuda:90": ["source", "frontend", "ttir", "ttgir", "llir", "ptx", "cubin", "sass"],
    "hip:gfx942": ["source", "frontend", "ttir", "ttgir", "llir", "amdgcn", "hsaco"],
}


def _irscope_lines(err: str) -> list[str]:
    """stderr without Python warnings (torch may warn about numpy) and their source lines."""
    return [
        line
        for line in err.splitlines()
        if line.strip() and "Warning" not in line and "warn_once" not in line and not line.startswith(" ")
    ]


@pytest.fixture(scope="module", params=["cuda:90", "hip:gfx942"])
def captured(request, tmp_path_factory):
    """One compile-only capture of the tutorial-style script per target (shared by the tests below)."""
    out = tmp_path_factory.mktemp("capture") / "out"
    r = run_in(
        None,
        "capture",
        str(SCRIPT),
        "--target",
        request.param,
        "--compile-only",
        "-o",
        str(out),
        "--json",
        "--",
        "--n",
        "4096",
    )
    assert r.code == 0, r.err
    return request.param, r, json.loads(r.out), out


def _by_kernel(doc: dict, name: str) -> list[dict]:
    return [k for k in doc["kernels"] if k["name"] == name]


def test_script_runs_to_its_end_because_the_stand_in_computes_results(captured):
    """Its assert_close checks pass: the interpreter computed the launches they read."""
    target, r, doc, _ = captured
    assert not [line for line in _irscope_lines(r.err) if line.startswith("irscope:")]  # no stop, no note
    assert "capture_tutorial: n=4096 on cuda:0" in r.err  # -- ARGS reached the script; its output kept off stdout
    assert "capture_tutorial: ok" in r.err  # the script's own last line: both checks passed
    assert doc["capture"]["stopped"] is None
    assert doc["capture"]["mode"] == "compile-only" and doc["capture"]["target"] == target
    assert doc["capture"]["args"] == ["--n", "4096"]
    # axpy's two autotune trials are recorded but not computed (do_bench throws their results away);
    # its final launch and scale's are computed
    assert doc["capture"]["launches"] == 4 and doc["capture"]["computed"]["computed"] == 2


def test_every_capture_has_all_its_stages(captured):
    target, _, doc, _ = captured
    assert [c["kernel"] for c in doc["capture"]["captures"]] == [
        "scale_kernel",
        "axpy_kernel",
        "axpy_kernel",
        "scale_kernel",
    ]
    assert len(doc["kernels"]) == 4
    for k in doc["kernels"]:
        assert list(k["stages"]) == STAGES[k["target"]] == STAGES[target]
        for path in k["stages"].values():
            assert Path(path).stat().st_size > 0


def test_autotune_configs_are_labelled_and_their_num_warps_reach_ttgir(captured):
    _, _, doc, _ = captured
    axpy = _by_kernel(doc, "axpy_kernel")
    labels = [k["capture"]["config"] for k in axpy]
    assert labels == [
        "BLOCK=256, num_warps=2, num_ctas=1, num_stages=3",
        "BLOCK=1024, num_warps=8, num_ctas=1, num_stages=3",
    ]
    for k, warps in zip(axpy, (2, 8)):
        assert k["options"]["num_warps"] == warps
        assert f'"ttg.num-warps" = {warps}' in Path(k["stages"]["ttgir"]).read_text()
        assert k["capture"]["winner"] is None  # no timings without a GPU: no winner claimed


def test_specialization_is_what_the_binder_decided(captured):
    target, _, doc, _ = captured
    first = _by_kernel(doc, "axpy_kernel")[0]
    # x is a view one element in: 4-byte aligned; n=4096 is divisible by 16; alpha is a float
    assert first["signature"] == "*fp32:4, *fp32:16, *fp32:16, fp32, i32:16, 256"
    spec = json.loads(Path(first["capture"]["spec"]).read_text())
    assert spec["args"] == {
        "x_ptr": "*fp32:4",
        "y_ptr": "*fp32:16",
        "out_ptr": "*fp32:16",
        "alpha": "fp32",
        "n": "i32:16",
        "BLOCK": "256",
    }
    # what the config set that differs from the backend's defaults (HIP's default num_stages is 2, Config's 3)
    assert spec["target"] == target
    assert spec["options"] == ({"num_warps": 2} if target == "cuda:90" else {"num_warps": 2, "num_stages": 3})
    launch = spec["launch"]
    assert launch["grid"] == [16, 1, 1]
    assert launch["args"]["x_ptr"] == {"dtype": "float32", "shape": [4096], "strides": [1], "offset": 1, "align": 4}
    assert launch["args"]["alpha"] == {"value": 2.0} and launch["args"]["n"] == {"value": 4096}
    assert launch["autotune"] == {"config": "BLOCK=256, num_warps=2, num_ctas=1, num_stages=3", "winner": None}
    warm = _by_kernel(doc, "scale_kernel")[0]["capture"]
    assert warm["warmup"] and warm["grid"] is None and warm["launches"] == 0
    # AMD's binder marks small tensors for buffer ops (tt.pointer_range=32); the stand-in pointers do too,
    # so the replayed spec binds exactly as the launch did on both vendors
    assert first["capture"]["notes"] == []


def test_spec_files_are_written_and_listed(captured):
    _, _, doc, out = captured
    specs = doc["capture"]["specs"]
    assert sorted(Path(p).name for p in specs) == [
        "axpy_kernel-1.json",
        "axpy_kernel-2.json",
        "scale_kernel-1.json",
        "scale_kernel-2.json",
    ]
    assert all(Path(p).parent == out / "captures" for p in specs)
    for k in doc["kernels"]:
        assert k["capture"]["spec"] in specs


def test_replay_of_a_capture_equals_it_and_takes_set(captured, tmp_path):
    target, _, doc, _ = captured
    if target != "cuda:90":
        pytest.skip("replay is checked once, on cuda:90")
    k = _by_kernel(doc, "axpy_kernel")[1]
    spec = k["capture"]["spec"]
    r = run_in(None, "dump", spec, "-o", str(tmp_path / "a"), "--json")
    assert r.code == 0, r.err
    again = json.loads(r.out)["kernels"][0]
    for stage in ("ttgir", "ptx"):
        assert Path(again["stages"][stage]).read_text() == Path(k["stages"][stage]).read_text()
    r = run_in(None, "dump", spec, "--set", "num_warps=4", "-o", str(tmp_path / "b"), "--json")
    assert r.code == 0, r.err
    changed = json.loads(r.out)["kernels"][0]
    assert changed["options"]["num_warps"] == 4
    assert '"ttg.num-warps" = 4' in Path(changed["stages"]["ttgir"]).read_text()
    r = run_in(None, "dump", spec, "--set", "num_warps=8", "-o", str(tmp_path / "c"), "--stage", "ttgir")
    assert r.code == 0 and '"ttg.num-warps" = 8' in r.out


def test_kernel_glob_and_script_log(tmp_path):
    log = tmp_path / "script.log"
    r = run_in(
        None,
        "capture",
        str(SCRIPT),
        "-t",
        "cuda:90",
        "--compile-only",
        "--kernel",
        "scale*",
        "--script-log",
        str(log),
        "-o",
        str(tmp_path / "out"),
    )
    assert r.code == 0, r.err
    assert "capture_tutorial: n=4096" not in r.out + r.err
    assert "capture_tutorial: n=4096 on cuda:0" in log.read_text()
    assert "2 kernels from" in r.out and "capture 2/2  scale_kernel" in r.out and "axpy_kernel" not in r.out
    assert sorted(p.name for p in (tmp_path / "out" / "captures").iterdir()) == [
        "scale_kernel-1.json",
        "scale_kernel-2.json",
    ]


def test_script_output_stays_visible(tmp_path):
    r = run_cli(
        "capture",
        str(SCRIPT),
        "-t",
        "cuda:90",
        "--compile-only",
        "--kernel",
        "axpy_kernel",
        "-o",
        str(tmp_path / "out"),
    )
    assert r.code == 0, r.err
    assert r.out.index("capture_tutorial: n=4096 on cuda:0") < r.out.index("capture 1/2  axpy_kernel")


@pytest.mark.parametrize(
    "args, message",
    [
        (["capture", "no_such_script.py"], "no_such_script.py: no such file"),
        (
            ["capture", str(RAISES)],
            (
                "capture_raises.py: the script raised capture_raises.py:13: RuntimeError: no input data "
                "before it launched a Triton kernel"
            ),
        ),
        (["capture", str(VECTOR_ADD)], "ran to the end without launching a Triton kernel"),
        (
            ["capture", str(SCRIPT), "--compile-only", "--kernel", "nothing*"],
            "no kernel the script launched matches --kernel nothing*",
        ),
        (["capture", str(SCRIPT), "--set", "num_wraps=8"], "did you mean 'num_warps'"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, args, message):
    out = tmp_path / "out"
    r = run_in(None, *args, "-o", str(out), cwd=tmp_path)
    assert r.code == 2, (r.out, r.err)
    lines = _irscope_lines(r.err)
    assert len(lines) == 1, r.err
    assert message in lines[0]
    assert "Traceback" not in r.err
    assert not out.exists()


# ---------------------------------------------------------------- in-process: the stand-in GPU


def test_cpu_allocations_are_aligned_as_gpu_ones():
    """The alignment Triton specializes on: every allocation 16-byte aligned, an offset view not."""
    for dtype in (torch.float16, torch.float32, torch.int8, torch.float64):
        for n in (1, 3, 17, 1000, 4097):
            t = torch.empty(n, dtype=dtype)
            assert t.data_ptr() % 16 == 0
            if n > 1:
                assert t[1:].data_ptr() % 16 == t.element_size() % 16


def test_stand_in_gpu_maps_cuda_to_cpu_and_is_put_back():
    import triton
    from triton import knobs

    run_before = adapter.jit_function_type().run
    available = torch.cuda.is_available

    class Twice(torch.autograd.Function):  # libraries allocate (and launch) in backward too
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            assert g.device.type == "cuda"
            return torch.full_like(g, 2.0) * torch.ones(g.shape, device=g.device)

    with standin.machine(parse_target("hip:gfx942")) as drv:
        assert triton.runtime.driver.active is drv
        assert triton.runtime.driver.active.get_current_target().arch == "gfx942"
        assert drv.get_active_torch_device() == torch.device("cuda", 0)
        x = torch.ones(4, device="cuda", requires_grad=True)
        assert x.untyped_storage().device.type == "cpu"  # lives on the CPU, says it is on the GPU
        assert x.device == torch.device("cuda", 0) and x.is_cuda and x.cuda() is x
        assert torch.zeros(2, device=x.device).untyped_storage().device.type == "cpu"
        assert torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 4)
        assert torch.cuda.get_device_properties(x.device).multi_processor_count == 304
        with torch.cuda.device(x.device):
            torch.cuda.synchronize()
        Twice.apply(x).sum().backward()
        assert x.grad.tolist() == [2.0] * 4
    assert torch.cuda.is_available is available and not torch.ones(1).is_cuda
    assert triton.runtime.driver._active is None or triton.runtime.driver._active is not drv
    run = runner.run_script(
        SCRIPT, ["--n", "512"], parse_target("cuda:90"), "requested", "compile-only", [], quiet=True
    )
    assert len(run.captures) == 4 and run.stopped is None and run.computed.computed == 2
    assert adapter.jit_function_type().run is run_before
    assert knobs.runtime.jit_cache_hook is None and knobs.runtime.jit_post_compile_hook is None


def test_real_run_path_marks_the_winner_and_matches_the_launched_kernel(tmp_path):
    """The gpu-mode path (Triton compiles, hooks record, the autotuner picks), run on the stand-in GPU."""
    run = runner.run_script(
        SCRIPT, ["--n", "2048"], parse_target("cuda:90"), "requested", "gpu", [], quiet=True, stand_in=True
    )
    replay.prepare(run, [])
    replay.write_specs(run, tmp_path)
    replay.dump_all(run, tmp_path, False, True)
    axpy = [c for c in run.captures if c.name == "axpy_kernel"]
    assert [c.winner for c in axpy] == [True, False]  # the placeholder timings tie: the first config wins
    assert all(c.kernel_hash for c in run.captures)
    for c in run.captures:
        assert c.matches_launch == {"ttgir": True, "ptx": True}, c.label


def test_a_script_that_changes_directory_does_not_move_the_output(tmp_path):
    r = run_in(
        None,
        "capture",
        str(DATA / "capture_chdir.py"),
        "--target",
        "h100",
        "--compile-only",
        "-o",
        "out",
        "--json",
        cwd=tmp_path,
    )
    assert r.code == 0, r.err
    spec = tmp_path / "out" / "captures" / "double_kernel-1.json"
    assert spec.exists()
    assert Path(json.loads(spec.read_text())["file"]).exists()
    # a second capture into the same folder keeps the first one's spec file
    r = run_in(
        None,
        "capture",
        str(DATA / "capture_chdir.py"),
        "--target",
        "mi300x",
        "--compile-only",
        "-o",
        "out",
        "--json",
        cwd=tmp_path,
    )
    assert r.code == 0, r.err
    assert json.loads(spec.read_text())["target"] == "cuda:90"
    assert json.loads((spec.parent / "double_kernel-2.json").read_text())["target"] == "hip:gfx942"


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--set", "num_warps=3"], "rejected by Triton's cuda backend"),
        (["--stage", "amdgcn"], "cuda:90 has no amdgcn stage"),
        (["--script-log", "/nonexistent-folder/x.log"], "/nonexistent-folder is not an existing folder"),
    ],
)
def test_bad_flags_are_refused_before_the_script_runs(tmp_path, flags, message):
    r = run_in(
        None,
        "capture",
        str(DATA / "capture_chdir.py"),
        "--target",
        "h100",
        "--compile-only",
        "-o",
        str(tmp_path / "out"),
        *flags,
    )
    assert r.code == 2, r.err
    lines = _irscope_lines(r.err)
    assert len(lines) == 1 and message in lines[0]
    assert not (tmp_path / "out").exists()


def test_tensors_made_under_set_default_device_cuda_are_the_stand_ins(tmp_path):
    """torch.set_default_device("cuda") / `with torch.device("cuda")`: tensors with no device= live on the CPU
    (before: they went to the real, absent CUDA and the script stopped before its first launch)."""
    r = run_in(
        None,
        "capture",
        str(DATA / "capture_default_device.py"),
        "-t",
        "cuda:90",
        "--compile-only",
        "-o",
        str(tmp_path / "out"),
        "--json",
    )
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["capture"]["stopped"] is None and "capture_default_device: ok" in r.err
    assert [(c["kernel"], c["launches"]) for c in doc["capture"]["captures"]] == [
        ("double_kernel", 1),
        ("negate_kernel", 1),
    ]
    assert [k["signature"] for k in doc["kernels"]] == ["*fp32:16, i32, 256", "*fp16:16, i32:16, 256"]


def test_default_device_the_script_sets_is_put_back():
    with standin.machine(parse_target("cuda:90")):
        torch.set_default_device("cuda")
        assert torch.empty(2).untyped_storage().device.type == "cpu" and torch.get_default_device().type == "cuda"
    assert torch.get_default_device() == torch.device("cpu") and not torch.empty(2).is_cuda


def test_launches_from_other_threads_are_captured(tmp_path):
    """threading.Thread and ThreadPoolExecutor workers run on the stand-in GPU too (before: their
    device="cuda" reached the real CUDA); concurrent launches of one kernel are one capture."""
    r = run_cli(
        "capture",
        str(DATA / "capture_threads.py"),
        "-t",
        "cuda:90",
        "--compile-only",
        "-o",
        str(tmp_path / "out"),
        "--json",
    )
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["capture"]["stopped"] is None and "capture_threads: ok" in r.err
    assert [(c["kernel"], c["launches"]) for c in doc["capture"]["captures"]] == [
        ("double_kernel", 1),
        ("triple_kernel", 4),
    ]
    assert doc["capture"]["launches"] == 5 and doc["capture"]["threads_left"] == []
    assert not [line for line in _irscope_lines(r.err) if line.startswith("irscope:")]


def test_a_thread_still_running_when_the_script_ends_is_said(tmp_path):
    r = run_cli(
        "capture",
        str(DATA / "capture_threads.py"),
        "-t",
        "cuda:90",
        "--compile-only",
        "-o",
        str(tmp_path / "out"),
        "--json",
        "--",
        "--leave-running",
    )
    assert r.code == 0, r.err
    assert json.loads(r.out)["capture"]["threads_left"] == ["idle-worker"]
    said = [line for line in _irscope_lines(r.err) if line.startswith("irscope:")]
    assert len(said) == 1 and "1 thread it started was still running when it ended (idle-worker)" in said[0], r.err
    assert "not captured" in said[0]
