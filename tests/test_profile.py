"""irscope profile (#32) on the CPU: ncu's CSV pages and Proton's hatchet as recorded on the H200
(tests/data/ncu/), the join through the very dump of each run, the measured roofline point, the view,
and the command end to end with a fake ncu (a test double replaying the recorded vector_add report)."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

import pytest

from irscope.artifacts import profiled
from irscope.errors import BadInput
from irscope.kernel.hardware import CHIPS
from irscope.profile import command, join, ncu, proton, roofline
from tests.helpers import DATA, VECTOR_ADD, run_in

NCU = DATA / "ncu"
CASES = ("add", "matmul1", "matmul3", "gluon", "rmsnorm")
KERNELS = {
    "add": "add_kernel",
    "matmul1": "matmul_kernel",
    "matmul3": "matmul_kernel",
    "gluon": "matmul_persistent_ws_kernel",
    "rmsnorm": "_rms_norm_forward_kernel",
}
ADD_ARGS = (
    "x_ptr=randn(16777216, fp32), y_ptr=randn(16777216, fp32), out_ptr=empty(16777216, fp32), "
    "n_elements=16777216, BLOCK_SIZE=1024"
)


def _text(case: str, name: str) -> str:
    return gzip.decompress((NCU / case / name).read_bytes()).decode()


def _doc(case: str) -> dict:
    """The profile document of a recorded case, built as the command builds it."""
    page = ncu.parse_source(_text(case, "source_sass.csv.gz"))
    listing = join.read_listing(_text(case, "kernel.sass.gz"))
    joined = join.join_ncu(page, listing, json.loads(_text(case, "map.json.gz")), case)
    return command.document(page.kernel, "ncu 2025.3.1.0", ncu.parse_raw(_text(case, "raw.csv.gz")), joined, "ncu")


def _line(doc: dict, n: int) -> dict:
    return next(x for x in doc["lines"] if x["line"] == n)


@pytest.mark.parametrize("case", CASES)
def test_every_recorded_source_page_parses_to_one_row_per_dumped_instruction(case):
    page = ncu.parse_source(_text(case, "source_sass.csv.gz"))
    listing = join.read_listing(_text(case, "kernel.sass.gz"))
    assert page.kernel == KERNELS[case]
    assert len(page.instructions) == len(listing.by_offset) > 50
    assert sorted(i.address - page.start for i in page.instructions) == sorted(listing.by_offset)
    # the reasons add up to the all-samples column, row by row; what ncu exports under no reason (the H200's
    # CSV has no column for one HGMMA wait) is kept as "unlisted", and only HGMMA rows have it
    for ins in page.instructions:
        assert ins.samples == pytest.approx(sum(ins.stalls.values()))
        assert ncu.UNLISTED not in ins.stalls or ins.sass.startswith("HGMMA")
    assert all("Not Issued" not in k for i in page.instructions for k in i.stalls)
    raw = ncu.parse_raw(_text(case, "raw.csv.gz"))
    assert raw["device__attribute_display_name"] == "NVIDIA H200"
    assert 1e4 < raw["gpu__time_duration.sum"] < 1e7  # ns: 45 us (add) to 1.4 ms (gluon 8192^3)


@pytest.mark.parametrize("case", CASES)
def test_the_join_puts_every_sample_on_a_python_line_and_the_document_is_valid(case, tmp_path):
    doc = _doc(case)
    assert doc["unmapped"]["samples"] == 0  # every instruction's offset is claimed by a line
    assert sum(x["samples"] for x in doc["lines"]) == doc["totals"]["samples"] > 0
    assert sum(x["share"] for x in doc["lines"]) == pytest.approx(1.0)
    assert [x["samples"] for x in doc["lines"]] == sorted((x["samples"] for x in doc["lines"]), reverse=True)
    profiled.write(tmp_path, doc)  # the schema takes it as written
    assert profiled.read(tmp_path)["lines"][0]["line"] == doc["lines"][0]["line"]


def test_gluon_ws_kernels_hot_lines_are_the_barrier_wait_and_the_mma_wait():
    doc = _doc("gluon")
    hot = {x["line"]: x for x in doc["lines"][:6]}
    wait, arrive, mma_wait = hot[179], hot[182], hot[181]  # mbarrier.wait / mbarrier.arrive / warpgroup_mma_wait
    assert "ttng.wait_barrier" in wait["ttgir"] and "mbarrier.wait" in wait["text"]
    assert "ttng.warp_group_dot_wait" in mma_wait["ttgir"]
    assert "ttng.arrive_barrier" in arrive["ttgir"]
    assert max(wait["stalls"], key=wait["stalls"].get) == "long_sb"  # waiting on the TMA's barrier
    assert max(mma_wait["stalls"], key=mma_wait["stalls"].get) == "barrier"
    assert wait["share"] + arrive["share"] + mma_wait["share"] > 0.4
    t = doc["totals"]
    assert t["tensor_flops"] == 2 * 8192**3  # HGMMA's ops counter is exactly the GEMM
    assert 0.6 < t["tensor_peak_share"] < 0.9 and t["dram_peak_share"] < 0.4  # compute-bound


def test_rmsnorm_is_memory_bound_at_most_of_the_h200s_bandwidth():
    doc = _doc("rmsnorm")
    t = doc["totals"]
    assert doc["chip"] == "h200" and t["peak_dram_gbps"] == CHIPS["h200"].hbm_tbps * 1000
    x_bytes = 16384 * 8192 * 2  # X read once, Y written once (bf16)
    assert 1.85 * x_bytes < t["dram_bytes"] < 2.02 * x_bytes  # (some of Y still in L2 when the kernel ends)
    assert 0.7 < t["dram_peak_share"] < 1.0
    assert t["tensor_flops"] == 0 and t["tensor_peak_share"] == 0
    loads = [x for x in doc["lines"] if "tt.load" in x["ttgir"]]
    assert loads and all(x["bytes"] > 0 for x in loads)  # L2 sectors x 32 on the lines that load


def test_num_stages_3_removes_the_long_scoreboard_stalls_of_the_matmuls_a_load():
    one, three = _doc("matmul1"), _doc("matmul3")
    a1, a3 = _line(one, 34), _line(three, 34)  # a = tl.load(a_ptrs, ...)
    assert "tt.load" in a1["ttgir"] and "ttg.async_copy_global_to_local" in a3["ttgir"]  # pipelined: cp.async
    assert a1["stalls"]["long_sb"] > 0.7 * a1["samples"]  # num_stages=1: the warps wait on the load
    assert a3["stalls"].get("long_sb", 0) < 0.05 * a3["samples"]
    assert one["totals"]["stalls"]["long_sb"] > 4 * three["totals"]["stalls"]["long_sb"]
    assert three["totals"]["duration_ns"] < 0.7 * one["totals"]["duration_ns"]  # and it shows in the time
    assert three["totals"]["tensor_peak_share"] > one["totals"]["tensor_peak_share"] + 0.2


def test_another_binary_is_refused_rather_than_joined():
    page = ncu.parse_source(_text("matmul1", "source_sass.csv.gz"))
    with pytest.raises(BadInput, match="not the same binary"):
        join.check_same_binary(page, join.read_listing(_text("matmul3", "kernel.sass.gz")), "x")
    listing = join.read_listing(_text("add", "kernel.sass.gz"))
    add = ncu.parse_source(_text("add", "source_sass.csv.gz"))
    add.instructions[5].sass = "HMMA.16816.F32 R0, R2, R4, R0"
    with pytest.raises(BadInput, match=r"offset 0x0050 ncu ran 'HMMA"):
        join.check_same_binary(add, listing, "x")


@pytest.mark.parametrize("damage", ["truncated", "no_header", "text_in_number", "cuda_sass_page"])
def test_a_damaged_source_page_is_one_line_of_bad_input(damage):
    text = _text("add", "source_sass.csv.gz")
    if damage == "truncated":
        text = text[: len(text) // 2].rsplit(",", 3)[0]
    elif damage == "no_header":
        text = "\n".join(text.splitlines()[2:])
    elif damage == "text_in_number":
        lines = text.splitlines()
        lines[3] = lines[3].replace('"60"', '"sixty"', 1)
        text = "\n".join(lines)
    else:
        text = '"File Path","/x.py"\n"Function Name","add_kernel"\n' + "\n".join(text.splitlines()[1:])
        text = text.replace('"Address"', '"Line No","Source","Address"', 1)
    with pytest.raises(BadInput) as e:
        ncu.parse_source(text, "page")
    assert "\n" not in str(e.value)


def test_a_damaged_raw_page_is_bad_input():
    with pytest.raises(BadInput, match="raw"):
        ncu.parse_raw("\n".join(_text("add", "raw.csv.gz").splitlines()[:2]))


def test_ncus_refusals_are_named():
    perm = "==PROF== Connected\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU"
    assert "ERR_NVGPUCTRPERM" in ncu.failure(perm, 1) and "permission" in ncu.failure(perm, 1)
    assert ncu.failure("==ERROR== Failed to launch the target\n", 1) == "Failed to launch the target"
    assert "-k filter" in ncu.failure("==WARNING== No kernels were profiled.\n", 0)
    assert ncu.version("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build 1)") == "2025.3.1.0"


def test_proton_hatchet_gives_lines_and_stalls_in_ncus_names():
    data = json.loads(gzip.decompress((NCU / "proton_add.hatchet.gz").read_bytes()))
    per = proton.per_line(data, "add_kernel")
    assert {n for _, n in per} == set(range(11, 18))
    store = per[next(k for k in per if k[1] == 17)]  # tl.store(out_ptr + offsets, x + y, ...)
    assert store["stalls"]["long_sb"] > 0.3 * store["samples"]  # the store waits on the loads, as ncu saw
    doc = command.proton_document("add_kernel", data, json.loads(_text("add", "map.json.gz")), "proton")
    assert doc["lines"][0]["line"] == 17 and doc["lines"][0]["share"] > 0.8
    assert "tt.store" in doc["lines"][0]["ttgir"]
    with pytest.raises(BadInput, match="no samples of kernel"):
        proton.per_line(data, "matmul_kernel")
    with pytest.raises(BadInput):
        proton.per_line({"not": "a list"}, "add_kernel")


def test_roofline_unknown_chip_and_no_tensor_counters_are_none_not_zero():
    raw = ncu.parse_raw(_text("add", "raw.csv.gz"))
    p = roofline.point(raw, None)
    assert p["dram_gbps"] > 3000 and p["dram_peak_share"] is None
    bare = {k: v for k, v in raw.items() if not k.startswith("sm__ops_path_tensor")}
    assert roofline.point(bare, CHIPS["h200"])["tensor_tflops"] is None


# ---------------------------------------------------------------- the command


def _profile_folder(tmp_path: Path, case: str) -> Path:
    folder = tmp_path / case
    folder.mkdir()
    profiled.write(folder, _doc(case))
    return folder


def test_profile_dir_renders_the_hot_lines_and_the_roofline_without_a_gpu(tmp_path):
    folder = _profile_folder(tmp_path, "gluon")
    r = run_in(None, "profile", str(folder), "--top", "6")
    assert r.code == 0, r.err
    rows = [x.split() for x in r.out.splitlines()]
    lines_shown = [x[0] for x in rows if x and x[0].isdigit()]
    assert {"179", "181", "182"} <= set(lines_shown)
    assert "long scoreboard" in next(x for x in r.out.splitlines() if x.strip().startswith("179"))
    assert "tensor 760 TFLOP/s = 77 %" in r.out and "h200" in r.out
    j = run_in(None, "profile", str(folder), "--json")
    assert json.loads(j.out)["lines"][0]["line"] == _doc("gluon")["lines"][0]["line"]


def test_profile_dir_without_a_profile_is_bad_input(tmp_path):
    r = run_in(None, "profile", str(tmp_path))
    assert r.code == 2 and "no profile.json" in r.err and len(r.err.strip().splitlines()) == 1


FAKE_NCU = '''#!{python}
"""A TEST DOUBLE of Nsight Compute's ncu: checks the arguments irscope passes, runs the child job without a
launch (--no-launch), and prints the report recorded on the H200 (tests/data/ncu/add)."""
import gzip, os, subprocess, sys
data = {data!r}
a = sys.argv[1:]
def page(name):
    sys.stdout.write(gzip.decompress(open(os.path.join(data, name), "rb").read()).decode())
if a == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.1.0 (build 36398880) (public-release)")
elif a[:1] == ["-i"]:
    assert os.path.isfile(a[1]) and a[1].endswith(".ncu-rep"), a
    if a[2:] == ["--page", "source", "--csv", "--print-source", "sass"]:
        if os.environ.get("FAKE_NCU_DAMAGE"):
            sys.stdout.write(gzip.decompress(open(os.path.join(data, "source_sass.csv.gz"), "rb").read()).decode()[:5000])
        else:
            page("source_sass.csv.gz")
    elif a[2:] == ["--page", "raw", "--csv"]:
        page("raw.csv.gz")
    else:
        print("==ERROR== unexpected export", a); sys.exit(1)
else:
    expect = ["--clock-control", "none", "--set", "full", "--import-source", "yes", "-k", "regex:^add_kernel$",
              "-c", "1", "-f", "-o"]
    if a[:len(expect)] != expect or a[len(expect) + 1:len(expect) + 4] != [sys.executable, "-m", "irscope.profile.child"]:
        print("==ERROR== unexpected arguments", a); sys.exit(1)
    if os.environ.get("FAKE_NCU_PERM"):
        print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
              "Counters on the target device 0."); sys.exit(1)
    child = subprocess.run(a[len(expect) + 1:] + ["--no-launch"], capture_output=True, text=True)
    sys.stdout.write(child.stdout); sys.stderr.write(child.stderr)
    if child.returncode:
        print("==ERROR== the child failed"); sys.exit(1)
    open(a[len(expect)] + ".ncu-rep", "w").write("a fake report\\n")
    print("==PROF== Report:", a[len(expect)] + ".ncu-rep")
'''


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "ncu"
    exe.write_text(FAKE_NCU.format(python=sys.executable, data=str(NCU / "add")))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return exe


def _profile_in_process(tmp_path, monkeypatch, capsys, *extra: str) -> tuple[int, str, str]:
    """irscope profile in this process with the GPU check answered yes (the fake ncu launches nothing)."""
    from irscope.cli import main

    monkeypatch.setattr(command, "require_gpu", lambda target: None)
    code = 0
    try:
        main(
            [
                "profile",
                str(VECTOR_ADD),
                "--args",
                ADD_ARGS,
                "--grid",
                "cdiv(n_elements, BLOCK_SIZE)",
                "-t",
                "cuda:90",
                "-o",
                str(tmp_path / "out"),
                *extra,
            ]
        )
    except SystemExit as e:
        code = e.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_profile_end_to_end_with_a_fake_ncu_writes_profile_json_into_the_dump(tmp_path, monkeypatch, capsys, fake_ncu):
    code, out, err = _profile_in_process(tmp_path, monkeypatch, capsys, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["tool"] == "ncu 2025.3.1.0" and doc["kernel"] == "add_kernel"
    assert doc["lines"][0]["line"] == 17 and "tt.store" in doc["lines"][0]["ttgir"]
    assert doc["totals"]["dram_peak_share"] > 0.7
    assert "regex:^add_kernel$" in doc["command"]
    written = list((tmp_path / "out").rglob("profile.json"))
    assert len(written) == 1 and (written[0].parent / "map.json").is_file()
    assert profiled.read(written[0].parent) == doc


def test_ncu_without_counter_permission_is_one_line_naming_ncu(tmp_path, monkeypatch, capsys, fake_ncu):
    monkeypatch.setenv("FAKE_NCU_PERM", "1")
    code, out, err = _profile_in_process(tmp_path, monkeypatch, capsys)
    assert code == 2
    assert err.strip().startswith("irscope: error: ncu failed") and "ERR_NVGPUCTRPERM" in err
    assert len(err.strip().splitlines()) == 1
    assert not list((tmp_path / "out").rglob("profile.json"))


def test_a_damaged_report_export_is_one_line_exit_2_and_no_profile(tmp_path, monkeypatch, capsys, fake_ncu):
    monkeypatch.setenv("FAKE_NCU_DAMAGE", "1")
    code, out, err = _profile_in_process(tmp_path, monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "fields" in err
    assert not list((tmp_path / "out").rglob("profile.json"))


NO_GPU = pytest.mark.skipif(
    __import__("irscope.kernel.targets", fromlist=["x"]).local_gpu_present(), reason="checks what is said without a GPU"
)


@NO_GPU
def test_no_gpu_is_one_line_exit_2_after_the_inputs_were_checked(tmp_path, fake_ncu):
    r = run_in(
        None,
        "profile",
        str(VECTOR_ADD),
        "--args",
        ADD_ARGS,
        "--grid",
        "cdiv(n_elements, BLOCK_SIZE)",
        "-o",
        str(tmp_path / "out"),
    )
    assert r.code == 2 and "profile needs a GPU" in r.err and len(r.err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # nothing compiled, nothing written
    bad = run_in(
        None, "profile", str(VECTOR_ADD), "--args", "x_ptr=randn(16, fp99)", "--grid", "1", "-o", str(tmp_path / "out")
    )
    assert bad.code == 2 and "GPU" not in bad.err  # the bad input is named first
    none = run_in(None, "profile", str(VECTOR_ADD), "-o", str(tmp_path / "out"))
    assert none.code == 2 and "--args" in none.err


def test_passes_names_the_passes_that_made_the_hot_lines_ops(tmp_path, monkeypatch, capsys, fake_ncu):
    code, out, err = _profile_in_process(tmp_path, monkeypatch, capsys, "--passes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    store = doc["lines"][0]  # line 17: tl.store, the hot line
    assert store["line"] == 17
    assert any(p.startswith("TritonGPUCoalesce: +") and "ttg.convert_layout" in p for p in store["passes"])
    assert any(p.startswith("ConvertTritonGPUToLLVM: ") for p in store["passes"])
    plain = _profile_in_process(tmp_path / "plain", monkeypatch, capsys, "--json")[1]
    assert not any(x["passes"] for x in json.loads(plain)["lines"])  # without --passes: none


def test_the_python_api_profiles_as_the_command_does(tmp_path, monkeypatch, fake_ncu):
    """irscope.profile(...) takes the command's path (prepare, run) and hands back the Dump, whose .profile
    is the profile.json written into it; a dump never profiled has none. (This module imported the package
    irscope.profile first: the function is irscope.profile once irscope.api has loaded, test_api holds that.)"""
    from irscope import api as irscope

    monkeypatch.setattr(command, "require_gpu", lambda target: None)
    d = irscope.profile(
        str(VECTOR_ADD), launch=ADD_ARGS, grid="cdiv(n_elements, BLOCK_SIZE)", target="cuda:90", out=tmp_path / "out"
    )
    assert isinstance(d, irscope.Dump) and d.kernel == "add_kernel"
    assert d.profile == profiled.read(d.folder) and d.profile["tool"] == "ncu 2025.3.1.0"
    assert d.profile["lines"][0]["line"] == 17 and "tt.store" in d.profile["lines"][0]["ttgir"]
    plain = irscope.dump(
        str(VECTOR_ADD), signature="*fp32, *fp32, *fp32, i32, 1024", target="cuda:90", out=tmp_path / "plain"
    )
    assert plain.profile is None
    with pytest.raises(BadInput, match="tool='nsys'"):
        irscope.profile(str(VECTOR_ADD), launch=ADD_ARGS, grid="1", tool="nsys", out=tmp_path / "out")


@NO_GPU
def test_the_python_api_without_a_gpu_is_the_commands_bad_input(tmp_path, fake_ncu):
    from irscope import api as irscope

    with pytest.raises(BadInput, match="profile needs a GPU"):
        irscope.profile(str(VECTOR_ADD), launch=ADD_ARGS, grid="cdiv(n_elements, BLOCK_SIZE)", out=tmp_path / "out")
    assert not list((tmp_path / "out").rglob("manifest.json"))
