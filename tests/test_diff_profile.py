"""irscope diff-profiles (#32; was diff --profile): two measured dumps of one kernel at two settings, line by line.

The profiles are the H200's (tests/data/profile, derive.py says how): examples/matmul.py at 4096^3 fp16 with
num_stages=1 (348 us) and num_stages=3 (201 us). What the recordings show, and the diff must say: line 34 (the A
tile's tl.load) goes from 46 % of the warp stalls, mostly long scoreboard (waiting on global memory), to 26 %
once the loads are pipelined — the line whose share moved most — and the option that differs is num_stages.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers import MATMUL, MATMUL_SIG16, VECTOR_ADD, compile_example, write_profile


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    from irscope import artifacts

    out = tmp_path_factory.mktemp("measured")
    got = {}
    for n in (1, 3):
        folder = artifacts.write(compile_example(MATMUL, MATMUL_SIG16, sets=(f"num_stages={n}",)), out / f"ns{n}")
        plain = out / f"plain{n}" / folder.name
        shutil.copytree(folder, plain)
        write_profile(folder, n)
        got[n], got[f"plain{n}"] = folder, plain
    got["add"] = artifacts.write(compile_example(VECTOR_ADD, "*fp32, *fp32, *fp32, i32, 1024"), out / "add")
    return got


def test_the_diff_names_the_line_whose_stalls_moved_most_and_the_setting(cli, dumps):
    r = cli("diff-profiles", str(dumps[1]), str(dumps[3]))
    assert r.code == 0, r.err
    out = r.out.splitlines()
    assert any("settings that differ:" in x and "num_stages 1 → 3" in x for x in out), r.out
    lines = out[next(i for i, x in enumerate(out) if x.startswith("lines")) + 1 :]
    assert lines[0].strip().startswith("line 34: 46 % of stalls, long scoreboard → 26 %, barrier with num_stages=3")
    assert "tl.load(a_ptrs" in lines[0]
    duration = next(x for x in out if x.strip().startswith("duration_ns")).split()
    assert duration[1:5] == ["348.4", "us", "200.6", "us"] and duration[5] == "-42"
    a_top = next(x for x in out if "top stalls" in x)
    assert a_top.split("a: ")[1].startswith("long scoreboard 52 %")


def test_the_json_orders_lines_by_the_change_of_their_share(cli, dumps):
    r = cli("diff-profiles", "--json", str(dumps[1]), str(dumps[3]))
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["irscope_profile_diff"] == 1 and doc["kernel"] == "matmul_kernel"
    assert doc["settings"]["options.num_stages"] == {"a": 1, "b": 3} and doc["with"] == "num_stages=3"
    first = doc["lines"][0]
    assert first["line"] == 34 and first["change"] == pytest.approx(
        4663 / 18117 - 17444 / 37853
    )  # the samples ncu recorded
    assert first["a"]["top_stalls"][0][0] == "long_sb" and first["b"]["top_stalls"][0][0] == "barrier"
    changes = [abs(x["change"]) for x in doc["lines"]]
    assert changes == sorted(changes, reverse=True)
    assert doc["a"]["totals"]["duration_ns"] == 348450 and doc["b"]["totals"]["dram_gbps"] == 1090
    assert doc["a"]["tool"] == "ncu 2025.3.1.0" and doc["b"]["device"] == "NVIDIA H200"


@pytest.mark.parametrize("side", ["a", "b"])
def test_a_side_without_a_profile_says_to_profile_it_first(cli, dumps, side):
    a, b = (dumps["plain1"], dumps[3]) if side == "a" else (dumps[1], dumps["plain3"])
    r = cli("diff-profiles", str(a), str(b))
    assert r.code == 2 and r.out == ""
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "no profile.json" in lines[0] and "irscope profile" in lines[0], r.err
    assert str(a if side == "a" else b) in lines[0]


def test_a_damaged_profile_names_the_file_and_field(cli, dumps, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(dumps[3], bad)
    doc = json.loads((bad / "profile.json").read_text())
    doc["totals"]["samples"] = None
    (bad / "profile.json").write_text(json.dumps(doc))
    r = cli("diff-profiles", str(dumps[1]), str(bad))
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and "profile.json totals.samples is null" in lines[0], r.err


@pytest.mark.parametrize(
    "args,words",
    [
        (["--stage", "ttgir"], "--stage: not with --profile"),
        (["--b", "num_warps=8"], "--b: not with --profile"),
        (["--passes", "--by-line"], "--passes, --by-line: not with --profile"),
        (["--time"], "--time: not with --profile"),
        (["--html", "x.html"], "--html: not with --profile"),
    ],
)
def test_the_old_form_names_the_new_command_and_still_refuses_flags_of_other_modes(cli, dumps, tmp_path, args, words):
    r = cli("diff", "--profile", str(dumps[1]), str(dumps[3]), *args, cwd=tmp_path)
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 2, r.err
    assert "'irscope diff --profile' is now 'irscope diff-profiles'" in lines[0] and words in lines[1]
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize("args", [["--stage", "ttgir"], ["--b", "num_warps=8"], ["--time"], ["--html", "x.html"]])
def test_the_new_command_has_no_flags_of_other_modes(cli, dumps, tmp_path, args):
    r = cli("diff-profiles", str(dumps[1]), str(dumps[3]), *args, cwd=tmp_path)
    assert r.code == 2 and r.out == "" and "no such option" in r.err.lower() and args[0] in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1 and not (tmp_path / "x.html").exists()


def test_the_old_form_still_compares(cli, dumps):
    old, new = (
        cli("diff", "--profile", "--json", str(dumps[1]), str(dumps[3])),
        cli("diff-profiles", "--json", str(dumps[1]), str(dumps[3])),
    )
    assert old.code == new.code == 0 and json.loads(old.out) == json.loads(new.out)
    note = (
        "irscope: note: 'irscope diff --profile' is now 'irscope diff-profiles'; "
        "the old form goes away in the next release"
    )
    assert old.err.strip().splitlines() == [note]
    assert new.err == ""


def test_two_folders_of_one_kernel_are_needed(cli, dumps):
    one = cli("diff-profiles", str(dumps[1]))
    assert one.code == 2 and "DIR_B" in one.err
    file = cli("diff-profiles", str(MATMUL), str(dumps[3]))
    assert file.code == 2 and "irscope diff-profiles DIR_A DIR_B" in file.err
    other = cli("diff-profiles", str(dumps[1]), str(dumps["add"]))
    assert other.code == 2 and "different kernels" in other.err


def test_hostile_strings_and_numbers_stay_text_and_finite(dumps, tmp_path):
    """A profile.json is data from anyone: markup and control characters print as text, and a number of
    thousands of digits (valid JSON) still gives finite shares."""
    from irscope.compare import command, profiles
    from irscope.views import profile_diff
    from irscope.views.console import console

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(dumps[1], a)
    shutil.copytree(dumps[3], b)
    doc = json.loads((b / "profile.json").read_text())
    doc["tool"], doc["device"] = "[bold red]ncu\x1b[2J", "H200[/]\x07"
    doc["lines"][0]["stalls"] = {"[link=http://x]evil[/link]\x1b]8;;": 10**4000}
    doc["lines"][0]["samples"] = 10**4000
    doc["totals"]["dram_gbps"] = 10**4000
    (b / "profile.json").write_text(json.dumps(doc))
    d = command.profile(a, b)
    assert max(c.b_share for c in d.lines) == 1.0 and d.b.totals["dram_gbps"] == profiles.BIG
    json.loads(profile_diff.profile_json(d), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    path = tmp_path / "out.txt"
    with path.open("w") as f:
        profile_diff.profile_summary(d, console(file=f))
    text = path.read_text()
    assert "\x1b" not in text and "\x07" not in text
    assert "[bold red]ncu" in text and "[link=http://x]evil[/link]" in text
