"""Timing: statistics on known samples, verdicts, launch parsing, the no-GPU message (runs on a GPU: tests/gpu)."""

from __future__ import annotations

import importlib.util
import json
import random

import pytest

from irscope import jobs
from irscope.errors import BadInput, IrscopeError
from irscope.timing import bench, launch
from irscope.timing import session as session_mod
from irscope.timing import statistics as timing
from irscope.timing.inputs import check_outputs
from irscope.timing.measure import PRUNE_AFTER, PRUNE_EARLY, _prune
from irscope.timing.session import TimingSession
from irscope.timing.variant import Variant
from tests.helpers import DATA, FLOATS_N, VECTOR_ADD, run_in


def test_median_quantiles_and_ci_on_known_samples():
    xs = [float(i) for i in range(1, 102)]  # 1..101
    s = timing.summarize(xs)
    assert s.median == 51 and s.q1 == 26 and s.q3 == 76 and s.iqr == 50
    # binomial CI of the median of 101 samples: order statistics around 51 +- 1.96*sqrt(101)/2 ~ 9.85
    assert 40 <= s.ci_low < 51 < s.ci_high <= 62
    assert timing.median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0), "too few samples: the whole range"


def test_paired_ratio_sees_a_two_percent_win_through_drift():
    rng = random.Random(1)
    a, b = [], []
    for i in range(200):
        drift = 1 + 0.05 * (i / 200)  # clocks drift 5 % over the run, for both alike
        noise = lambda: rng.gauss(0, 0.003)
        a.append(1.00 * drift * (1 + noise()))
        b.append(0.98 * drift * (1 + noise()))
    c = timing.compare(a, b)
    assert c.verdict == "faster" and 0.975 < c.ratio < 0.985 and c.ci_high < 1
    assert abs(c.delta_percent + 2) < 0.5


def test_identical_variants_are_the_same():
    rng = random.Random(2)
    a = [1 + rng.gauss(0, 0.01) for _ in range(300)]
    b = [1 + rng.gauss(0, 0.01) for _ in range(300)]
    c = timing.compare(a, b)
    assert c.verdict == "same" and c.ci_low < 1 < c.ci_high and c.margin == timing.DEFAULT_MARGIN


def test_a_variant_dropped_early_is_compared_over_the_rounds_both_ran():
    a = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 9.0]  # the later rounds are the leader's alone
    b = [1.1] * 6
    c = timing.compare_shared_rounds(a, b)
    assert abs(c.ratio - 1.1) < 1e-9 and c.verdict == "slower"
    assert timing.compare_shared_rounds(b, a).verdict == "faster"


def test_verdicts_against_the_equivalence_margin():
    assert timing.verdict(0.95, 0.985) == "faster"
    assert timing.verdict(1.015, 1.03) == "slower"
    assert timing.verdict(0.995, 1.008) == "same"
    assert timing.verdict(0.985, 0.995) == "ambiguous", "faster, but maybe by less than the margin"
    assert timing.verdict(0.98, 1.02) == "ambiguous"
    assert timing.verdict(0.985, 0.995, margin=0.0) == "faster"
    assert timing.verdict(0.995, 1.008, margin=0.0) == "ambiguous"
    assert timing.verdict(0.97, 0.99, margin=0.05) == "same"
    assert not timing.precise_enough([1.0] * 5, [1.0] * 5, 0.01), "too few rounds is never precise"


@pytest.mark.parametrize("margin", [-0.01, 1.0, 5, True])
def test_a_margin_outside_zero_to_one_is_bad_input(margin):
    with pytest.raises(BadInput, match=r"--margin .*fraction from 0 to below 1"):
        bench.check_margin(margin)


def test_a_sweep_drops_only_the_variants_clearly_behind_the_leader():
    rng = random.Random(3)
    rounds = PRUNE_AFTER + 2
    drift = [1 + 0.02 * i for i in range(rounds)]  # drift hits every variant alike in a round
    speeds = {"leader": 1.0, "close": 1.004, "slow": 1.2, "bit-slower": 1.05}
    live = [
        Variant(name, None, None, samples_ms=[speed * d * (1 + rng.gauss(0, 0.002)) for d in drift])
        for name, speed in speeds.items()
    ]
    kept = _prune(live, 0.01, rounds)
    assert [v.name for v in kept] == ["leader", "close"]
    slow = next(v for v in live if v.name == "slow")
    assert slow.dropped.startswith(f"dropped after {rounds} rounds: +") and "against leader" in slow.dropped
    assert not kept[1].dropped, "within the margin of the leader: timed on"

    early = PRUNE_EARLY[0]
    live = [
        Variant(name, None, None, samples_ms=[speed * d for d in drift[:early]])
        for name, speed in {"leader": 1.0, "3x": 3.0, "bit-slower": 1.05}.items()
    ]
    kept = _prune(live, PRUNE_EARLY[1], early)  # what measure asks for before PRUNE_AFTER rounds
    assert [v.name for v in kept] == ["leader", "bit-slower"], "two rounds only drop the far slower"


@pytest.mark.skipif("_has_gpu()", reason="the timing process starts fine where there is a GPU")
def test_timing_process_that_cannot_start_says_why():
    """The protocol without a GPU: the child cannot start (torch without CUDA, or no torch at all: the
    README's install does not bring it), says why, and the parent reports it in one line."""
    job = jobs.resolve_one(
        jobs.Request(
            DATA / "faulty.py", ("scaled_copy",), named_args=FLOATS_N, consts=("BLOCK=1024", "SCALE=2"), target="h100"
        ),
        "a test times",
    )
    with TimingSession() as session:
        session.start(
            launch.Launch(launch.parse_args("x_ptr=randn(4096, fp32), out_ptr=zeros(4096, fp32), n=4096"), (4, 1, 1))
        )
        session.add(Variant("v", job.spec, job.settings))
        why = "(CUDA|cuda|NVIDIA|driver)" if importlib.util.find_spec("torch") else "torch"
        with pytest.raises(IrscopeError, match=f"timing process could not start: .*{why}") as e:
            session.finish(session.sent, budget=60)
    assert "\n" not in str(e.value).strip() and "Traceback" not in str(e.value)


# a stand-in timing process over the same protocol: variant "bad" kills it in its preflight
FAKE_CHILD = """
import sys
from irscope import workers
print("the kernel file prints", end="")   # not protocol: ignored
workers.say("UP")
for msg in workers.messages():
    if msg["op"] == "variant":
        if msg["name"] == "bad":
            sys.stderr.write("RuntimeError: an illegal memory access was encountered\\n")
            sys.exit(1)
        workers.say("OK", msg["i"])
    elif msg["op"] == "measure":
        workers.say("RESULT", {"device": "stand-in", "rounds": 3,
                               "variants": {n: ("ok", "", [1.0, 1.0, 1.0], "") for n in msg["order"]}})
        sys.exit(0)
"""


def test_a_variant_that_kills_the_timing_process_is_blamed_and_a_new_one_measures_the_rest(monkeypatch):
    """The parent's side on the CPU: UP, a death in a preflight faults that variant, a new child gets the others."""
    monkeypatch.setattr(session_mod, "CHILD", ("-c", FAKE_CHILD))
    job = jobs.resolve_one(
        jobs.Request(
            DATA / "faulty.py", ("scaled_copy",), named_args=FLOATS_N, consts=("BLOCK=1024", "SCALE=2"), target="h100"
        ),
        "a test times",
    )
    variants = [Variant(name, job.spec, job.settings) for name in ("a", "bad", "c")]
    with TimingSession() as session:
        session.start(launch.Launch(launch.parse_args("n=4096"), (4, 1, 1)), seed=0)
        for v in variants:
            session.add(v)
        device, result = session.finish(variants, budget=60)
    assert device == "stand-in" and sorted(result["variants"]) == ["a", "c"]
    assert [v.status for v in variants] == ["ok", "faulted", "ok"]
    assert "illegal memory access" in variants[1].reason


def test_launch_arguments_and_grid():
    args = launch.parse_args(
        "a=randn(4096, 2048, fp16), b=randn(2048, 1024, bf16).T, M=4096, K=size(a, 1), "
        "sa=stride(a, 0), n=numel(a) // 2, off=randn(100, fp32)[3:]"
    )
    assert args["a"].shape == (4096, 2048) and args["a"].dtype == "fp16"
    assert args["b"].transpose and args["b"].dims() == (1024, 2048) and args["b"].stride_of(0) == 1
    assert args["K"] == 2048 and args["sa"] == 2048 and args["n"] == 4096 * 1024
    assert launch.spec_element(args["a"]) == "*fp16:16"
    assert launch.spec_element(args["off"]) == "*fp32:4", "a view 3 floats in is 4-byte aligned"
    assert launch.spec_element(4096) == "i32:16" and launch.spec_element(1) == "i32:1"
    assert launch.spec_element(4099) == "i32" and launch.spec_element(2**33) == "i64:16"
    assert launch.parse_grid("cdiv(M, 128), 2", dict(args)) == (32, 2, 1)
    assert launch.parse_grid("cdiv(M, 128) * 4", dict(args)) == (128, 1, 1)


@pytest.mark.parametrize(
    "text, message",
    [
        ("x=randn(10)", "needs a dtype last"),
        ("x=__import__('os')", "is not allowed"),
        ("n=m*2", "unknown name 'm'"),
        ("x", "expected NAME=VALUE"),
    ],
)
def test_launch_parsing_refuses_what_is_not_data(text, message):
    with pytest.raises(BadInput, match=message):
        launch.parse_args(text)


@pytest.mark.torch
def test_outputs_are_compared_by_dtype_tolerance():
    torch = pytest.importorskip("torch")

    spec = launch.Launch({"out": launch.TensorSpec("zeros", (64,), "fp16"), "n": 64})
    base = {"out": torch.ones(64, dtype=torch.float16), "n": 64}
    close = {"out": torch.ones(64, dtype=torch.float16) * 1.001, "n": 64}
    wrong = {"out": torch.ones(64, dtype=torch.float16) * 2, "n": 64}
    assert check_outputs(base, close, spec) == ""
    assert "out differs from the baseline" in check_outputs(base, wrong, spec)


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(_has_gpu(), reason="checks the message given without a GPU")
def test_bench_without_gpu_says_so_in_one_line(capsys, tmp_path):
    r = run_in(
        capsys,
        "bench",
        str(VECTOR_ADD),
        "--args",
        "x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), out_ptr=empty(4096, fp32), n_elements=4096",
        "--const",
        "BLOCK_SIZE=1024",
        "--grid",
        "4",
        "-o",
        str(tmp_path / "o"),
    )
    assert r.code == 2
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "needs a GPU" in lines[0]


@pytest.mark.skipif(_has_gpu(), reason="checks the message given without a GPU")
def test_diff_time_without_gpu_says_so_in_one_line(capsys, tmp_path):
    r = run_in(
        capsys,
        "diff",
        str(VECTOR_ADD),
        "--signature",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "--a",
        "num_warps=4",
        "--b",
        "num_warps=8",
        "--time",
        "-o",
        str(tmp_path / "o"),
    )
    assert r.code == 2 and "is now 'irscope bench" in r.err  # the old form: a note names bench, then the error
    lines = [line for line in r.err.splitlines() if line.strip() and not line.startswith("irscope: note:")]
    assert len(lines) == 1 and "needs a GPU" in lines[0]
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- --ref: a torch call in the same rounds

MATMUL_ARGS = (
    "a_ptr=randn(256, 128, fp16), b_ptr=randn(128, 64, fp16), c_ptr=empty(256, 64, fp16), "
    "M=256, N=64, K=128, x=randn(32, 100, fp32)"
)


def test_reference_grammar_accepts_torch_calls_over_the_args():
    from irscope.timing import reference

    args = launch.parse_args(MATMUL_ARGS)
    ref = reference.parse("torch.matmul(a_ptr, b_ptr)", args)
    assert ref.call == ("call", "torch.matmul", (("arg", "a_ptr"), ("arg", "b_ptr")), ())
    assert ref.label == "ref: torch.matmul(a_ptr, b_ptr)"
    sm = reference.parse("F.softmax(x, dim=-1, dtype=torch.float32)", args)
    assert sm.call[1] == "torch.nn.functional.softmax" and sm.call[3][0] == ("dim", ("const", -1))
    assert sm.call[3][1] == ("dtype", ("dtype", "float32")), "keyword dtype=, the value a dtype"
    nested = reference.parse("torch.nn.functional.gelu(torch.mm(a_ptr, b_ptr), approximate='tanh')", args)
    assert nested.call[2][0][0] == "call"
    assert reference.parse("torch.matmul(b_ptr.T, a_ptr.T)", args).call[2][0] == ("attr", ("arg", "b_ptr"), "T")


@pytest.mark.parametrize(
    "text, message",
    [
        ("torch.mutmul(a_ptr, b_ptr)", r"torch.mutmul\(…\) is not a known reference function"),
        ("torch.add_(a_ptr, b_ptr)", "it writes its inputs"),
        ("numpy.matmul(a_ptr, b_ptr)", "functions come from torch, F"),
        ("torch.matmul(a_ptr, w)", r"unknown name 'w': a reference uses the names of --args \(a_ptr, b_ptr"),
        ("torch.matmul(a_ptr, b_ptr, out=c_ptr)", "out= would write into an argument"),
        ("__import__('os').system('true')", "is not a function of the grammar"),
        ("torch.matmul(a_ptr.float(), b_ptr)", "is not allowed"),
        ("torch.matmul(a_ptr, b_ptr) + 1", "not a call"),
        ("(lambda: 0)()", "is not a function of the grammar"),
        ("torch.matmul(*a_ptr)", r"\*args is not part of the grammar"),
        ("torch.matmul(a_ptr,", "cannot parse it"),
        ("", "empty"),
        ("torch.matmul(M.T, b_ptr)", r"\.T follows the name of a tensor"),
    ],
)
def test_reference_refuses_what_is_not_the_grammar_in_one_line(text, message):
    from irscope.timing import reference

    with pytest.raises(BadInput, match=message) as e:
        reference.parse(text, launch.parse_args(MATMUL_ARGS))
    assert "\n" not in str(e.value) and str(e.value).startswith("--ref ")


@pytest.mark.torch
def test_reference_shapes_are_checked_on_the_meta_device():
    pytest.importorskip("torch")
    from irscope.timing import reference

    lw = launch.Launch(launch.parse_args(MATMUL_ARGS))
    reference.check(reference.parse("torch.matmul(a_ptr, b_ptr)", lw), lw)  # fits: no error
    reference.check(reference.parse("F.softmax(x, -1)", lw), lw)
    for text, why in [
        ("torch.matmul(b_ptr, a_ptr)", "does not fit the --args"),
        ("torch.argmax(x, 5)", r"does not fit the --args: (Dimension out of range|dim 5 out of bounds)"),
        ("torch.matmul(a_ptr, x)", "does not fit the --args"),
        ("F.layer_norm(x, (64,))", "does not fit the --args"),
        ("torch.cat((a_ptr, b_ptr))", "does not fit the --args"),
        ("torch.argmax(x, -1, True, 3)", "does not fit the --args"),
    ]:
        with pytest.raises(BadInput, match=why) as e:
            reference.check(reference.parse(text, lw), lw)
        assert "\n" not in str(e.value)


@pytest.mark.torch
def test_a_reference_computes_what_torch_computes():
    torch = pytest.importorskip("torch")
    from irscope.timing import reference

    x = torch.randn(8, 16)
    w = torch.randn(16, 4)
    ref = reference.parse("F.gelu(torch.matmul(x, w), approximate='tanh')", {"x": None, "w": None})
    got = reference.bind(ref, {"x": x, "w": w})()
    assert torch.equal(got, torch.nn.functional.gelu(x @ w, approximate="tanh"))


def test_bench_with_a_bad_ref_exits_2_in_one_line_before_the_gpu(monkeypatch, capsys):
    """The CLI path in-process, with the timing process replaced (no GPU here): refused before any run."""
    from irscope import cli
    from irscope.cli import bench as bench_cli

    started = []

    class NoSession:
        def __init__(self):
            started.append(self)

    monkeypatch.setattr(bench_cli, "timing_session", NoSession)
    monkeypatch.setattr(bench, "run", lambda *a, **k: pytest.fail("timed a bad --ref"))
    for ref, why in [("torch.matmul(x_ptr, z)", "unknown name 'z'"), ("os.system('x')", "functions come from")]:
        with pytest.raises(SystemExit) as e:
            cli.main(
                [
                    "bench",
                    str(VECTOR_ADD),
                    "--args",
                    ("x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), out_ptr=empty(4096, fp32), n_elements=4096"),
                    "--const",
                    "BLOCK_SIZE=1024",
                    "--grid",
                    "4",
                    "--target",
                    "h100",
                    "--ref",
                    ref,
                ]
            )
        assert e.value.code == 2
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(err) == 1 and why in err[0] and err[0].startswith("irscope: error: --ref")
    with pytest.raises(SystemExit) as e:
        cli.main(["bench", str(VECTOR_ADD), "--args", "n_elements=4096", "--grid", "4", "--margin", "2"])
    assert e.value.code == 2 and "--margin 2" in capsys.readouterr().err
    for bad in ("0", "257", "many"):
        with pytest.raises(SystemExit) as e:
            cli.main(["bench", str(VECTOR_ADD), "--args", "n_elements=4096", "--grid", "4", "--batch", bad])
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert e.value.code == 2 and len(err) == 1 and f"--batch {bad!r}: give auto" in err[0]


FAKE_REF_CHILD = """
import sys
from irscope import workers
workers.say("UP")
for msg in workers.messages():
    if msg["op"] == "launch" and msg.get("ref") is not None:
        workers.say("FAIL", ("ref", "--ref 'torch.matmul(b, a)': does not fit the --args: shapes cannot be multiplied"))
        sys.exit(1)
"""


def test_a_reference_the_timing_process_refuses_is_bad_input(monkeypatch):
    """The timing process checks the shapes before it makes any input; the parent says it as BadInput (exit 2)."""
    from irscope.timing import reference

    monkeypatch.setattr(session_mod, "CHILD", ("-c", FAKE_REF_CHILD))
    job = jobs.resolve_one(
        jobs.Request(
            DATA / "faulty.py", ("scaled_copy",), named_args=FLOATS_N, consts=("BLOCK=1024", "SCALE=2"), target="h100"
        ),
        "a test times",
    )
    lw = launch.Launch(launch.parse_args("x_ptr=randn(64, fp32), out_ptr=zeros(64, fp32), n=64"), (1, 1, 1))
    with TimingSession() as session:
        session.start(lw, ref=reference.parse("torch.neg(x_ptr)", lw), seed=0)
        session.add(Variant("a", job.spec, job.settings))
        with pytest.raises(BadInput, match="does not fit the --args"):
            session.finish(session.sent, budget=60)


def test_the_report_gives_each_variant_its_ratio_to_the_reference():
    """report() on known samples (what the timing process returns): rows against the baseline and the ref."""
    pytest.importorskip("triton")
    from irscope.timing import reference
    from irscope.views.bench import bench_json, bench_summary

    job = jobs.resolve_one(
        jobs.Request(
            DATA / "faulty.py", ("scaled_copy",), named_args=FLOATS_N, consts=("BLOCK=1024", "SCALE=2"), target="h100"
        ),
        "a test times",
    )
    lw = launch.Launch(launch.parse_args("x_ptr=randn(64, fp32), out_ptr=zeros(64, fp32), n=64"), (1, 1, 1))
    rng = random.Random(4)
    drift = [1 + 0.01 * rng.random() for _ in range(60)]
    base = Variant("baseline", job.spec, job.settings, samples_ms=[0.100 * d * (1 + rng.gauss(0, 1e-3)) for d in drift])
    other = Variant("v2", job.spec, job.settings, samples_ms=[0.095 * d * (1 + rng.gauss(0, 1e-3)) for d in drift])
    ref_v = Variant(
        "ref: torch.neg(x_ptr)",
        None,
        None,
        ref=reference.parse("torch.neg(x_ptr)", lw),
        samples_ms=[0.090 * d * (1 + rng.gauss(0, 1e-3)) for d in drift],
    )
    clocks = {
        "source": "NVML",
        "why_not": "",
        "sm_mhz": (1900.0, 1980.0, 1980.0),
        "power_w": (300.0, 650.0),
        "temp_c": (40.0, 60.0),
        "dropped_rounds": 2,
        "floor": 0.95,
    }
    r = bench.report(
        [base, other],
        lw,
        {"rounds": 60, "method": "m", "tick_ms": 3.2e-5, "runs_per_round": 1, "clocks": clocks},
        1.0,
        0.005,
        None,
        "8*n",
        "NVIDIA H200",
        ref=ref_v,
    )
    assert r.variants[1].versus_baseline.verdict == "faster"
    vr = r.variants[0].versus_reference
    assert vr.verdict == "slower" and abs(vr.ratio - 0.100 / 0.090) < 0.005 and vr.ci_low < vr.ratio < vr.ci_high
    assert r.ref.name == "ref: torch.neg(x_ptr)" and r.ref.summary.n == 60 and r.ref.gbps is not None
    doc = json.loads(bench_json(r))
    assert doc["variants"][0]["versus_reference"]["verdict"] == "slower"
    assert "delta_percent" in doc["variants"][0]["versus_reference"]
    assert doc["ref"]["summary"]["median"] == r.ref.summary.median and doc["margin"] == 0.01
    assert doc["clocks"]["dropped_rounds"] == 2 and "ref: torch.neg(x_ptr)" in doc["samples"]
    from rich.console import Console

    con = Console(record=True, width=220)
    bench_summary(r, con)
    text = con.export_text()
    assert "clocks (NVML): SM 1900-1980 MHz (median 1980), 300-650 W, 40-60 C, 2 rounds dropped" in text
    assert "baseline takes 1.11" in text and "torch.neg(x_ptr)" in text and "timer: 32 ns ticks" in text
    r.clocks = {"source": "", "why_not": "clocks not watched: nvidia-ml-py (pynvml) is not installed"}
    con = Console(record=True, width=220)
    bench_summary(r, con)
    assert con.export_text().count("clocks not watched") == 1


def test_a_binary_built_from_pinned_ir_is_launched_with_its_runtime_arguments_only():
    """A loop-pinned variant (recipe h200 deep-pipeline) is compiled from edited TTGIR: Triton's launcher
    for it takes the IR function's 9 arguments, not the 16 parameters (the H200 said 'takes exactly 22
    arguments (29 given)' before); a Python-compiled binary still gets all 16."""
    from pathlib import Path

    from irscope import jobs
    from irscope.compile import compiler
    from irscope.timing.launch import Launch
    from irscope.timing.variant import Variant, launcher

    sig = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1"
    names = [
        "a_ptr",
        "b_ptr",
        "c_ptr",
        "M",
        "N",
        "K",
        "stride_am",
        "stride_ak",
        "stride_bk",
        "stride_bn",
        "stride_cm",
        "stride_cn",
    ]
    for variant, expected in (("deep-pipeline", 9), ("baseline", 16)):
        job = jobs.resolve_one(jobs.Request(Path("examples/matmul.py"), (), sig, recipe="h200", variant=variant), "t")
        recorder = _LaunchRecorder(compiler.load_binary(job.spec, job.settings).src)
        v = Variant(variant, job.spec, job.settings, binary=recorder)
        launcher(v, {n: 64 for n in names}, Launch(grid=(1, 1, 1)))()
        assert len(recorder.calls[0]) == expected


class _LaunchRecorder:
    """Stands for a CompiledKernel: its source (what Triton compiled it from) and the launches made."""

    def __init__(self, src):
        self.src, self.calls = src, []

    def __getitem__(self, grid):
        return lambda *args: self.calls.append(args)
