"""The stand-in GPU runs real scripts to their end: it computes results, skips work too big for a CPU,
autotunes as a GPU would, and looks like the chip (issue #13).

CLI runs use --compile-only, so they mean the same on a GPU machine. Each one is a whole
`irscope capture SCRIPT`; the in-process tests below them check the stand-in's parts directly.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from irscope.capture import runner
from irscope.kernel.hardware import for_target
from irscope.kernel.targets import parse_target
from irscope.standin import gpu as standin
from tests.helpers import DATA, EXAMPLES, FB_GLUON_LOAD, FBTRITON, run_cli

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# Triton's own tutorials, unmodified: not shipped here (their code is Triton's); a checkout's
# python/tutorials folder named by IRSCOPE_TRITON_TUTORIALS runs them. The tutorial-style scripts in
# examples/scripts (the same kernels, checks and benchmark tails) always run.
TUTORIALS = Path(os.environ["IRSCOPE_TRITON_TUTORIALS"]) if os.environ.get("IRSCOPE_TRITON_TUTORIALS") else None


def _plot_env() -> dict[str, str]:
    """Triton's tutorials end in benchmark.run(show_plots=True), which imports matplotlib and pandas:
    where they are not installed, tests/data/plotstubs stands in for them (it draws nothing)."""
    if importlib.util.find_spec("matplotlib") and importlib.util.find_spec("pandas"):
        return {}
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(DATA / "plotstubs"), os.environ.get("PYTHONPATH", "")) if p)}


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("irscope:")]


@pytest.mark.skipif(FBTRITON, reason=FB_GLUON_LOAD)
def test_each_check_passes_and_all_four_launches_are_captured(tmp_path):
    """Plain (with a @jit helper), autotuned (through @heuristics), .warmup: each checked at once, each
    computed. The Gluon kernel, last, is captured too; the interpreter cannot run it, which is said."""
    r = run_cli("capture", str(DATA / "capture_checks.py"), "--compile-only", "-o", str(tmp_path / "out"), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    kernels = [c["kernel"] for c in doc["capture"]["captures"]]
    assert kernels == ["double_kernel", "add_kernel", "add_kernel", "rowsum_kernel", "gluon_scale_kernel"]
    for said in ("checks: plain ok", "checks: autotuned ok", "checks: warmup ok"):
        assert said in r.err
    assert "checks: gluon ok" not in r.err
    computed = doc["capture"]["computed"]
    assert computed["computed"] == 3 and list(computed["cannot_run"]) == ["gluon_scale_kernel"]
    # the other three of its six launches: the autotuner's two trials and the Gluon one
    assert doc["capture"]["launches"] == 6
    assert computed["not_computed"] == 3 and computed["not_computed_by"] == {"benchmarking": 2, "cannot_run": 1}
    notes = _notes(r.err)
    assert notes[0].startswith("irscope: the script stopped: capture_checks.py:") and "AssertionError" in notes[0]
    assert "not computed: see the notes" in notes[0]
    assert any("gluon_scale_kernel: Triton's interpreter cannot run it (a Gluon kernel" in n for n in notes)
    assert all(k["folder"] for k in doc["capture"]["captures"])  # every one dumped


def test_past_the_run_budget_launches_are_recorded_not_computed(tmp_path):
    r = run_cli(
        "capture",
        str(DATA / "capture_checks.py"),
        "--compile-only",
        "-o",
        str(tmp_path / "out"),
        "--json",
        env={"IRSCOPE_INTERPRET_TOTAL_S": "0.000001"},
    )
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["capture"]["computed"]["computed"] == 0
    assert doc["capture"]["computed"]["not_computed_from_launch"] == 1
    assert doc["capture"]["computed"]["not_computed_by"] == {"run_budget": 1}
    assert len(doc["capture"]["captures"]) == 1  # the first check failed: the script stopped there
    assert any(
        "results are not computed from launch 1 on" in n and "IRSCOPE_INTERPRET_TOTAL_S" in n for n in _notes(r.err)
    )


def test_autotuning_as_a_gpu_does_it(tmp_path):
    """early_config_prune's new Configs are labelled as launched, a config over the shared memory is
    skipped (not a failure), use_cuda_graph=True and an Autotuner subclass capture: exit 0."""
    r = run_cli("capture", str(DATA / "capture_autotune.py"), "--compile-only", "-o", str(tmp_path / "out"), "--json")
    assert r.code == 0, r.err
    assert not _notes(r.err), r.err  # no stop, no failure, nothing left uncomputed
    for said in ("pruned ok", "cuda graph ok", "subclass ok"):
        assert f"autotune: {said}" in r.err
    caps = json.loads(r.out)["capture"]["captures"]
    by = {}
    for c in caps:
        by.setdefault(c["kernel"], []).append(c)
    # the tuner's list says num_stages 4 and 5; the pruner lowered them by 2
    assert [c["config"] for c in by["matmul_kernel"]] == [
        "BM=32, BN=32, BK=32, num_warps=4, num_ctas=1, num_stages=2",
        "BM=256, BN=256, BK=256, num_warps=8, num_ctas=1, num_stages=3",
    ]
    small, big = by["matmul_kernel"]
    assert small["folder"] and not small["skipped"] and not small["failed"]
    assert big["skipped"].startswith("would not launch: needs ") and "shared memory" in big["skipped"]
    assert not big["failed"] and not big["folder"]
    assert [c["config"].split(",")[0] for c in by["scale_kernel"]] == ["BLOCK=64", "BLOCK=128"]
    assert [c["config"].split(",")[0] for c in by["shift_kernel"]] == ["BLOCK=32", "BLOCK=256"]


def test_a_script_sees_the_chip_through_torch_and_nvidia_smi(tmp_path):
    """Device name and properties, torch.version, nvidia-smi in a subprocess; then a host-side
    TensorDescriptor launched inside a CUDA graph that is replayed, and tl.make_tensor_descriptor
    with triton.set_allocator: both checked."""
    chip = for_target("cuda:90")
    r = run_cli(
        "capture",
        str(DATA / "capture_identity.py"),
        "--compile-only",
        "--target",
        "cuda:90",
        "-o",
        str(tmp_path / "out"),
        "--json",
    )
    assert r.code == 0, r.err
    said = json.loads(next(line for line in r.err.splitlines() if line.startswith("identity: {"))[len("identity: ") :])
    assert said["name"] == said["props_name"] == chip.name
    assert said["smi"] == f"{chip.name}, {chip.memory_gib * 1024} MiB"
    assert said["list"].startswith(f"GPU 0: {chip.name} (UUID: GPU-")
    assert said["sms"] == chip.sms and said["memory"] == chip.memory_gib * 2**30
    assert said["l2"] == chip.l2_mib * 2**20 and said["warp_size"] == 32
    assert said["cuda"] and said["hip"] is None
    assert "identity: descriptor ok" in r.err and "identity: device-side descriptor ok" in r.err
    computed = json.loads(r.out)["capture"]["computed"]
    assert computed["computed"] == 3  # the graph's capture and its replay, and the device-side one


def test_the_stand_in_answers_as_an_amd_chip():
    chip = for_target("hip:gfx942")
    with standin.machine(parse_target("hip:gfx942")):
        assert torch.cuda.get_device_name() == chip.name
        props = torch.cuda.get_device_properties(0)
        assert props.gcnArchName.split(":")[0] == "gfx942" and props.warp_size == 64
        assert props.multi_processor_count == chip.sms
        assert torch.version.hip and torch.version.cuda is None
        out = subprocess.run(
            ["rocm-smi", "--showproductname", "--json"], capture_output=True, text=True, check=True
        ).stdout
        assert json.loads(out)["card0"]["Card Series"] == chip.name
        nvidia = subprocess.run(["sh", "-c", "command -v nvidia-smi"], capture_output=True, text=True, check=False)
        assert nvidia.returncode != 0 or "irscope-smi" not in nvidia.stdout  # no NVIDIA tool on an AMD chip
    assert "irscope-smi" not in os.environ.get("PATH", "")


def test_nvidia_smi_answers_the_common_queries():
    chip = for_target("cuda:100")
    with standin.machine(parse_target("cuda:100")):

        def smi(*args: str) -> str:
            return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, check=True).stdout.strip()

        assert smi("--query-gpu=name", "--format=csv,noheader") == chip.name
        assert smi("--query-gpu=name,memory.total", "--format=csv") == (
            f"name, memory.total\n{chip.name}, {chip.memory_gib * 1024} MiB"
        )
        assert smi("--query-gpu=memory.total", "--format=csv,noheader,nounits") == str(chip.memory_gib * 1024)
        assert smi("--query-gpu=compute_cap", "--format=csv,noheader") == "{}.{}".format(*chip.capability)
        assert chip.name in smi() and smi("-L").startswith(f"GPU 0: {chip.name}")
        bad = subprocess.run(
            ["nvidia-smi", "--query-gpu=nonsense", "--format=csv"], capture_output=True, text=True, check=False
        )
        assert bad.returncode != 0 and "nonsense" in bad.stderr


def test_big_torch_work_is_shape_only_and_do_bench_runs_once():
    import triton

    calls = []
    with standin.machine(parse_target("cuda:90")) as drv:
        a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
        small = torch.randn(64, 64, device="cuda", dtype=torch.float16)
        c = a @ a  # ~17 GFLOP: shape only
        assert c.shape == (2048, 2048) and c.dtype == torch.float16 and c.is_cuda
        ref = small.float() @ small.float()
        torch.testing.assert_close((small @ small).float(), ref, atol=1e-2, rtol=1e-2)  # small: computed
        ms = triton.testing.do_bench(lambda: calls.append(1), quantiles=[0.5, 0.2, 0.8])
        assert calls == [1] and len(ms) == 3 and all(0 < m < float("inf") for m in ms)
        assert triton.testing.do_bench_cudagraph(lambda: calls.append(2)) > 0 and calls == [1, 2]
        notes = drv.notes()
    assert len(notes) == 1 and "1 torch op too big for the CPU" in notes[0] and "mm x1" in notes[0]


def test_ops_registered_for_the_cuda_key_reach_stand_in_tensors():
    """As flag_gems.use_gems() registers its Triton ops: Library("aten", "IMPL").impl(op, fn, "CUDA")."""
    calls = []

    def gems_abs(x):
        calls.append(x.shape)
        return torch.ops.aten.neg.default(x)  # not abs: so the result says which kernel ran

    with standin.machine(parse_target("cuda:90")):
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("abs", gems_abs, "CUDA")
        assert torch.abs(torch.tensor([-1.0, 2.0], device="cuda")).tolist() == [1.0, -2.0]
        assert calls == [(2,)]
    assert torch.abs(torch.tensor([-1.0, 2.0])).tolist() == [1.0, 2.0]  # torch's CPU kernel is back
    assert calls == [(2,)]
    del lib


@pytest.mark.parametrize(
    "tutorial, kernels, table",
    [
        ("02-fused-softmax.py", {"softmax_kernel"}, "softmax-performance:"),
        (
            "05-layer-norm.py",
            {"_layer_norm_fwd_fused", "_layer_norm_bwd_dx_fused", "_layer_norm_bwd_dwdb"},
            "layer-norm-backward:",
        ),
    ],
)
@pytest.mark.skipif(TUTORIALS is None, reason="set IRSCOPE_TRITON_TUTORIALS to a Triton checkout's python/tutorials")
def test_tritons_tutorial_runs_to_its_end(tutorial, kernels, table, monkeypatch, tmp_path):
    """The unmodified tutorial: its checks pass (the interpreter computed the kernels they read) and
    its benchmark tail (do_bench at up to 4096 x 16K) finishes; every kernel it compiled is captured.
    In-process, without the dumps (the CLI tests above cover those); in a folder of its own, as the
    layer-norm tutorial saves its table to '.'."""
    if _plot_env():
        monkeypatch.syspath_prepend(str(DATA / "plotstubs"))
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "log"
    run = runner.run_script(TUTORIALS / tutorial, [], parse_target("cuda:90"), "requested", "compile-only", [], log)
    assert run.stopped is None, run.stopped
    # the launches the checks read (the first of each kernel) were computed; later ones may be over budget
    uncomputed = [int(s.split()[1]) for s in run.computed.over_launch_budget]
    uncomputed += [run.computed.not_computed_from] if run.computed.not_computed_from else []
    assert run.computed.computed >= len(kernels) and all(n > len(kernels) for n in uncomputed)
    assert not run.computed.cannot_run
    assert {c.name for c in run.captures} == kernels and len(run.captures) > len(kernels)  # the tail's too
    assert table in log.read_text()  # the benchmark's table: the script's last line ran


@pytest.mark.parametrize(
    "script, kernels",
    [
        ("fused_softmax.py", {"softmax_kernel"}),
        ("layer_norm.py", {"_layer_norm_fwd_fused"}),
    ],
)
def test_a_tutorial_style_script_with_checks_runs_to_its_end(script, kernels, tmp_path):
    """examples/scripts: each checks its kernel against torch with assert_close after launching it; on the
    stand-in the interpreter computes the result, so the check passes and the script ends."""
    log = tmp_path / "log"
    run = runner.run_script(
        EXAMPLES / "scripts" / script, [], parse_target("cuda:90"), "requested", "compile-only", [], log
    )
    assert run.stopped is None, (run.stopped, log.read_text()[-2000:])
    assert run.computed.computed >= 1 and not run.computed.cannot_run
    assert kernels <= {c.name for c in run.captures}


def test_a_named_chip_is_the_stand_in_device():
    """--target h200 and --target h100 are one compile target (cuda:90) but two chips: the stand-in GPU a
    captured script sees is the one named (its name and memory), and the compile is the same."""
    from irscope.kernel.targets import parse_target

    h200, h100 = parse_target("h200"), parse_target("h100")
    assert h200 == h100 and h200.name == "cuda:90"
    assert h200.hardware.name == "NVIDIA H200" and h200.hardware.memory_gib == 141
    assert h100.hardware.key == "h100" and parse_target("cuda:90").hardware.key == "h100"


# -- what the interpreter layer supplies (standin/interpret.py), each checked against torch

triton = pytest.importorskip("triton")
tl = triton.language
libdevice = importlib.import_module("triton.language.extra.libdevice")


@triton.jit
def _rows_by_loop_index(x_ptr, out_ptr, n_rows, stride, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    for i in range(0, n_rows):  # compiled, `i` is an int32 tensor: .to works
        row = i.to(tl.int64) * stride
        tl.store(out_ptr + row + cols, tl.load(x_ptr + row + cols) + i.to(tl.float32))
    for j in tl.range(0, n_rows, num_stages=2):  # and arithmetic on it keeps it one
        off = (j * stride).to(tl.int64)
        tl.store(out_ptr + off + cols, tl.load(out_ptr + off + cols) * (j + 1).to(tl.float32))


@triton.jit
def _scalar_and_libdevice(x_ptr, out_ptr, scale, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    s = scale.to(tl.float32)  # a float argument is an fp32 scalar, as compiled
    tl.store(out_ptr + cols, libdevice.tanh(x) * s + libdevice.rsqrt(x * x + 1.0) + libdevice.erf(x))


@triton.jit
def _reductions_as_tensor_methods(x_ptr, out_ptr, BLOCK: tl.constexpr):
    rows = tl.arange(0, 4)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    x = tl.load(x_ptr + rows)
    # tl.sum / tl.max called on the tensor (as in a JVP flash attention): the tensor is the first argument
    tl.store(out_ptr + tl.arange(0, 4) * BLOCK, x.sum(axis=1) + x.max(axis=1))  # column 0


@triton.jit
def _bf16_arithmetic(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    y = tl.load(y_ptr + cols)  # bf16 operands: each op rounded to bf16, as on the chip
    t = x * y + x
    t = tl.where(x < y, -t, tl.maximum(t, y) - x)
    tl.store(out_ptr + cols, t)


def _bf16_expected(x, y):
    t = x * y + x
    return torch.where(x < y, -t, torch.maximum(t, y) - x)


@pytest.mark.parametrize(
    "kernel, block, args, expected",
    [
        (
            _bf16_arithmetic,
            256,
            lambda x, out: (x, x.flip(0), out),
            lambda x: _bf16_expected(x, x.flip(0)),
        ),
        (
            _reductions_as_tensor_methods,
            32,
            lambda x, out: (x, out),
            lambda x: torch.cat([(x.sum(1) + x.amax(1))[:, None], torch.full((4, 31), float("nan"))], 1),
        ),
        (
            _rows_by_loop_index,
            32,
            lambda x, out: (x, out, 4, 32),
            lambda x: (x + torch.arange(4.0)[:, None]) * torch.arange(1.0, 5.0)[:, None],
        ),
        (
            _scalar_and_libdevice,
            128,
            lambda x, out: (x, out, 0.5),
            lambda x: torch.tanh(x) * 0.5 + torch.rsqrt(x * x + 1) + torch.erf(x),
        ),
    ],
    ids=["bf16-arithmetic", "reductions-as-tensor-methods", "range-loop-index-to", "float-scalar-to-and-libdevice"],
)
def test_the_interpreter_layer_computes_what_triton_s_interpreter_lacks(kernel, block, args, expected):
    """`.to` on a loop variable, a float argument's `.to`, libdevice calls: each computed, and equal
    to torch's result (Triton's interpreter alone refuses all three); a reduction called on the tensor
    (`x.sum(axis=1)`) and bf16 arithmetic (Triton's interpreter computes it on the bits) likewise."""
    from irscope.standin import interpret
    from irscope.standin.interpret import Executor

    ex = Executor()
    x = torch.randn(256, dtype=torch.bfloat16) if kernel is _bf16_arithmetic else torch.randn(4, 32)
    out = torch.full_like(x, float("nan"))
    ex.launch(kernel, 1, args(x, out), {"BLOCK": block}, (1,))
    assert ex.stats.cannot_run == {} and ex.stats.computed == 1
    tol = 0 if x.dtype == torch.bfloat16 else 1e-6  # bf16: bit for bit, each op rounded as torch rounds it
    torch.testing.assert_close(out, expected(x), rtol=tol, atol=tol, equal_nan=True)
    assert "range" not in globals() and tl.range is not interpret._loop_range  # put back after the launch


def test_16_bit_gemms_agree_bit_for_bit_as_on_the_chip(tmp_path):
    """The matmul tutorial's check (allclose, atol=1e-2, rtol=0) at 512^3 in fp16 and bf16 passes
    whatever BLOCK_K and accumulator style (tl.dot(a, b, acc), acc += tl.dot(a, b)): torch's GEMM and the interpreter's tl.dot both sum
    exactly and round once, so they agree bit for bit (before: ~400 fp16 elements differed by a
    step, and every bf16 one: the interpreter multiplied bf16's bits as integers)."""
    r = run_cli(
        "capture",
        str(DATA / "capture_fp16_matmul.py"),
        "--compile-only",
        "--target",
        "cuda:90",
        "-o",
        str(tmp_path / "out"),
        "--json",
    )
    assert r.code == 0, r.err
    assert "torch vs correctly rounded: 0 differ" in r.err
    checks = [line for line in r.err.splitlines() if "BK=" in line]
    assert len(checks) == 3, r.err
    assert all(line.endswith("✅ Triton and Torch match, 0 differ") for line in checks), checks
    assert json.loads(r.out)["capture"]["computed"]["computed"] == 3


def test_one_rounding_from_fp64_is_the_correct_rounding():
    """round_to_odd_fp32 then a round-to-nearest-even cast is NumPy's direct fp64 -> fp16 (ties,
    near-ties, subnormals, overflow, signed zero, inf); bf16_bits is torch's fp32 -> bf16."""
    import numpy as np

    from irscope.standin.gemm import bf16_bits, round_to_odd_fp32

    ulp = 2.0**-10
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.standard_normal(200_000) * 100,
            rng.standard_normal(1000) * 2.0**-20,
            [
                1 + ulp / 2,
                1 + ulp / 2 + 1e-12,
                1 + ulp / 2 - 1e-12,
                1 + 3 * ulp / 2,
                -(1 + ulp / 2 + 1e-12),
                65520.0,
                65519.99,
                1e300,
                -0.0,
                np.inf,
                -np.inf,
                2.0**-25,
                2.0**-25 + 1e-20,
            ],
        ]
    )
    with np.errstate(over="ignore"):
        assert np.array_equal(round_to_odd_fp32(x).astype(np.float16), x.astype(np.float16))
    assert np.isnan(round_to_odd_fp32(np.array([np.nan]))).all()
    f = np.concatenate(
        [
            rng.standard_normal(100_000).astype(np.float32) * 1000,
            (np.arange(1, 1000, dtype=np.uint32) << 16 | 0x8000).view(np.float32),  # exact ties
            np.array([np.inf, -np.inf, 3.4e38, -0.0, 1e-40], dtype=np.float32),
        ]
    )
    expected = torch.from_numpy(f).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(bf16_bits(f), expected)


@triton.jit
def _softmax_rows_long_constexpr(N: triton.language.constexpr, N_P2: triton.language.constexpr, x_ptr, out_ptr, stride):
    # ninetoothed's generated kernels: `triton.language.constexpr` spelt out, constexprs first, positional
    row = tl.program_id(0)
    cols = tl.arange(0, N_P2)[None, :]
    x = tl.zeros((1, N_P2), dtype=tl.float32) + tl.load(x_ptr + row * stride + cols, mask=cols < N, other=-float("inf"))
    num = tl.exp(x - tl.max(x))
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num), mask=cols < N)


def test_a_constexpr_annotated_triton_language_constexpr_is_one():
    """A parameter annotated `triton.language.constexpr` is a constexpr, as compiled: plain
    TRITON_INTERPRET=1 (3.6-3.9) passes it as a tensor (its GridExecutor knows only `tl.constexpr`)
    and fails in tl.arange ("arange's arguments must be of type tl.constexpr") or in tl.zeros' shape."""
    from irscope.standin.interpret import Executor

    ex = Executor()
    x = torch.randn(3, 20)
    out = torch.full_like(x, float("nan"))
    ex.launch(_softmax_rows_long_constexpr, 1, (20, 32, x, out, x.stride(0)), {}, (3,))
    assert ex.stats.cannot_run == {} and ex.stats.computed == 1
    torch.testing.assert_close(out, torch.softmax(x, dim=-1), rtol=1e-6, atol=1e-6)
