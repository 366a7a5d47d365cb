"""Bad input to `irscope diff` and `irscope sweep`: one line on stderr, exit 2, no traceback, nothing
written under -o; and the hardening of issue 19 (a side's compile failure is trouble and writes
neither side; dumps of one kernel from two files compare; a sweep refuses empty or repeated axes, a
bad --timeout/--jobs/-o/--write-recipe before compiling, and ranks an untimed --write-recipe).

Everything runs in this process through irscope.cli.main (Triton stays warm).
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest
from test_diff import error_lines, irscope

from tests.helpers import VECTOR_ADD, cache_dir

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"
VA = str(VECTOR_ADD)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))


def written(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """One real dump of vector_add, and doctored copies: another kernel, a broken manifest, an empty folder."""
    root = tmp_path_factory.mktemp("dumps")
    with cache_dir(root / "cache"):
        code, _, err = irscope("dump", VA, "-s", SIG, "-t", "cuda:90", "-o", root / "add")
    assert code == 0, err
    (add,) = (p.parent for p in (root / "add").glob("*/*/manifest.json"))
    other = root / "other"
    shutil.copytree(add, other)
    m = json.loads((other / "manifest.json").read_text())
    m["kernel"] = "other_kernel"
    (other / "manifest.json").write_text(json.dumps(m))
    broken = root / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json")
    (root / "empty").mkdir()
    (root / "a_file.txt").write_text("hello")
    return {"add": add, "other": other, "broken": broken, "empty": root / "empty", "file": root / "a_file.txt"}


F = ["-s", SIG, "-t", "cuda:90"]  # file mode: the shared request
AB = ["--a", "num_warps=4", "--b", "num_warps=8"]

# (id, argv with {add}/{other}/... placeholders, a word the message must hold); the old diff --time
# (a note, then the error) is in tests/test_cli_diff_commands.py
DIFF_CASES = [
    ("no-such-file", ["diff", "nosuch.py", *F, *AB], "nosuch.py"),
    ("nothing-to-compare", ["diff", VA, *F], "nothing to compare"),
    ("a-bad-num-warps", ["diff", VA, *F, "--a", "num_warps=3", "--b", "num_warps=4"], "side a"),
    ("b-bad-num-warps", ["diff", VA, *F, "--a", "num_warps=4", "--b", "num_warps=3"], "side b"),
    ("a-unknown-option", ["diff", VA, *F, "--a", "nosuch=1", "--b", "num_warps=4"], "nosuch"),
    ("b-no-equals", ["diff", VA, *F, "--a", "num_warps=4", "--b", "num_warps"], "num_warps"),
    ("a-not-a-number", ["diff", VA, *F, "--a", "num_warps=abc", "--b", "num_warps=4"], "num_warps"),
    ("a-empty-key", ["diff", VA, *F, "--a", "=4", "--b", "num_warps=4"], "--a"),
    ("a-target-unknown", ["diff", VA, "-s", SIG, "--a-target", "nosuch", "--b-target", "cuda:90"], "nosuch"),
    ("b-target-unknown", ["diff", VA, "-s", SIG, "--a-target", "cuda:90", "--b-target", "foo:bar"], "foo"),
    ("variant-without-recipe", ["diff", VA, *F, "--a-variant", "x", "--b-variant", "y"], "--recipe"),
    (
        "variant-unknown",
        ["diff", VA, "-s", SIG, "--recipe", "h100", "--a-variant", "nosuch", "--b-variant", "nosuch2"],
        "nosuch",
    ),
    ("recipe-unknown", ["diff", VA, "-s", SIG, "--recipe", "nosuch-recipe", *AB], "nosuch-recipe"),
    ("stage-unknown", ["diff", VA, *F, *AB, "--stage", "nosuch"], "nosuch"),
    ("stage-binary", ["diff", VA, *F, *AB, "--stage", "cubin"], "cubin"),
    ("context-negative", ["diff", VA, *F, *AB, "-U", "-1"], "-1"),
    ("context-not-a-number", ["diff", VA, *F, *AB, "-U", "abc"], "abc"),
    ("bad-signature", ["diff", VA, "-s", "*fp32, *fp32, bogus, i32, 1024", "-t", "cuda:90", *AB], "bogus"),
    ("signature-too-short", ["diff", VA, "-s", "*fp32", "-t", "cuda:90", *AB], "signature"),
    ("kernel-unknown", ["diff", VA, *F, "--kernel", "nosuch_kernel", *AB], "nosuch_kernel"),
    ("target-unknown", ["diff", VA, "-s", SIG, "-t", "nosuch", *AB], "nosuch"),
    ("folder-missing-b", ["diff", "{add}", "{tmp}/nope"], "no such folder"),
    ("folder-alone", ["diff", "{add}"], "second"),
    ("folder-with-a", ["diff", "{add}", "{add}", "--a", "num_warps=4"], "--a"),
    ("folder-with-target", ["diff", "{add}", "{add}", "-t", "cuda:90"], "--target"),
    ("folder-other-kernel", ["diff", "{add}", "{other}"], "different kernels"),
    ("folder-empty", ["diff", "{add}", "{empty}"], "not an irscope dump"),
    ("folder-a-file", ["diff", "{add}", "{file}"], "not a folder"),
    ("folder-broken-manifest", ["diff", "{add}", "{broken}"], "unreadable"),
    ("folder-stage-on-neither", ["diff", "{add}", "{add}", "--stage", "amdgcn"], "amdgcn"),
    ("folder-passes-missing", ["diff", "{add}", "{add}", "--passes"], "--passes"),
    ("folder-kernel-filter", ["diff", "{add}", "{add}", "--kernel", "nosuch_kernel"], "nosuch_kernel"),
]

S = ["sweep", VA, "-s", SIG, "-t", "cuda:90"]
SWEEP_CASES = [
    ("grid-no-values", [*S, "--axis", "num_warps=,,"], "no values"),
    ("grid-no-equals", [*S, "--axis", "num_warps"], "KEY=V1"),
    ("grid-no-key", [*S, "--axis", "=4,8"], "KEY=V1"),
    ("grid-empty-value", [*S, "--axis", "num_warps="], "KEY=V1"),
    ("grid-axis-twice", [*S, "--axis", "num_warps=4", "--axis", "num_warps=8"], "twice"),
    ("grid-value-twice", [*S, "--axis", "num_warps=4,4"], "twice"),
    ("grid-unknown-axis", [*S, "--axis", "nosuch=1,2"], "nosuch"),
    ("grid-not-a-number", [*S, "--axis", "num_warps=abc"], "num_warps"),
    ("grid-missing", [*S], "--axis"),
    ("grid-all-refused", [*S, "--axis", "num_warps=3,5"], "power of 2"),
    # one meaning per flag: --grid is the launch grid (as in bench); the old axes form names --axis
    ("old-grid-axes-form", [*S, "--grid", "BLOCK_SIZE=64,128"], "--axis BLOCK_SIZE=64,128"),
    ("old-grid-option-form", [*S, "--axis", "num_warps=4", "--grid", "num_warps=4,8"], "--axis num_warps=4,8"),
    ("old-launch-grid", [*S, "--axis", "num_warps=4,8", "--launch-grid", "4"], "--grid"),
    ("grid-without-time", [*S, "--axis", "num_warps=4,8", "--grid", "4"], "--time"),
    ("sort-unknown", [*S, "--axis", "num_warps=4,8", "--sort", "speed"], "speed"),
    ("timeout-zero", [*S, "--axis", "num_warps=4,8", "--timeout", "0"], "--timeout"),
    ("timeout-negative", [*S, "--axis", "num_warps=4,8", "--timeout", "-5"], "--timeout"),
    ("timeout-nan", [*S, "--axis", "num_warps=4,8", "--timeout", "nan"], "--timeout"),
    ("timeout-not-a-number", [*S, "--axis", "num_warps=4,8", "--timeout", "abc"], "abc"),
    ("jobs-zero", [*S, "--axis", "num_warps=4,8", "--jobs", "0"], "0"),
    ("jobs-negative", [*S, "--axis", "num_warps=4,8", "-j", "-2"], "-2"),
    ("top-zero", [*S, "--axis", "num_warps=4,8", "--top", "0"], "0"),
    ("out-under-a-file", [*S, "--axis", "num_warps=4,8", "-o", "{file}/out"], "not a folder"),
    ("time-without-gpu", [*S, "--axis", "num_warps=4,8", "--time"], "GPU"),
    ("time-args-without-grid", [*S, "--axis", "num_warps=4,8", "--time", "--args", "x_ptr=randn(1024, fp32)"], "GPU"),
    ("no-such-file", ["sweep", "nosuch.py", "-s", SIG, "--axis", "num_warps=4,8"], "nosuch.py"),
    ("bad-signature", ["sweep", VA, "-s", "*fp32, *fp32, bogus, i32, 1024", "--axis", "num_warps=4,8"], "bogus"),
    ("kernel-unknown", [*S, "--kernel", "nosuch_kernel", "--axis", "num_warps=4,8"], "nosuch_kernel"),
    ("pin-layout-syntax", [*S, "--axis", "num_warps=4,8", "--pin-layout", "zzz=#blocked"], "--pin-layout"),
    pytest.param(
        "write-recipe-folder",
        [*S, "--axis", "num_warps=4,8", "--write-recipe", "{tmp}"],
        "folder",
        id="write-recipe-folder",
    ),
    pytest.param(
        "write-recipe-no-parent",
        [*S, "--axis", "num_warps=4,8", "--write-recipe", "{tmp}/no/r.toml"],
        "not an existing folder",
        id="write-recipe-no-parent",
    ),
    pytest.param(
        "write-recipe-under-file",
        [*S, "--axis", "num_warps=4,8", "--write-recipe", "{file}/r.toml"],
        "not an existing folder",
        id="write-recipe-under-file",
    ),
]


def _fill(argv, dumps, tmp: Path) -> list[str]:
    names = {k: str(v) for k, v in dumps.items()} | {"tmp": str(tmp)}
    return [a.format(**names) if "{" in a and "}" in a and not a.startswith("*") else a for a in argv]


def _case(c):
    return c if hasattr(c, "marks") else pytest.param(*c, id=c[0])


@pytest.mark.parametrize("name, argv, word", [_case(c) for c in DIFF_CASES + SWEEP_CASES])
def test_bad_input_is_one_line_exit_2_nothing_written(name, argv, word, dumps, tmp_path):
    out = tmp_path / "out"
    argv = _fill(argv, dumps, tmp_path)
    if "-o" not in argv:
        argv += ["-o", str(out)]
    code, stdout, err = irscope(*argv)
    lines = error_lines(err)
    assert code == 2, (name, code, err, stdout[-2000:])
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("irscope: error:"), lines
    assert word.lower() in lines[0].lower(), lines[0]
    assert written(out) == [], written(out)


def test_at_least_40_cases():
    assert len(DIFF_CASES) + len(SWEEP_CASES) >= 40


# ---------------------------------------------------------------- diff: a side that fails to compile


def test_side_b_options_checked_before_side_a_compiles(tmp_path):
    code, _, err = irscope("diff", VA, *F, "--a", "num_warps=4", "--b", "num_warps=3", "-o", tmp_path / "o")
    assert code == 2 and "side b" in err and "power of 2" in err
    assert written(tmp_path / "o") == []


def test_dump_sides_writes_both_or_neither(tmp_path):
    from irscope import jobs
    from irscope.compare import sides

    request = jobs.Request(VECTOR_ADD, (), SIG, target="cuda:90")
    reqs = (sides.SideRequest("a", sets=["num_warps=4"]), sides.SideRequest("b", sets=["ptx_version=99"]))
    side_jobs = sides.side_jobs(request, reqs)
    with pytest.raises(sides.SideFailed) as e:
        sides.dump_sides(side_jobs, reqs, tmp_path / "o", False, True)
    assert e.value.exit_code == 2 and str(e.value).startswith("side b (ptx_version=99)")
    assert "compile failed in stage" in str(e.value)
    assert not (tmp_path / "o").exists()

    reqs = (sides.SideRequest("a", sets=["num_warps=4"]), sides.SideRequest("b", sets=["num_warps=8"]))
    a, b = sides.dump_sides(sides.side_jobs(request, reqs), reqs, tmp_path / "o", False, True)
    assert a.folder.parent.parent == tmp_path / "o" and (a.folder / "manifest.json").is_file()
    assert (b.folder / "manifest.json").is_file() and a.folder != b.folder
    assert not [p for p in (tmp_path / "o").iterdir() if p.name.startswith(".")]  # no staging left


def test_cli_side_b_compile_failure_writes_nothing(tmp_path):
    code, _, err = irscope("diff", VA, *F, "--b", "ptx_version=99", "-o", tmp_path / "o")
    assert code == 2 and "side b" in err
    assert written(tmp_path / "o") == []


# ---------------------------------------------------------------- diff: one kernel from two files


def test_same_kernel_from_two_files_compares(tmp_path):
    source = VECTOR_ADD.read_text()
    (tmp_path / "kernels.py").write_text(source)
    (tmp_path / "kernels_v2.py").write_text("# an edited copy\n\n" + source.replace("offsets", "idx"))
    for name in ("kernels", "kernels_v2"):
        code, _, err = irscope("dump", tmp_path / f"{name}.py", *F, "-o", tmp_path / name)
        assert code == 0, err
    a, b = (next((tmp_path / n).glob("*/*/manifest.json")).parent for n in ("kernels", "kernels_v2"))
    code, out, err = irscope("diff", a, b, "--json")
    assert code == 0, err  # a renamed local is no difference after normalisation
    doc = json.loads(out)
    assert doc["sources_differ"] is True
    assert doc["files"]["a"].endswith("kernels.py") and doc["files"]["b"].endswith("kernels_v2.py")
    code, out, err = irscope("diff", a, b)
    assert "from two files, sources differ" in out and "kernels_v2.py" in out

    (tmp_path / "kernels_v2.py").write_text("# an edited copy\n\n" + source)  # the kernel itself unchanged
    code, _, err = irscope("dump", tmp_path / "kernels_v2.py", *F, "-o", tmp_path / "same")
    same = next((tmp_path / "same").glob("*/*/manifest.json")).parent
    code, out, err = irscope("diff", a, same, "--json")
    assert code == 0 and json.loads(out)["sources_differ"] is False, err


# ---------------------------------------------------------------- sweep


def test_sweep_bad_layout_pin_for_every_config_is_exit_2(tmp_path):
    code, out, err = irscope(
        *S, "--axis", "num_warps=1,2", "-j", "1", "--pin-layout", "nosuch:order=[0]", "-o", tmp_path / "o"
    )
    assert code == 2, (out, err)
    lines = error_lines(err)
    assert len(lines) == 1 and "every config" in lines[0] and "no layout #nosuch" in lines[0]
    assert written(tmp_path / "o") == []


def test_sweep_readonly_output_refused(tmp_path, monkeypatch):
    real = os.access
    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == ro else real(p, mode, **kw))
    code, _, err = irscope(*S, "--axis", "num_warps=4,8", "-o", ro / "out")
    assert code == 2 and "cannot write in" in err and len(error_lines(err)) == 1


def test_sweep_table_shows_the_whole_reason():
    from rich.console import Console

    from irscope.kernel.settings import Settings
    from irscope.sweep.configs import Config
    from irscope.views.sweep import sweep_table

    reason = "stage ttgir: " + "a long reason " * 20 + "THE END"
    cfg = Config(
        0, "num_warps=4", {"num_warps": 4}, None, Settings.__new__(Settings), status="compile failed", reason=reason
    )
    con = Console(width=100, record=True, file=io.StringIO())
    sweep_table([cfg], out=con)
    text = con.export_text()
    assert "THE END" in text and "1 compile failed" in text


def test_untimed_write_recipe_ranks_statically(tmp_path):
    recipe = tmp_path / "r.toml"
    code, out, err = irscope(*S, "--axis", "num_warps=1,2,4", "--write-recipe", recipe, "-o", tmp_path / "o")
    assert code == 0, err
    text = recipe.read_text()
    assert "not timed" in text and "fewest spills, then occupancy" in text
    # num_warps=1 is the grid's first config but has the lowest occupancy: not the best
    best = text.split("[variant.sweep-best]")[1].split("[variant.")[0]
    assert "num_warps = 1" not in best, text
