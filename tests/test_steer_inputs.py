"""Bad input to steering and timing: one line 'irscope: error: ...', exit 2, no traceback, nothing written.

The table covers --pin-loop and --pin-layout forms, recipe files (bad keys, types, targets, variants,
constexprs, option values the backend refuses, non-UTF-8), `recipes check`/`show`, and the launch
grammar of bench's --args/--grid (through irscope.timing.launch: bench without a GPU stops first).
CLI cases run in-process through irscope.cli.main.
"""

from __future__ import annotations

import time

import pytest

from irscope import cli
from irscope.errors import BadInput
from irscope.timing import launch
from tests.helpers import MATMUL, VECTOR_ADD

ADD = "*fp32, *fp32, *fp32, i32:16, 1024"
MATMUL_SIG = (
    "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
)
HEAD = '[recipe]\ntarget = "h100"\npurpose = "a test"\n'


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        cli.main(list(argv))
        raise SystemExit(0)
    out = capsys.readouterr()
    return e.value.code or 0, out.out, out.err


def assert_one_error_line(code: int, err: str, *words: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("irscope: error:"), err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], lines[0]


# ------------------------------------------------------------------ pins on the command line

PIN_CASES = [
    # (file, signature, target, option, value, words in the message)
    (VECTOR_ADD, ADD, "h100", "--pin-loop", "33", ["--pin-loop"]),
    (VECTOR_ADD, ADD, "h100", "--pin-loop", "x:num_stages=2", ["--pin-loop"]),
    (VECTOR_ADD, ADD, "h100", "--pin-loop", "33:num_stages", ["--pin-loop"]),
    (VECTOR_ADD, ADD, "h100", "--pin-loop", "33:num_stages=two", ["num_stages"]),
    (VECTOR_ADD, ADD, "h100", "--pin-loop", "33:bogus=1", ["bogus"]),
    (VECTOR_ADD, ADD, "h100", "--pin-loop", "33:num_stages=-1", ["num_stages"]),
    (VECTOR_ADD, ADD, "h100", "--pin-loop", "-5:num_stages=2", ["--pin-loop"]),
    (VECTOR_ADD, ADD, "h100", "--pin-loop", "3:num_stages=2", ["loop"]),
    (VECTOR_ADD, ADD, "h100", "--pin-layout", "blocked", ["--pin-layout"]),
    (VECTOR_ADD, ADD, "h100", "--pin-layout", "blocked=", ["--pin-layout"]),
    (VECTOR_ADD, ADD, "h100", "--pin-layout", "blocked:sizePerThread=[1", ["--pin-layout"]),
    (VECTOR_ADD, ADD, "h100", "--pin-layout", "blocked:sizePerThred=[1]", ["sizePerThread"]),
    (VECTOR_ADD, ADD, "h100", "--pin-layout", "blocked7:sizePerThread=[1]", ["#blocked7"]),
    (VECTOR_ADD, ADD, "h100", "--pin-layout", "blocked:threadsPerWarp=[64]", ["warp size, 32"]),
    (VECTOR_ADD, ADD, "h100", "--pin-layout", "blocked:warpsPerCTA=[2]", ["num_warps, 4"]),
    (VECTOR_ADD, ADD, "h100", "--pin-layout", "blocked:sizePerThread=[3]", ["power of two"]),
    (VECTOR_ADD, ADD, "h100", "--pin-layout", "blocked:order=[1]", ["permutation"]),
    (VECTOR_ADD, ADD, "h100", "--pin-layout", "blocked=not a layout", ["--pin-layout"]),
    (MATMUL, MATMUL_SIG, "h100", "--pin-layout", "mma:instrShape=[16, 7, 16]", ["power of two", "7"]),
    (MATMUL, MATMUL_SIG, "h100", "--pin-layout", "mma:instrShape=[16, 136, 16]", ["power of two", "136"]),
    (MATMUL, MATMUL_SIG, "h100", "--pin-layout", "mma:instrShape=[16, 512, 16]", ["from 8 to 256"]),
    (MATMUL, MATMUL_SIG, "h100", "--pin-layout", "mma:instrShape=[32, 128, 16]", ["M = 16"]),
    (MATMUL, MATMUL_SIG, "h100", "--pin-layout", "mma:instrShape=[16, 128, 32]", ["K is fixed", "16 here"]),
    (MATMUL, MATMUL_SIG, "h100", "--pin-layout", "mma:instrShape=[16, 128]", ["3 entries"]),
    (MATMUL, MATMUL_SIG, "h100", "--pin-layout", "mma:versionMajor=7", ["versionMajor"]),
    (MATMUL, MATMUL_SIG, "a100", "--pin-layout", "mma:instrShape=[16, 16]", ["mma.sync", "[16, 8]"]),
]


@pytest.mark.parametrize(
    "file, sig, target, option, value, words", PIN_CASES, ids=[f"{c[3]} {c[4]}" for c in PIN_CASES]
)
def test_bad_pin_is_one_line_exit_2_nothing_written(capsys, tmp_path, file, sig, target, option, value, words):
    out = tmp_path / "out"
    code, _, err = run_main(capsys, "dump", str(file), "-s", sig, "-t", target, "-o", str(out), option, value)
    assert_one_error_line(code, err, *words)
    assert not out.exists() or not any(out.rglob("manifest.json"))


# ------------------------------------------------------------------ recipe files

RECIPE_CASES = [
    # (file text (bytes for non-UTF-8), words in the message)
    (HEAD + "bogus = 1\n", ["bogus"]),
    ('[recipe]\ntarget = "h999"\npurpose = "x"\n', ["h999"]),
    ('[recipe]\ntarget = 90\npurpose = "x"\n', ["target"]),
    ('[recipe]\npurpose = "no target"\n', ["target"]),
    (HEAD + "[options]\nnum_warps = 3\n", [":5:", "num_warps", "power of 2"]),
    (HEAD + '[options]\nnum_warps = "four"\n', [":5:", "num_warps"]),
    (HEAD + "[options]\nnum_stages = 1000000000000000000\n", [":5:", "out of range"]),
    (HEAD + "[options]\nnum_warp = 4\n", [":5:", "num_warp", "num_warps"]),
    (HEAD + "[env]\nTRITON_NOT_A_KNOB = 1\n", [":5:", "TRITON_NOT_A_KNOB"]),
    (HEAD + '[constexprs]\n"1x" = 4\n', [":5:", "parameter name"]),
    (HEAD + "[constexprs]\nBLOCK = { NotALayout = { a = 1 } }\n", [":5:", "not a Gluon layout class"]),
    (HEAD + "[loops.abc]\nnum_stages = 2\n", ["abc"]),
    (HEAD + '[loops.33]\nnum_stages = "two"\n', ["num_stages"]),
    (HEAD + "[layouts]\nblocked = 4\n", ["blocked"]),
    (HEAD + "[variant.v]\npurpose = 1\n", ["purpose"]),
    (HEAD + "[variant.v.options]\nnum_warps = 6\n", ["num_warps", "power of 2"]),
    (HEAD + "[kernel.matmul_kernel.options]\nmaxnreg = true\n", ["maxnreg"]),
    (HEAD + "[options\n", ["not valid TOML"]),
    (HEAD.encode() + b"[options]\n# caf\xe9\n", ["not UTF-8", ":5:"]),
    (b"\xff\xfe[recipe]\n", ["not UTF-8"]),
]


def _write(tmp_path, text) -> str:
    path = tmp_path / "r.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, words", RECIPE_CASES, ids=[f"recipe{i}" for i in range(len(RECIPE_CASES))])
def test_bad_recipe_check_is_one_line_exit_2(capsys, tmp_path, text, words):
    path = _write(tmp_path, text)
    code, _, err = run_main(capsys, "recipes", "check", path)
    assert_one_error_line(code, err, "r.toml", *words)


@pytest.mark.parametrize(
    "argv, words",
    [
        (("recipes", "show", "no-such-recipe"), ["no-such-recipe"]),
        (("recipes", "show", "h100", "--variant", "no-such-variant"), ["no-such-variant"]),
        (("recipes", "check", "/nonexistent/r.toml"), ["r.toml"]),
    ],
    ids=["show-unknown", "show-unknown-variant", "check-missing-file"],
)
def test_bad_recipes_command_is_one_line_exit_2(capsys, argv, words):
    code, _, err = run_main(capsys, *argv)
    assert_one_error_line(code, err, *words)


def test_bad_recipe_through_dump_writes_nothing(capsys, tmp_path):
    path = _write(tmp_path, HEAD + "[options]\nnum_warps = 3\n")
    out = tmp_path / "out"
    code, _, err = run_main(capsys, "dump", str(VECTOR_ADD), "-s", ADD, "--recipe", path, "-o", str(out))
    assert_one_error_line(code, err, "num_warps")
    assert not out.exists()


def test_one_non_utf8_recipe_does_not_break_the_list(capsys, tmp_path, monkeypatch):
    (tmp_path / "latin.toml").write_bytes(HEAD.encode() + b"# caf\xe9\n")
    monkeypatch.setenv("IRSCOPE_RECIPES", str(tmp_path))
    code, out, err = run_main(capsys, "recipes", "list")
    assert code == 0, err
    latin = next(line for line in out.splitlines() if line.startswith("latin"))
    assert "not UTF-8" in latin
    assert any(line.startswith("h100") for line in out.splitlines())


# ------------------------------------------------------------------ the launch grammar (bench --args/--grid)

ARGS_CASES = [
    ("x=9**9**9", "too large"),
    ("x=2**63", "too large"),
    ("x=10**18*10", "too large"),
    ("x=1/0", "division by zero"),
    ("x=1//0", "division by zero"),
    ("x=7%0", "division by zero"),
    ("x=cdiv(4, 0)", "division by zero"),
    ("x=1e308*10", "not a finite number"),
    ("x=2.0**10000", "overflows"),
    ("x=(-8)**0.5", "not a real number"),
    ("x=" + "(" * 300 + "1" + ")" * 300, "cannot parse"),
    ("x=" + "-" * 5000 + "1", "at most 2000"),
    ("x=y", "unknown name 'y'"),
    ("x=a.b", "is not allowed"),
    ("x=__import__('os')", "is not allowed"),
    ("x=open('f')", "not a function of the grammar"),
    ("x=randn(4, fp32).data_ptr()", "is not allowed"),
    ("x=[1, 2]", "is not allowed"),
    ("x='text'", "is not allowed"),
    ("x=lambda: 1", "is not allowed"),
    ("x=randn(2**40, 2**40, fp32)", "GiB"),
    ("x=randn(4.5, fp32)", "positive integers"),
    ("x=randn(0, fp32)", "positive integers"),
    ("x=randn(4, 4, 4, 4, 4, 4, 4, 4, 4, fp32)", "at most 8"),
    ("x=randn(4096)", "needs a dtype last"),
    ("x=randn(4, fp32)[100:]", "offset"),
    ("x=randn(4, fp32), y=x+1", "needs numbers, not a tensor"),
    ("x=randn(4, fp32), y=size(x, 5)", "dimension 5"),
    ("x=min(fp16, 2)", "dtype is only the last argument"),
    ("x=cdiv(n=4, d=2)", "keyword"),
    ("x=", "empty expression"),
    ("4096", "expected NAME=VALUE"),
]


@pytest.mark.parametrize("text, words", ARGS_CASES, ids=[c[0][:40] for c in ARGS_CASES])
def test_bad_launch_args_are_bad_input_quickly(text, words):
    start = time.monotonic()
    with pytest.raises(BadInput) as e:
        launch.parse_args(text)
    assert time.monotonic() - start < 2
    assert words in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith("--args")


@pytest.mark.parametrize(
    "text, words",
    [
        ("0", "positive integers"),
        ("2**40", "at most 2147483647"),
        ("(1, 70000)", "at most 65535"),
        ("(1, 2, 3, 4)", "1 to 3"),
        ("1/0", "division by zero"),
        ("9**9**9", "too large"),
        ("M", "unknown name 'M'"),
        ("randn(4, fp32)", "positive integers"),
    ],
)
def test_bad_launch_grid_is_bad_input(text, words):
    with pytest.raises(BadInput) as e:
        launch.parse_grid(text, {})
    assert words in str(e.value) and str(e.value).startswith("--grid")


def test_the_launch_grammar_still_evaluates_what_is_valid():
    args = launch.parse_args(
        "M=4096, K=2**12, a=randn(M, K, fp16), off=a[8:], t=a.T, n=numel(a), s=stride(t, 0), "
        "c=cdiv(M, 128) * max(1, 2), f=-2**0.5, big=2**62"
    )
    assert args["K"] == 4096 and args["n"] == 4096 * 4096 and args["c"] == 64 and args["big"] == 2**62
    assert args["off"].offset == 8 and args["s"] == 1
    assert launch.parse_grid("(cdiv(M, 128), 2)", args) == (32, 2, 1)
