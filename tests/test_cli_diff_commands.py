"""One command per comparison (issue #37 items 1, 2): `diff` (two compiles, or two dump folders),
`diff-releases` (across Triton releases), `frontier` (two capture folders), `diff-profiles` (two measured
dumps), and timing through `bench`. The old spellings under `diff` still work for this release: one note
line on stderr naming the new command, then the new command's own output and exit status.

A "release" here is the running interpreter given by its path (--a-triton PYTHON): its worker dumps as
another release's would, with no env made and no package index asked.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, VECTOR_ADD, run_in

SIG = "*fp32, *fp32, *fp32, i32, 1024"
F = [str(VECTOR_ADD), "-k", "add_kernel", "-s", SIG, "-t", "cuda:90"]
PY = sys.executable


def note(old: str, new: str) -> str:
    return f"irscope: note: 'irscope {old}' is now 'irscope {new}'; the old form goes away in the next release"


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    """examples/scripts/vector_add.py captured on the stand-in H100 (one kernel: add_kernel)."""
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("cap") / "cap"
    r = run_in(
        None,
        "dump",
        str(ROOT / "examples/scripts/vector_add.py"),
        "--target",
        "h100",
        "--compile-only",
        "-o",
        str(folder),
    )
    assert r.code == 0, r.err
    return folder


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dumps")
    got = {}
    for warps in (4, 8):
        r = run_in(None, "dump", *F, "--set", f"num_warps={warps}", "-o", str(root / f"w{warps}"), "--json")
        assert r.code == 0, r.err
        got[f"w{warps}"] = Path(json.loads(r.out)["kernels"][0]["folder"])
    return got


# ---------------------------------------------------------------- the commands' shape


# (the commands' size is tests/test_cli_shape.py's, for every module of irscope/cli with one measure)


@pytest.mark.parametrize(
    "command,example",
    [
        ("diff", "irscope diff k.py -s SIG --a num_warps=4 --b num_warps=8"),
        ("diff", "irscope diff-releases k.py"),
        ("diff", "irscope bench k.py"),
        ("diff-releases", "irscope diff-releases CAPTURE_DIR --a-triton 3.6.0 --b-triton 3.9.0"),
        ("frontier", "irscope frontier inductor liger"),
        ("diff-profiles", "irscope diff-profiles ns1 ns3"),
    ],
)
def test_help_shows_the_new_forms(command, example):
    r = run_in(None, command, "--help")
    assert r.code == 0 and example in r.out, r.out


def test_diff_help_hides_the_old_options():
    options = run_in(None, "diff", "--help").out.split("Options:")[1]
    for old in ("--a-triton", "--b-triton", "--profile", "--time", "--args", "--grid", "--max-seconds"):
        assert old not in options, old
    assert "--a-variant" in options and "--html" in options


@pytest.mark.parametrize(
    "argv,option",
    [
        (["frontier", "A", "B", "--stage", "ptx"], "--stage"),
        (["frontier", "A", "B", "--a", "num_warps=4"], "--a"),
        (["diff-profiles", "A", "B", "--passes"], "--passes"),
        (["diff-releases", *F, "--a-triton", PY, "--time"], "--time"),
        (["diff-releases", *F, "--a-triton", PY, "DIR_B"], "DIR_B"),
    ],
)
def test_an_option_that_does_not_apply_does_not_exist(argv, option, tmp_path):
    r = run_in(None, *argv, cwd=tmp_path)
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and lines[0].startswith("irscope: error:"), r.err
    assert option in lines[0] and list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- diff: two compiles, two folders


def test_two_compiles_keep_each_sides_dump_result(tmp_path):
    """The direct mode records a two-compiles run from the sides' DumpResults: each Side carries its own,
    pointing at the folder the side was placed in (not the staging folder it compiled into)."""
    from irscope import jobs
    from irscope.compare import command
    from irscope.compare.sides import SideRequest

    request = jobs.Request(VECTOR_ADD, ("add_kernel",), SIG, target="cuda:90")
    run = command.run(
        command.DiffOptions(
            request=request,
            a=SideRequest("a", sets=["num_warps=4"]),
            b=SideRequest("b", sets=["num_warps=8"]),
            out_dir=tmp_path / "o",
        )
    )
    assert not run.result.equal and len(run.jobs) == 2
    for side in (run.a, run.b):
        assert side.dump is not None and side.dump.folder == side.folder and (side.folder / "manifest.json").is_file()
        assert side.dump.manifest["options"]["num_warps"] == (4 if side.name == "a" else 8)
    folders = command.run(command.DiffOptions(request=jobs.Request(run.a.folder), dir_b=run.b.folder))
    assert folders.jobs == [] and folders.a.dump is None
    assert [d.name for d in folders.result.stats.deltas] == [d.name for d in run.result.stats.deltas]


def test_two_folders_and_two_compiles_say_the_same(dumps, tmp_path):
    folders = run_in(None, "diff", str(dumps["w4"]), str(dumps["w8"]), "--json")
    compiles = run_in(None, "diff", *F, "--a", "num_warps=4", "--b", "num_warps=8", "-o", str(tmp_path / "o"), "--json")
    assert folders.code == compiles.code == 1 and folders.err == compiles.err == ""
    a, b = json.loads(folders.out), json.loads(compiles.out)
    assert a["stats"] == b["stats"] and a["stats"]["registers"] != {}


def test_html_line_goes_to_stderr_with_json(dumps, tmp_path):
    page = tmp_path / "d.html"
    r = run_in(None, "diff", str(dumps["w4"]), str(dumps["w8"]), "--json", "--html", str(page))
    assert r.code == 1 and json.loads(r.out)["equal"] is False
    assert str(page) in r.err and "<html" in page.read_text().lower()


# ---------------------------------------------------------------- the old spellings


def test_old_time_names_bench_and_still_needs_a_gpu(tmp_path):
    r = run_in(None, "diff", *F, "--a", "num_warps=4", "--b", "num_warps=8", "--time", "-o", str(tmp_path / "o"))
    lines = r.err.strip().splitlines()
    assert r.code == 2 and lines[0] == note("diff --time", "bench FILE --set KEY=VALUE --try KEY=VALUE")
    assert len(lines) == 2 and lines[1].startswith("irscope: error:") and "GPU" in lines[1]
    assert not (tmp_path / "o").exists()


def test_old_time_of_two_folders_is_refused(dumps):
    r = run_in(None, "diff", str(dumps["w4"]), str(dumps["w8"]), "--time")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 2 and "two dump folders cannot be timed" in lines[1], r.err


def test_old_triton_with_two_folders_is_refused(dumps):
    r = run_in(None, "diff", str(dumps["w4"]), str(dumps["w8"]), "--a-triton", PY)
    lines = r.err.strip().splitlines()
    assert r.code == 2 and lines[0] == note("diff --a-triton/--b-triton", "diff-releases"), r.err
    assert len(lines) == 2 and "compile a kernel file or a capture folder" in lines[1]


def test_old_frontier_form_is_the_frontier_command(capture):
    new = run_in(None, "frontier", str(capture), str(capture), "--json")
    old = run_in(None, "diff", str(capture), str(capture), "--json")
    assert new.code == old.code == 0 and new.err == ""
    assert old.err.strip().splitlines() == [note("diff CAPTURE_A CAPTURE_B", "frontier CAPTURE_A CAPTURE_B")]
    assert json.loads(old.out) == json.loads(new.out)
    assert json.loads(new.out)["a"]["kernels"][0]["name"] == "add_kernel"
    refused = run_in(None, "diff", str(capture), str(capture), "--stage", "ptx")
    assert refused.code == 2 and "--stage: two capture folders are compared as they are" in refused.err


def test_frontier_of_a_folder_that_is_no_capture(dumps, capture):
    r = run_in(None, "frontier", str(capture), str(dumps["w4"]))
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and "not a capture folder" in lines[0], r.err


# ---------------------------------------------------------------- diff-releases


def test_diff_releases_needs_a_triton(tmp_path):
    r = run_in(None, "diff-releases", *F, "-o", str(tmp_path / "o"))
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and "--a-triton" in lines[0] and not (tmp_path / "o").exists()


def test_diff_releases_of_a_capture_refuses_one_page(capture, tmp_path):
    r = run_in(
        None,
        "diff-releases",
        str(capture),
        "--a-triton",
        PY,
        "--html",
        str(tmp_path / "p.html"),
        "-o",
        str(tmp_path / "o"),
    )
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and "captures/KERNEL-N.json" in lines[0], r.err
    assert list(tmp_path.iterdir()) == []


def test_diff_releases_of_a_kernel_file(tmp_path):
    r = run_in(
        None,
        "diff-releases",
        *F,
        "--a-triton",
        PY,
        "--b",
        "num_warps=8",
        "--stage",
        "ttgir",
        "-o",
        str(tmp_path / "o"),
        "--json",
    )
    assert r.code == 1 and r.err == "", r.err
    doc = json.loads(r.out)
    assert doc["inputs"]["options.num_warps"] == {"a": 4, "b": 8}
    assert "warpsPerCTA = [8]" in doc["stages"]["ttgir"]["diff"]
    # side a is named by the Triton distribution that ran it: upstream's or Meta's fork
    assert re.match(r"(fb)?triton \d", doc["a"]["label"]) and doc["b"]["label"].endswith(", num_warps=8")


def test_diff_releases_of_a_capture_applies_each_sides_options(capture, tmp_path):
    """--b and --stage reach every captured kernel (the old diff CAPTURE --a-triton ignored them), and the old
    form prints the same table after its note."""
    argv = [str(capture), "--a-triton", PY, "--b", "num_warps=8", "--stage", "ttgir", "-o", str(tmp_path / "o")]
    r = run_in(None, "diff-releases", *argv, "--json")
    assert r.code == 1 and r.err == "", r.err
    (row,) = json.loads(r.out)["kernels"]
    assert row["kernel"] == "add_kernel" and row["verdict"] == "stats changed"
    assert "registers" in {s["name"] for s in row["stats"]}
    assert "warpsPerCTA = [8]" in row["stage_diffs"]["ttgir"]
    same = run_in(None, "diff-releases", str(capture), "--a-triton", PY, "-o", str(tmp_path / "o"), "--json")
    assert same.code == 0 and json.loads(same.out)["kernels"][0]["verdict"] == "same", same.err
    old = run_in(None, "diff", *argv, "--json")
    assert old.code == 1 and old.err.strip().splitlines() == [note("diff --a-triton/--b-triton", "diff-releases")]
    assert json.loads(old.out)["kernels"] == json.loads(r.out)["kernels"]
