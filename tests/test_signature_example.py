"""`irscope signature`: the template, and a filled example that runs as pasted (issue #38, item 5)."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.helpers import EXAMPLES, FBTRITON, MATMUL, run_in


def _example_line(out: str) -> str:
    lines = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("irscope dump ") and "'" in ln]
    assert len(lines) == 1, out
    return lines[0]


def test_matmul_example_runs_as_printed_and_dumps(tmp_path):
    r = run_in(None, "signature", str(MATMUL), "--kernel", "matmul_kernel")
    assert r.code == 0, r.err
    assert "<BLOCK_M>" in r.out  # the template keeps its placeholders
    line = _example_line(r.out)
    argv = shlex.split(line)
    assert argv[:2] == ["irscope", "dump"]
    sig = argv[argv.index("--signature") + 1]
    # the README's specialization: sizes and row strides i32:16, each tensor's inner stride i32:1
    assert sig.split(", ")[3:12] == ["i32:16"] * 4 + ["i32:1", "i32:16", "i32:1", "i32:16", "i32:1"]
    assert "<" not in sig and " i32," not in sig
    run = run_in(None, *argv[1:], cwd=tmp_path, env={"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")})
    assert run.code == 0, run.err
    assert "ttgir" in run.out and "64, 64, 64, 8" in run.out


def test_example_fills_every_kind_of_parameter(tmp_path):
    kernel = tmp_path / "k k.py"  # a space: the printed path is quoted for the shell
    kernel.write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def k(x_ptr, y_ptr, n, stride_x, stride_ym, stride_yn, BLOCK: tl.constexpr, HAS_BIAS: tl.constexpr,\n"
        "      NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr, SCALE: tl.constexpr = 3):\n"
        "    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n"
    )
    r = run_in(None, "signature", str(kernel), "--json")
    assert r.code == 0, r.err
    k = json.loads(r.out)["kernels"][0]
    assert k["signature"] == ("*fp32:16, *fp32:16, i32, i32, i32, i32, <BLOCK>, <HAS_BIAS>, <NUM_STAGES>, <GROUP_M>, 3")
    # one stride of x: a row stride (16); y's last stride is its inner one (1)
    assert k["example"] == "*fp32:16, *fp32:16, i32:16, i32:16, i32:16, i32:1, 64, False, 2, 8, 3"
    assert shlex.split(k["example_command"])[2] == str(kernel)
    run = run_in(
        None, *shlex.split(k["example_command"])[1:], cwd=tmp_path, env={"IRSCOPE_CACHE_DIR": str(tmp_path / "c")}
    )
    assert run.code == 0, run.err


def test_every_example_kernel_has_a_filled_signature():
    r = run_in(None, "signature", str(EXAMPLES / "persistent_matmul.py"), "--json")
    assert r.code == 0, r.err
    for k in json.loads(r.out)["kernels"]:
        assert "<" not in k["example"] and "i32," not in k["example"] + ",", k["example"]
        assert k["example"].endswith("False, False")  # WARP_SPECIALIZE, FLATTEN: flags, off


@pytest.mark.skipif(FBTRITON, reason="fbtriton 3.7.4's Gluon differs (see tests/helpers.FB_GLUON_LOAD)")
def test_a_gluon_matmul_example_is_16_bit_and_compiles(tmp_path):
    r = run_in(None, "signature", str(EXAMPLES / "gluon_persistent_matmul.py"), "--kernel", "matmul_pipelined_kernel")
    assert r.code == 0, r.err
    argv = shlex.split(_example_line(r.out))
    assert argv[argv.index("--signature") + 1].startswith("*fp16:16, *fp16:16, *fp16:16, i32:16")
    run = run_in(None, *argv[1:], cwd=tmp_path, env={"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")})
    assert run.code == 0, run.err
