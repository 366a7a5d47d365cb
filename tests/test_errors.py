"""Bad input: one line, exit 2, no traceback, nothing written. Compile failures: stage + reason, exit 1."""

from __future__ import annotations

import pytest

from tests.helpers import DATA, MATMUL, VECTOR_ADD, run_in

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"


@pytest.mark.parametrize(
    "args, message",
    [
        (["dump", "nope.py", "--signature", SIG], "nope.py: no such file"),
        (["dump", str(DATA / "bad_syntax.py"), "--signature", "*fp32, i32"], "bad_syntax.py:6: syntax error"),
        (
            ["dump", str(DATA / "raises_on_import.py"), "--signature", "i32"],
            "raises_on_import.py:3: importing the file raised RuntimeError: this module refuses to load",
        ),
        (
            ["dump", str(VECTOR_ADD), "--kernel", "add_kernal", "--signature", SIG],
            "no kernel named 'add_kernal' (did you mean 'add_kernel'?)",
        ),
        (
            ["dump", str(DATA / "two_kernels.py"), "--signature", "*fp32, i32, 128"],
            "2 kernels, pick one with --kernel: scale_kernel, shift_kernel",
        ),
        (
            ["dump", str(VECTOR_ADD), "--signature", "*fp32, *fp33, *fp32, i32, 1024"],
            "signature element 2 (y_ptr): unknown pointer element type 'fp33'",
        ),
        (
            ["dump", str(VECTOR_ADD), "--signature", "*fp32, *fp32, i32, 1024"],
            "--signature has 4 elements but add_kernel takes 5",
        ),
        (["dump", str(VECTOR_ADD), "--signature", SIG, "--target", "h900"], "unknown target 'h900'"),
        (["dump", str(VECTOR_ADD), "--signature", SIG, "--set", "num_wrps=8"], "did you mean 'num_warps'"),
        (
            ["dump", str(VECTOR_ADD), "--signature", SIG, "--set", "num_warps=lots"],
            "num_warps=lots: expected an integer",
        ),
        (["dump", str(VECTOR_ADD), "--signature", SIG, "--set", "num_warps=3"], "num_warps"),
        (["dump", str(VECTOR_ADD)], "give a specialization"),
        (["dump", str(VECTOR_ADD), "--arg", "m=i32", "--signature", SIG], "has no parameter 'm'"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(capsys, tmp_path, args, message):
    out = tmp_path / "out"
    r = run_in(capsys, *args, "-o", str(out), cwd=tmp_path)
    assert r.code == 2, (r.out, r.err)
    lines = [
        line for line in r.err.splitlines() if line.strip() and "UserWarning" not in line and "warn_once" not in line
    ]
    assert len(lines) == 1, r.err
    assert message in lines[0]
    assert "Traceback" not in r.err
    assert not out.exists()


def test_debug_shows_the_traceback(cli, tmp_path):
    """A fresh process (the cli fixture): --debug lets the error out of main, as Python prints it."""
    r = cli("dump", str(VECTOR_ADD), "--signature", SIG, "--target", "h900", "--debug", cwd=tmp_path)
    assert r.code != 0 and "Traceback" in r.err


def test_python_error_in_kernel_names_stage_file_and_line(capsys, tmp_path):
    out = tmp_path / "out"
    r = run_in(capsys, "dump", str(DATA / "frontend_error.py"), "--signature", "*fp32, i32, 128", "-o", str(out))
    assert r.code == 1
    assert "compile failed in stage 'source'" in r.err
    assert "frontend_error.py:9" in r.err and "undefined_scale" in r.err
    assert "Traceback" not in r.err
    assert not out.exists()


def test_out_of_shared_memory_is_a_compile_failure(capsys, tmp_path):
    out = tmp_path / "out"
    # strides divisible by 16 let the pipeliner multi-buffer: 4 stages of 256x64 + 64x256 fp16 = 256 KiB
    huge = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 256, 256, 64, 8"
    r = run_in(
        capsys,
        "dump",
        str(MATMUL),
        "--signature",
        huge,
        "--target",
        "h100",
        "--set",
        "num_stages=4",
        "--set",
        "num_warps=8",
        "-o",
        str(out),
    )
    assert r.code == 1, r.err
    assert "stage 'resources'" in r.err and "262144 bytes of shared memory" in r.err and "232448" in r.err
    assert not out.exists()
