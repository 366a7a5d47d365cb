"""The cache's direct mode (irscope/direct, issues #29 and #37): a repeat dump is served from the command line
alone, without importing Triton or the kernel file, and nothing it serves is ever stale."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import VECTOR_ADD, run_cli

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"

HELPER = """import triton


@triton.jit
def combine(x, y):
    return x + y
"""

KERNEL = """import triton
import triton.language as tl
from helpers import combine


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, combine(tl.load(x_ptr + offs, mask=mask), tl.load(y_ptr + offs, mask=mask)), mask=mask)
"""


def _kernel(tmp_path: Path) -> Path:
    folder = tmp_path / "k"
    folder.mkdir()
    (folder / "helpers.py").write_text(HELPER)
    (folder / "kern.py").write_text(KERNEL)
    return folder / "kern.py"


def _dump(tmp_path: Path, file: Path, *extra: str, env: dict | None = None) -> dict:
    r = run_cli(
        "dump",
        str(file),
        "-s",
        SIG,
        "-t",
        "h100",
        "-o",
        str(tmp_path / "out"),
        "--json",
        *extra,
        cwd=tmp_path,
        env={"IRSCOPE_CACHE_DIR": str(tmp_path / "cache"), **(env or {})},
    )
    assert r.code == 0, r.err
    return json.loads(r.out)["kernels"][0]


def test_a_repeat_dump_is_served_without_importing_triton(tmp_path):
    kern = _kernel(tmp_path)
    assert _dump(tmp_path, kern)["cache"] is None  # compiled
    second = _dump(tmp_path, kern)
    assert second["cache"] == "direct" and second["cached"] is True
    p = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "irscope",
            "dump",
            str(kern),
            "-s",
            SIG,
            "-t",
            "h100",
            "-o",
            str(tmp_path / "out"),
            "--json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache")),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    imported = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    assert json.loads(p.stdout)["kernels"][0]["cache"] == "direct"
    assert not {m for m in imported if m.split(".")[0] in ("triton", "torch", "click", "rich")}, imported
    assert not any(m.startswith("irscope_kernel_") or m == "helpers" for m in imported)
    # what it served is the dump itself: every stage there, the same folder as the compile's
    assert second["folder"] == _dump(tmp_path, kern, "--no-cache")["folder"]
    assert all(Path(p).is_file() for p in second["stages"].values())


def test_a_changed_jit_callee_in_another_file_is_recompiled(tmp_path):
    kern = _kernel(tmp_path)
    _dump(tmp_path, kern)
    assert _dump(tmp_path, kern)["cache"] == "direct"
    (kern.parent / "helpers.py").write_text(HELPER.replace("x + y", "x * y"))
    changed = _dump(tmp_path, kern)
    assert changed["cache"] is None
    assert "arith.mulf" in Path(changed["stages"]["ttir"]).read_text()
    assert _dump(tmp_path, kern)["cache"] == "direct"


def test_an_env_knob_of_tritons_key_takes_the_full_path(tmp_path):
    kern = _kernel(tmp_path)
    _dump(tmp_path, kern)
    assert _dump(tmp_path, kern)["cache"] == "direct"
    assert _dump(tmp_path, kern, env={"TRITON_HIP_USE_BLOCK_PINGPONG": "1"})["cache"] != "direct"
    assert _dump(tmp_path, kern, env={"DISABLE_LLVM_OPT": "1"})["cache"] != "direct"


def test_another_option_is_another_entry(tmp_path):
    kern = _kernel(tmp_path)
    first = _dump(tmp_path, kern)
    other = _dump(tmp_path, kern, "--set", "num_warps=8")
    assert other["cache"] is None and other["folder"] != first["folder"] and other["options"]["num_warps"] == 8
    assert _dump(tmp_path, kern, "--set", "num_warps=8")["cache"] == "direct"
    assert _dump(tmp_path, kern)["options"]["num_warps"] == 4


def test_a_touched_but_unchanged_kernel_file_is_still_served_after_its_hash_is_checked(tmp_path):
    kern = _kernel(tmp_path)
    _dump(tmp_path, kern)
    assert _dump(tmp_path, kern)["cache"] == "direct"
    st = kern.stat()
    os.utime(kern, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert _dump(tmp_path, kern)["cache"] == "direct"
    record = next((tmp_path / "cache" / ".irscope-direct").glob("*.json"))
    assert json.loads(record.read_text())["files"][str(kern.resolve())][1] == kern.stat().st_mtime_ns


def test_a_new_module_that_would_shadow_an_import_takes_the_full_path(tmp_path):
    kern = _kernel(tmp_path)
    lib = tmp_path / "lib"
    lib.mkdir()
    (kern.parent / "helpers.py").rename(lib / "helpers.py")
    env = {"PYTHONPATH": os.pathsep.join([str(lib), os.environ.get("PYTHONPATH", "")])}
    _dump(tmp_path, kern, env=env)
    assert _dump(tmp_path, kern, env=env)["cache"] == "direct"
    (kern.parent / "helpers.py").write_text(HELPER.replace("x + y", "x - y"))  # first on the path now
    shadowed = _dump(tmp_path, kern, env=env)
    assert shadowed["cache"] is None and "arith.subf" in Path(shadowed["stages"]["ttir"]).read_text()


_WRAPPED = (
    "import sys\nfrom irscope.direct import record\n{patch}\nfrom irscope.entry import main\n"
    "sys.argv[1:] = {args!r}\nmain()\n"
)


def _wrapped(tmp_path: Path, args: list[str], patch: str = "") -> dict:
    p = subprocess.run(
        [sys.executable, "-c", _WRAPPED.format(patch=patch, args=args)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache")),
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["kernels"][0]


def test_another_triton_version_takes_the_full_path(tmp_path):
    """The version is read from the installed metadata (never by importing triton): another one there
    is another Triton, whatever the files' stat says."""
    kern = _kernel(tmp_path)
    args = ["dump", str(kern), "-s", SIG, "-t", "h100", "-o", str(tmp_path / "out"), "--json"]
    _wrapped(tmp_path, args)
    assert _wrapped(tmp_path, args)["cache"] == "direct"
    assert _wrapped(tmp_path, args, "record._metadata_version = lambda path: '9.9.9'")["cache"] != "direct"
    # that run recorded 9.9.9: back on the real version, the full path once, then direct again
    assert _wrapped(tmp_path, args)["cache"] == "key"
    assert _wrapped(tmp_path, args)["cache"] == "direct"


def test_the_direct_summary_is_the_full_paths(tmp_path):
    kern = _kernel(tmp_path)
    base = ["dump", str(kern), "-s", SIG, "-t", "h100", "-o", str(tmp_path / "out")]
    env = {"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    assert run_cli(*base, cwd=tmp_path, env=env).code == 0
    direct_run = run_cli(*base, cwd=tmp_path, env=env)
    full = subprocess.run(
        [sys.executable, "-c", f"import sys\nsys.argv[1:] = {base!r}\nfrom irscope.cli import main\nmain()\n"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        timeout=300,
    )
    assert full.returncode == 0, full.stderr
    assert "(from cache)" in direct_run.out and direct_run.out == full.stdout


def test_a_cached_dump_names_its_own_file_not_an_earlier_identical_ones(tmp_path):
    """Issue #29 item 3: the same code dumped first as m/math.py, then as examples/vector_add.py."""
    other = tmp_path / "m" / "math.py"
    other.parent.mkdir()
    shutil.copy(VECTOR_ADD, other)
    _dump(tmp_path, other)
    mine = _dump(tmp_path, VECTOR_ADD)
    folder = Path(mine["folder"])
    manifest = json.loads((folder / "manifest.json").read_text())
    source_map = json.loads((folder / "map.json").read_text())
    assert mine["file"] == manifest["file"] == str(VECTOR_ADD)
    assert source_map["kernel_file"] == os.path.realpath(VECTOR_ADD)
    ttir = Path(mine["stages"]["ttir"]).read_text()
    assert "vector_add.py" in ttir and "math.py" not in ttir


# ---------------------------------------------------------------- passes, lines, recipes, spec files


def _traced(tmp_path: Path, *args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, bool]:
    """irscope in a fresh process as a user runs it, and whether Triton was imported (a direct hit imports
    neither it nor the kernel file)."""
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "irscope", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache"), **(env or {})),
    )
    imported = {
        line.split("|")[-1].strip().split(".")[0] for line in p.stderr.splitlines() if line.startswith("import time:")
    }
    return p, "triton" in imported


def _full(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The same command line through the click CLI (never the direct mode)."""
    return subprocess.run(
        [sys.executable, "-c", f"import sys\nsys.argv[1:] = {list(args)!r}\nfrom irscope.cli import main\nmain()\n"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache")),
        timeout=300,
    )


def _kernel_args(tmp_path: Path, kern: Path, *extra: str) -> list[str]:
    return [str(kern), "-s", SIG, "-t", "h100", "-o", str(tmp_path / "out"), *extra]


def test_passes_and_lines_repeats_are_served_as_the_full_path_prints_them(tmp_path):
    kern = _kernel(tmp_path)
    for command, extra in (
        ("passes", ("--first", "arith.addf")),
        ("passes", ("--first", "no_such_op")),
        ("lines", ("--sort", "line")),
        ("lines", ("--line", "10", "--json")),
    ):
        args = [command, *_kernel_args(tmp_path, kern, *extra)]
        first, first_triton = _traced(tmp_path, *args)
        again, again_triton = _traced(tmp_path, *args)
        full = _full(tmp_path, *args)
        assert first_triton and not again_triton, (command, extra)
        assert again.returncode == first.returncode == full.returncode, (command, extra, again.stderr)
        assert again.stdout == first.stdout == full.stdout, (command, extra)
    assert (
        "already in the frontend's IR"
        in _full(tmp_path, "passes", *_kernel_args(tmp_path, kern, "--first", "arith.addf")).stdout
    )
    assert _full(tmp_path, "passes", *_kernel_args(tmp_path, kern, "--first", "no_such_op")).returncode == 1


def test_a_changed_callee_the_triton_version_an_env_knob_or_an_option_is_never_served_stale_to_passes_or_lines(
    tmp_path,
):
    kern = _kernel(tmp_path)
    passes = ["passes", *_kernel_args(tmp_path, kern, "--first", "arith.mulf")]
    first, _ = _traced(tmp_path, *passes)
    assert first.returncode == 1 and _traced(tmp_path, *passes)[1] is False  # found nowhere, and served
    (kern.parent / "helpers.py").write_text(HELPER.replace("x + y", "x * y"))
    changed, triton = _traced(tmp_path, *passes)
    assert triton and changed.returncode == 0 and "already in the frontend's IR" in changed.stdout

    lines = ["lines", *_kernel_args(tmp_path, kern, "--json")]
    assert _traced(tmp_path, *lines)[1] and not _traced(tmp_path, *lines)[1]
    assert _traced(tmp_path, *lines, env={"TRITON_DEFAULT_FP_FUSION": "0"})[1]
    eight, triton = _traced(tmp_path, *lines, "--set", "num_warps=8")
    assert triton and json.loads(eight.stdout)["folder"] != json.loads(_traced(tmp_path, *lines)[0].stdout)["folder"]
    # the Triton version, from its metadata: another one there is another Triton
    _wrapped_text(tmp_path, lines)  # python -c has another sys.path, so a record of its own
    assert _wrapped_text(tmp_path, lines) is None
    assert _wrapped_text(tmp_path, lines, "record._metadata_version = lambda path: '9.9.9'") is not None
    assert _wrapped_text(tmp_path, lines) is not None  # back on the real version: the full path once


_WRAPPED_TEXT = (
    "import sys\nfrom irscope import direct\nfrom irscope.compile import cache\nfrom irscope.direct import record\n"
    "{patch}\nfrom irscope.entry import main\n"
    "sys.argv[1:] = {args!r}\nserved = []\nreal = direct.serve\n"
    "direct.serve = lambda *a, **k: served.append(real(*a, **k)) or served[-1]\n"
    "try:\n    main()\nfinally:\n    sys.stderr.write('served=%d' % sum(s is not None for s in served))\n"
)


def _wrapped_text(tmp_path: Path, args: list[str], patch: str = "") -> str | None:
    """stdout of a run with `patch` applied to the direct mode; None when the direct mode served it."""
    p = subprocess.run(
        [sys.executable, "-c", _WRAPPED_TEXT.format(patch=patch, args=args)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp_path / "cache")),
    )
    assert p.returncode == 0, p.stderr
    return None if p.stderr.endswith("served=1") else p.stdout


RECIPE = """[recipe]
target = "h100"
purpose = "a test's recipe"

[options]
num_warps = {warps}
"""


def test_a_recipe_is_served_until_its_file_changes_or_another_one_would_be_found_first(tmp_path):
    kern = _kernel(tmp_path)
    mine, early = tmp_path / "mine", tmp_path / "early"
    mine.mkdir()
    (mine / "tiny.toml").write_text(RECIPE.format(warps=2))
    env = {"IRSCOPE_CACHE_DIR": str(tmp_path / "cache"), "IRSCOPE_RECIPES": os.pathsep.join([str(early), str(mine)])}

    def dump() -> dict:  # no --target: the recipe's
        r = run_cli(
            "dump",
            str(kern),
            "-s",
            SIG,
            "--recipe",
            "tiny",
            "-o",
            str(tmp_path / "out"),
            "--json",
            cwd=tmp_path,
            env=env,
        )
        assert r.code == 0, r.err
        return json.loads(r.out)["kernels"][0]

    assert dump()["options"]["num_warps"] == 2
    served = dump()
    assert served["cache"] == "direct" and served["options"]["num_warps"] == 2 and served["target"] == "cuda:90"
    (mine / "tiny.toml").write_text(RECIPE.format(warps=8))
    edited = dump()
    assert edited["cache"] != "direct" and edited["options"]["num_warps"] == 8
    assert dump()["cache"] == "direct"
    early.mkdir()
    (early / "tiny.toml").write_text(RECIPE.format(warps=1))  # first on $IRSCOPE_RECIPES now
    shadowed = dump()
    assert shadowed["cache"] != "direct" and shadowed["options"]["num_warps"] == 1


def test_a_spec_file_is_served_until_it_changes(tmp_path):
    kern = _kernel(tmp_path)
    manifest = Path(_dump(tmp_path, kern)["folder"]) / "manifest.json"
    spec = tmp_path / "spec.json"
    shutil.copy(manifest, spec)
    args = ["dump", str(spec), "-o", str(tmp_path / "spec-out"), "--json"]
    env = {"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    runs = [run_cli(*args, cwd=tmp_path, env=env) for _ in range(2)]
    assert [json.loads(r.out)["kernels"][0]["cache"] for r in runs] == ["key", "direct"], runs[0].err
    doc = json.loads(spec.read_text())
    doc["user_options"] = {"num_warps": 8}
    spec.write_text(json.dumps(doc))
    changed = json.loads(run_cli(*args, cwd=tmp_path, env=env).out)["kernels"][0]
    assert changed["cache"] != "direct" and changed["options"]["num_warps"] == 8


def test_pins_are_part_of_what_is_served(tmp_path):
    kern = _kernel(tmp_path)
    plain = _dump(tmp_path, kern)
    pinned = _dump(tmp_path, kern, "--pin-layout", "blocked:sizePerThread=[8]")
    again = _dump(tmp_path, kern, "--pin-layout", "blocked:sizePerThread=[8]")
    assert pinned["folder"] != plain["folder"] and again["cache"] == "direct" and again["folder"] == pinned["folder"]
    assert again["pins"] == pinned["pins"]


def test_a_direct_repeat_names_its_own_file_too(tmp_path):
    """Issue #29 item 3 on the direct path: the same code dumped first under another name."""
    other = tmp_path / "m" / "math.py"
    other.parent.mkdir()
    shutil.copy(VECTOR_ADD, other)
    _dump(tmp_path, other)
    _dump(tmp_path, VECTOR_ADD)
    mine = _dump(tmp_path, VECTOR_ADD)
    assert mine["cache"] == "direct" and mine["file"] == str(VECTOR_ADD)
    assert json.loads((Path(mine["folder"]) / "map.json").read_text())["kernel_file"] == os.path.realpath(VECTOR_ADD)


def test_a_diff_of_two_unchanged_sides_is_served_as_the_full_path_prints_it_and_a_changed_callee_is_not(tmp_path):
    kern = _kernel(tmp_path)
    args = ["diff", *_kernel_args(tmp_path, kern, "--a", "num_warps=4", "--b", "num_warps=8", "--stage", "ttgir")]
    compiled, _ = _traced(tmp_path, *args)
    cached, triton = _traced(tmp_path, *args)  # both sides from the cache: what a repeat will print
    assert triton and "(compiled)" in compiled.stdout and "(compiled)" not in cached.stdout
    served, triton = _traced(tmp_path, *args)
    assert not triton and served.returncode == cached.returncode == 1
    assert served.stdout == cached.stdout == _full(tmp_path, *args).stdout
    (kern.parent / "helpers.py").write_text(HELPER.replace("x + y", "x * y"))
    changed, triton = _traced(tmp_path, *args)
    assert triton and "(compiled)" in changed.stdout
    folders = {Path(w) for w in changed.stdout.split() if re.fullmatch(r".*/add_kernel/cuda90-[0-9a-f]{8}", w)}
    assert len(folders) == 2 and all("arith.mulf" in (f / "add_kernel.ttir").read_text() for f in folders)


def test_a_served_folder_edited_since_is_restored_not_served_as_it_is(tmp_path):
    """A folder served before is kept by its files' stat (ctime included) to skip the checksums next time;
    any write to it since is seen and the entry restored."""
    kern = _kernel(tmp_path)
    args = ["dump", *_kernel_args(tmp_path, kern, "--json")]
    patch = "cache.RACY_NS = 0"  # files written a moment ago may be stamped (no 2 s wait)
    _wrapped_text(tmp_path, args, patch)
    assert _wrapped_text(tmp_path, args, patch) is None  # served, and the folder stamped
    record = next(
        p
        for p in (tmp_path / "cache" / ".irscope-direct").glob("*.json")
        if json.loads(p.read_text())["entries"][0].get("placed")
    )
    placed = json.loads(record.read_text())["entries"][0]["placed"]
    assert placed["stamp"] is not None
    ttir = Path(placed["folder"]) / "add_kernel.ttir"
    text = ttir.read_text()
    assert _wrapped_text(tmp_path, args, patch) is None  # as it is
    ttir.write_text(text.replace("tt.store", "tt.edited"))
    assert _wrapped_text(tmp_path, args, patch) is None
    assert ttir.read_text() == text


def _same_size_edit(path: Path, old: str, new: str) -> None:
    """Edit `path` keeping its size, its mtime put back."""
    assert len(old) == len(new)
    st = path.stat()
    path.write_text(path.read_text().replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size


def _as_if_no_stat_moved(tmp_path: Path, monkeypatch) -> None:
    """Every record's files stamped with their stat as it is now, as on a file system whose ctime tick hid
    the edit (git's racy case): only the content can tell the edit then."""
    from irscope.direct import record

    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    for path in (tmp_path / "cache" / ".irscope-direct").glob("*.json"):
        doc = json.loads(path.read_text())
        if not record.read(path.stem):
            continue
        for name, stamp in doc["files"].items():
            doc["files"][name] = record.file_stat(name) + [stamp[-1]]
        doc.pop("mac")
        record.write(path.stem, doc)


def test_a_same_size_edit_with_its_times_put_back_is_never_served_stale(tmp_path, monkeypatch):
    """Issue #41 item 4: the kernel file, a @jit helper in another file, a spec file and a recipe, each edited
    keeping its size and mtime (and, for the record, its whole stat): the direct mode hashes what it read."""
    kern = _kernel(tmp_path)
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "tiny.toml").write_text(RECIPE.format(warps=4))
    env = {"IRSCOPE_CACHE_DIR": str(tmp_path / "cache"), "IRSCOPE_RECIPES": str(recipes)}

    def dump(*args: str) -> dict:
        r = run_cli("dump", *args, "-o", str(tmp_path / "out"), "--json", cwd=tmp_path, env=env)
        assert r.code == 0, r.err
        return json.loads(r.out)["kernels"][0]

    def ptx(d: dict) -> str:
        return Path(d["stages"]["ptx"]).read_text()

    plain = [str(kern), "-s", SIG, "-t", "h100"]
    assert "add.f32" in ptx(dump(*plain)) and dump(*plain)["cache"] == "direct"
    _same_size_edit(tmp_path / "k" / "helpers.py", "x + y", "x - y")
    _as_if_no_stat_moved(tmp_path, monkeypatch)
    edited = dump(*plain)
    assert edited["cache"] != "direct" and "sub.f32" in ptx(edited) and "add.f32" not in ptx(edited)

    _same_size_edit(kern, "tl.program_id(0) * BLOCK", "tl.program_id(0) + BLOCK")
    _as_if_no_stat_moved(tmp_path, monkeypatch)
    assert dump(*plain)["cache"] != "direct"

    spec = tmp_path / "spec.json"
    doc = json.loads((Path(dump(*plain)["folder"]) / "manifest.json").read_text())
    spec.write_text(json.dumps({**doc, "user_options": {"num_warps": 4}}))
    assert dump(str(spec))["options"]["num_warps"] == 4 and dump(str(spec))["cache"] == "direct"
    _same_size_edit(spec, '"user_options": {"num_warps": 4}', '"user_options": {"num_warps": 8}')
    _as_if_no_stat_moved(tmp_path, monkeypatch)
    assert dump(str(spec))["options"]["num_warps"] == 8

    tiny = [str(kern), "-s", SIG, "--recipe", "tiny"]
    assert dump(*tiny)["options"]["num_warps"] == 4 and dump(*tiny)["cache"] == "direct"
    _same_size_edit(recipes / "tiny.toml", "num_warps = 4", "num_warps = 8")
    _as_if_no_stat_moved(tmp_path, monkeypatch)
    again = dump(*tiny)
    assert again["cache"] != "direct" and again["options"]["num_warps"] == 8
