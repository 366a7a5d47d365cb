"""Bad input, refused early and in one line (issue 19, hardening): kernel files of every kind, the
signature grammar, --arg/--const, targets, --set, -o, --stage/--json, --load-timeout, --script-log,
and the commands dump, passes, signature and capture. Plus the fixes that make odd but valid input
work: a kernel file named after a standard-library module, a short signature completed by --const,
a script that closes stdout or calls os._exit."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers import DATA, EXAMPLES, MATMUL, ROOT, VECTOR_ADD, run_cli, run_in

# capture runs scripts that make torch tensors: without torch (the README's plain install) they skip
needs_torch = pytest.mark.torch  # capture scripts import torch
VA = str(VECTOR_ADD)
SIG = "*fp32, *fp32, *fp32, i32:16, 1024"
SCRIPT = str(EXAMPLES / "scripts" / "vector_add.py")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Odd files to hand irscope, made once."""
    d = tmp_path_factory.mktemp("inputs")
    shutil.copy(VECTOR_ADD, d / "va.txt")
    shutil.copy(VECTOR_ADD, d / "va")
    (d / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (d / "exits0.py").write_text("import sys\nsys.exit(0)\n")
    (d / "nul.py").write_text("x = 1\n\0\n")
    (d / "empty.py").write_text("")
    (d / "nokernel.py").write_text("def f():\n    return 1\n")
    (d / "big.py").write_text("#" * (5 * 2**20) + "\n")
    (d / "afile").write_text("not a folder\n")
    (d / "folder").mkdir()
    (d / "folder.py").mkdir()
    os.mkfifo(d / "fifo.py")
    os.mkfifo(d / "fifo.log")
    (d / "nolaunch.py").write_text("print('hello')\n")
    return d


def _cases():
    """(id, argv) — {d} is the files folder, {o} the output folder of the case."""
    dump = ["dump", VA, "-s", SIG, "-o", "{o}"]
    va = ["dump", VA, "-o", "{o}"]
    cases = {
        # kernel files of every kind (dump)
        "file-missing": ["dump", "{d}/missing.py", "-s", SIG, "-o", "{o}"],
        "file-txt": ["dump", "{d}/va.txt", "-s", SIG, "-o", "{o}"],
        "file-no-suffix": ["dump", "{d}/va", "-s", SIG, "-o", "{o}"],
        "file-dev-null": ["dump", "/dev/null", "-s", SIG, "-o", "{o}"],
        "file-dev-zero": ["dump", "/dev/zero", "-s", SIG, "-o", "{o}"],
        "file-fifo": ["dump", "{d}/fifo.py", "-s", SIG, "-o", "{o}"],
        "file-folder": ["dump", "{d}/folder", "-s", SIG, "-o", "{o}"],
        "file-folder-py": ["dump", "{d}/folder.py", "-s", SIG, "-o", "{o}"],
        "file-too-large": ["dump", "{d}/big.py", "-s", SIG, "-o", "{o}"],
        "file-nul-byte": ["dump", "{d}/nul.py", "-s", SIG, "-o", "{o}"],
        "file-syntax": ["dump", str(DATA / "bad_syntax.py"), "-s", SIG, "-o", "{o}"],
        "file-raises": ["dump", str(DATA / "raises_on_import.py"), "-s", SIG, "-o", "{o}"],
        "file-sys-exit-3": ["dump", "{d}/exits.py", "-s", SIG, "-o", "{o}"],
        "file-sys-exit-0": ["dump", "{d}/exits0.py", "-s", SIG, "-o", "{o}"],
        "file-empty": ["dump", "{d}/empty.py", "-s", SIG, "-o", "{o}"],
        "file-no-kernel": ["dump", "{d}/nokernel.py", "-s", SIG, "-o", "{o}"],
        "kernel-unknown": [*dump, "--kernel", "nope"],
        # the signature grammar
        "sig-int-hint-0": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32:0, 1024", "-o", "{o}"],
        "sig-int-hint-empty": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32:, 1024", "-o", "{o}"],
        "sig-int-hint-2": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32:2, 1024", "-o", "{o}"],
        "sig-int-hint-word": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32:abc, 1024", "-o", "{o}"],
        "sig-ptr-align-empty": ["dump", VA, "-s", "*fp32:, *fp32, *fp32, i32, 1024", "-o", "{o}"],
        "sig-ptr-align-0": ["dump", VA, "-s", "*fp32:0, *fp32, *fp32, i32, 1024", "-o", "{o}"],
        "sig-ptr-align-3": ["dump", VA, "-s", "*fp32:3, *fp32, *fp32, i32, 1024", "-o", "{o}"],
        "sig-ptr-align-word": ["dump", VA, "-s", "*fp32:16:big, *fp32, *fp32, i32, 1024", "-o", "{o}"],
        "sig-ptr-dtype": ["dump", VA, "-s", "*fp99, *fp32, *fp32, i32, 1024", "-o", "{o}"],
        "sig-float-hint": ["dump", VA, "-s", "*fp32, *fp32, *fp32, fp32:16, 1024", "-o", "{o}"],
        "sig-bool-hint": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i1:1, 1024", "-o", "{o}"],
        "sig-word-constexpr": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32, constexpr", "-o", "{o}"],
        "sig-empty-element": ["dump", VA, "-s", "*fp32,, *fp32, i32, 1024", "-o", "{o}"],
        "sig-empty": ["dump", VA, "-s", "", "-o", "{o}"],
        "sig-too-many": ["dump", VA, "-s", SIG + ", 1", "-o", "{o}"],
        "sig-too-few": ["dump", VA, "-s", "*fp32, *fp32, *fp32", "-o", "{o}"],
        "sig-short-const-gap": ["dump", VA, "-s", "*fp32, *fp32, *fp32", "--const", "BLOCK_SIZE=1024", "-o", "{o}"],
        "sig-type-for-constexpr": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32, i32", "-o", "{o}"],
        "sig-call": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32, foo(1)", "-o", "{o}"],
        "sig-import": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32, __import__('os')", "-o", "{o}"],
        "sig-not-layout": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32, gl.Nope([1])", "-o", "{o}"],
        "sig-unreadable": ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32, 12abc", "-o", "{o}"],
        # --arg / --const
        "arg-no-equals": [*va, "--arg", "n_elements", "--const", "BLOCK_SIZE=1024"],
        "arg-unknown": [*va, "--arg", "nope=i32", "--const", "BLOCK_SIZE=1024"],
        "arg-empty-name": [*va, "--arg", "=i32", "--const", "BLOCK_SIZE=1024"],
        "arg-twice": [*dump, "--arg", "n_elements=i32", "--arg", "n_elements=i32:16"],
        "const-twice": [*dump, "--const", "BLOCK_SIZE=512", "--const", "BLOCK_SIZE=1024"],
        "arg-and-const-same": [*dump, "--arg", "BLOCK_SIZE=1024", "--const", "BLOCK_SIZE=1024"],
        "arg-hint-0": [*dump, "--arg", "n_elements=i32:0"],
        "arg-bad-ptr": [*dump, "--arg", "x_ptr=*fp99"],
        "const-unknown": [*va, "-s", "*fp32, *fp32, *fp32, i32", "--const", "BLOCK=1024"],
        "const-code": [*dump, "--const", "BLOCK_SIZE=os.system('true')"],
        "arg-type-for-constexpr": [*va, "-s", "*fp32, *fp32, *fp32, i32", "--arg", "BLOCK_SIZE=i32"],
        "args-missing": [*va, "--arg", "x_ptr=*fp32"],
        # targets
        "target-empty": [*dump, "--target", ""],
        "target-blank": [*dump, "--target", " "],
        "target-unknown": [*dump, "--target", "h1000"],
        "target-cuda-bad": [*dump, "--target", "cuda:00"],
        "target-cuda-empty": [*dump, "--target", "cuda:"],
        "target-hip-bad": [*dump, "--target", "hip:gfx000"],
        # --set
        "set-no-equals": [*dump, "--set", "num_warps"],
        "set-unknown": [*dump, "--set", "nope=1"],
        "set-not-int": [*dump, "--set", "num_warps=abc"],
        "set-empty-key": [*dump, "--set", "=4"],
        "set-empty": [*dump, "--set", ""],
        # -o
        "out-empty": ["dump", VA, "-s", SIG, "-o", ""],
        "out-file": ["dump", VA, "-s", SIG, "-o", "{d}/afile"],
        "out-under-file": ["dump", VA, "-s", SIG, "-o", "{d}/afile/sub"],
        "out-dev-null": ["dump", VA, "-s", SIG, "-o", "/dev/null"],
        "out-proc": ["dump", VA, "-s", SIG, "-o", "/proc/irscope-x"],
        "passes-out-file": ["passes", VA, "-s", SIG, "-o", "{d}/afile"],
        "passes-out-proc": ["passes", VA, "-s", SIG, "-o", "/proc/irscope-x"],
        "passes-out-empty": ["passes", VA, "-s", SIG, "-o", ""],
        # --stage / --json
        "stage-unknown": [*dump, "--stage", "nope"],
        "stage-and-json": [*dump, "--stage", "ptx", "--json"],
        "capture-stage-and-json": ["capture", SCRIPT, "-o", "{o}", "--stage", "ptx", "--json"],
        "capture-stage-other-vendor": ["capture", SCRIPT, "-o", "{o}", "--stage", "amdgcn"],
        # --load-timeout
        "timeout-0": [*dump, "--load-timeout", "0"],
        "timeout-negative": [*dump, "--load-timeout", "-1"],
        "timeout-nan": [*dump, "--load-timeout", "nan"],
        "timeout-inf": [*dump, "--load-timeout", "inf"],
        "timeout-word": [*dump, "--load-timeout", "soon"],
        "timeout-empty": [*dump, "--load-timeout", ""],
        "passes-timeout-0": ["passes", VA, "-s", SIG, "-o", "{o}", "--load-timeout", "0"],
        # --script-log and capture
        "log-empty": ["capture", SCRIPT, "-o", "{o}", "--script-log", ""],
        "log-folder": ["capture", SCRIPT, "-o", "{o}", "--script-log", "{d}/folder"],
        "log-no-folder": ["capture", SCRIPT, "-o", "{o}", "--script-log", "{d}/missing/log.txt"],
        "log-under-file": ["capture", SCRIPT, "-o", "{o}", "--script-log", "{d}/afile/log.txt"],
        "log-proc": ["capture", SCRIPT, "-o", "{o}", "--script-log", "/proc/irscope-x/log"],
        "log-fifo": ["capture", SCRIPT, "-o", "{o}", "--script-log", "{d}/fifo.log"],
        "log-with-signature": [*dump, "--script-log", "{o}.log"],
        "args-with-signature": [*dump, "--", "--size", "4"],
        "compile-only-with-signature": [*dump, "--compile-only"],
        "capture-out-file": ["capture", SCRIPT, "-o", "{d}/afile"],
        "capture-out-proc": ["capture", SCRIPT, "-o", "/proc/irscope-x"],
        "capture-missing": ["capture", "{d}/missing.py", "-o", "{o}"],
        "capture-fifo": ["capture", "{d}/fifo.py", "-o", "{o}"],
        "capture-dev-zero": ["capture", "/dev/zero", "-o", "{o}"],
        "capture-folder": ["capture", "{d}/folder", "-o", "{o}"],
        "capture-too-large": ["capture", "{d}/big.py", "-o", "{o}"],
        "capture-no-launch": ["capture", "{d}/nolaunch.py", "-o", "{o}"],
        "capture-exits": ["capture", "{d}/exits.py", "-o", "{o}"],
        "capture-target-empty": ["capture", SCRIPT, "-o", "{o}", "--target", ""],
        "capture-set-unknown": ["capture", SCRIPT, "-o", "{o}", "--set", "nope=1"],
        # passes
        "passes-bad-regex": ["passes", VA, "-s", SIG, "-o", "{o}", "--first", "("],
        "passes-not-a-dump": ["passes", "{d}/folder"],
        "passes-txt": ["passes", "{d}/va.txt", "-s", SIG, "-o", "{o}"],
        "passes-sig": ["passes", VA, "-s", "*fp32, *fp32, *fp32, i32:0, 1024", "-o", "{o}"],
        # signature
        "signature-missing": ["signature", "{d}/missing.py"],
        "signature-txt": ["signature", "{d}/va.txt"],
        "signature-dev-null": ["signature", "/dev/null"],
        "signature-fifo": ["signature", "{d}/fifo.py"],
        "signature-folder": ["signature", "{d}/folder"],
        "signature-exits": ["signature", "{d}/exits.py"],
        "signature-no-kernel": ["signature", "{d}/nokernel.py"],
        "signature-kernel-unknown": ["signature", VA, "--kernel", "nope"],
        "signature-timeout-0": ["signature", VA, "--load-timeout", "0"],
        "signature-timeout-word": ["signature", VA, "--load-timeout", "x"],
    }
    return cases


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_exit_2(name, files, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a default -o (irscope-out) would land here: it must not appear
    out = tmp_path / "out"
    argv = [a.replace("{d}", str(files)).replace("{o}", str(out)) for a in CASES[name]]
    code, stdout, err = run_in(capsys, *argv)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (name, code, err)
    assert "Traceback" not in err
    errors = [line for line in lines if line.startswith("irscope: error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], (name, err)
    assert not out.exists(), (name, list(out.rglob("*")))
    assert not (tmp_path / "irscope-out").exists()


def test_the_table_is_large_enough():
    assert len(CASES) >= 70


def test_messages_say_what_was_wrong(files, tmp_path, capsys):
    o = str(tmp_path / "o")
    checks = [
        (["dump", f"{files}/va.txt", "-s", SIG, "-o", o], "not a .py file"),
        (["dump", "/dev/zero", "-s", SIG, "-o", o], "not a regular file"),
        (["dump", f"{files}/big.py", "-s", SIG, "-o", o], "too large"),
        (["dump", f"{files}/exits.py", "-s", SIG, "-o", o], "exited with status 3 while being imported"),
        (["dump", VA, "-s", "*fp32, *fp32, *fp32, i32:0, 1024", "-o", o], ":16 (divisible by 16) or :1"),
        ([*("dump", VA, "-s", SIG, "-o", o), "--arg", "n_elements=i32", "--arg", "n_elements=i32:16"], "already given"),
        (["dump", VA, "-s", SIG, "-o", f"{files}/afile"], "not a folder"),
        (["dump", VA, "-s", SIG, "-o", "/proc/irscope-x"], "cannot write"),
        (["dump", VA, "-s", SIG, "--target", "", "-o", o], "--target: empty"),
    ]
    for argv, words in checks:
        code, _, err = run_in(capsys, *argv)
        assert code == 2 and words in err, (argv, err)


def test_a_file_that_loops_at_import_is_stopped(tmp_path):
    loop = tmp_path / "loop.py"
    loop.write_text("while True:\n    pass\n")
    r = run_cli("dump", str(loop), "-s", SIG, "--load-timeout", "1", "-o", str(tmp_path / "o"))
    assert r.code == 2, r.err
    assert "longer than 1 s" in r.err and "loop.py" in r.err and "Traceback" not in r.err
    assert not (tmp_path / "o").exists()


def test_a_fifo_does_not_hang(files, capsys):
    r = run_in(capsys, "dump", str(files / "fifo.py"), "-s", SIG)
    assert r.code == 2 and "not a regular file" in r.err


@pytest.mark.parametrize("stem", ["math", "numbers", "random", "types", "inspect"])
def test_kernel_file_named_after_a_stdlib_module(stem, tmp_path, capsys, monkeypatch):
    # the file's folder stays first on this process's sys.path (as `python file.py` has it), guarded by
    # irscope's finder here; a process spawned later by another test would not have the guard
    monkeypatch.setattr(sys, "path", list(sys.path))
    shutil.copy(VECTOR_ADD, tmp_path / f"{stem}.py")
    std = sys.modules.get(stem)
    code, out, err = run_in(
        capsys, "dump", str(tmp_path / f"{stem}.py"), "-s", SIG, "-o", str(tmp_path / "o"), "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kernels"][0]["name"] == "add_kernel"
    assert sys.modules.get(stem) is std  # the real module is still the real one
    if stem == "numbers":
        import numbers

        assert hasattr(numbers, "Number")


def test_loaded_module_name_is_private(tmp_path):
    from irscope.kernel import loader

    shutil.copy(VECTOR_ADD, tmp_path / "os.py")
    module = loader.load_module(tmp_path / "os.py")
    assert module.__name__.startswith("irscope_kernel_") and module.__name__.endswith("_os")
    assert sys.modules["os"] is os
    ref = loader.select_kernels(tmp_path / "os.py", None)[0]
    assert ref.fn.module == module.__name__ and ref.file == tmp_path / "os.py"


def test_short_signature_completed_by_const(tmp_path, capsys):
    code, out, err = run_in(
        capsys,
        "dump",
        VA,
        "-s",
        "*fp32, *fp32, *fp32, i32:16",
        "--const",
        "BLOCK_SIZE=1024",
        "-o",
        str(tmp_path / "o"),
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["kernels"][0]["signature"] == "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"


def test_positional_and_named_for_one_parameter_is_allowed(tmp_path, capsys):
    code, out, err = run_in(
        capsys,
        "dump",
        VA,
        "-s",
        "*fp32, *fp32, *fp32, i32, 1024",
        "--arg",
        "n_elements=i32:16",
        "-o",
        str(tmp_path / "o"),
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["kernels"][0]["signature"].endswith("i32:16, 1024")


def test_passes_first_echoes_the_pattern_as_given(tmp_path, capsys):
    code, out, err = run_in(capsys, "passes", VA, "-s", SIG, "-o", str(tmp_path / "o"), "--first", r"tt\.load")
    assert code == 0, err
    assert "'tt\\.load'" in out and "\\\\" not in out


def test_dump_summary_describes_the_source(tmp_path, capsys):
    code, out, err = run_in(capsys, "dump", VA, "-s", SIG, "-o", str(tmp_path / "o"))
    assert code == 0, err
    source = next(line for line in out.splitlines() if line.strip().startswith("source"))
    assert "the kernel's Python source" in source and "frontend" not in source


def test_signature_command(tmp_path, capsys):
    code, out, err = run_in(capsys, "signature", str(MATMUL), "--kernel", "matmul_kernel", "--json")
    assert code == 0, err
    k = json.loads(out)["kernels"][0]
    assert [p["name"] for p in k["params"]][:3] == ["a_ptr", "b_ptr", "c_ptr"]
    assert k["params"][0]["element"] == "*fp32:16" and k["params"][3]["element"] == "i32"
    assert k["params"][12]["constexpr"] is True
    kernel = tmp_path / "k.py"
    kernel.write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def k(x_ptr, n, BLOCK: tl.constexpr = 256):\n    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n"
    )
    code, out, err = run_in(capsys, "signature", str(kernel))
    assert code == 0, err
    template = re.search(r'--signature "([^"]+)"', out).group(1)
    assert template == "*fp32:16, i32, 256"
    code, out, err = run_in(capsys, "dump", str(kernel), "-s", template, "-o", str(tmp_path / "o"), "--json")
    assert code == 0, err


def test_readme_first_example_runs_as_written(tmp_path, capsys):
    text = (ROOT / "README.md").read_text()
    line = next(line for line in text.splitlines() if "irscope dump examples/matmul.py" in line)
    command = line.split(".venv/bin/irscope ", 1)[1]
    assert "i32:16" in command
    (tmp_path / "examples").mkdir()
    shutil.copy(MATMUL, tmp_path / "examples" / "matmul.py")
    import shlex

    r = run_in(capsys, *shlex.split(command), cwd=tmp_path)
    assert r.code == 0, r.err
    assert "matmul_kernel" in r.out and (tmp_path / "irscope-out").is_dir()


def _script(tmp_path, tail: str):
    lines = (EXAMPLES / "scripts" / "vector_add.py").read_text().splitlines()
    head = lines[: next(i for i, line in enumerate(lines) if "x = torch.rand" in line) + 1]
    path = tmp_path / "s.py"
    path.write_text("\n".join(head) + "\n    add(x, x)\n" + tail)
    return path


@needs_torch
def test_capture_survives_os_exit(tmp_path):
    script = _script(tmp_path, "    import os\n    os._exit(0)\n")
    r = run_cli("capture", str(script), "-o", str(tmp_path / "o"))
    assert r.code == 0, r.err
    assert "os._exit(0)" in r.err and "add_kernel" in r.out
    assert list((tmp_path / "o" / "captures").glob("add_kernel-*.json"))


@needs_torch
def test_capture_survives_a_closed_stdout(tmp_path):
    script = _script(tmp_path, "    import sys\n    sys.stdout.close()\n")
    r = run_cli("capture", str(script), "-o", str(tmp_path / "o"), "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["kernels"]


@needs_torch
def test_capture_warns_that_pins_do_not_apply(tmp_path, capsys):
    r = run_in(capsys, "capture", SCRIPT, "-o", str(tmp_path / "o"), "--pin-loop", "*:num_stages=2")
    assert r.code == 0, r.err
    assert "irscope: warning: --pin-loop does not apply to a capture" in r.err


def test_a_stage_of_the_other_vendor_is_refused_before_compiling(tmp_path, monkeypatch):
    """--stage amdgcn for a cuda target: one line, exit 2, and nothing compiled (the cache stays empty)."""
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    r = run_in(
        None,
        "dump",
        str(VECTOR_ADD),
        "-s",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "-t",
        "h100",
        "--stage",
        "amdgcn",
        "-o",
        str(tmp_path / "out"),
    )
    assert r.code == 2 and "cuda:90 has no amdgcn stage" in r.err, r.err
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_a_set_without_a_key_says_what_a_set_looks_like(tmp_path):
    r = run_in(
        None,
        "dump",
        str(VECTOR_ADD),
        "-s",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "--set",
        "=4",
        "-o",
        str(tmp_path / "out"),
    )
    assert r.code == 2 and "expected KEY=VALUE" in r.err, r.err


def test_a_passes_folder_that_lost_a_file_is_one_line(tmp_path):
    out = tmp_path / "out"
    r = run_in(
        None,
        "dump",
        str(VECTOR_ADD),
        "-s",
        "*fp32, *fp32, *fp32, i32:16, 1024",
        "-t",
        "h100",
        "--passes",
        "-o",
        str(out),
        "--json",
    )
    assert r.code == 0, r.err
    folder = Path(json.loads(r.out)["kernels"][0]["folder"])
    victim = sorted((folder / "passes").glob("*.mlir"))[2]
    victim.unlink()
    for extra in ([], ["--first", "ld.global"]):
        r = run_in(None, "passes", str(folder), *extra)
        assert r.code == 2 and victim.name in r.err and "dump --passes again" in r.err, r.err
        assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1
