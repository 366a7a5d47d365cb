"""Damaged dump folders (issue 31): a manifest.json or map.json that is not JSON, empty, a list, not UTF-8,
of the wrong types, with a 5,000-digit integer or nested 100,000 deep, a stage file that is binary, an
unbalanced or deeply nested TTGIR: `lines`, `report` and `diff` say one line naming the file and the
field, exit 2, no traceback, nothing written. A multi-folder report leaves a damaged dump out, names it
in one note line, and writes the page of the others (exit 0). A huge `#ttg.linear` layout is listed as
too large, never converted.

Everything runs in this process through irscope.cli.main (Triton stays warm).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from test_diff import error_lines, irscope

from tests.helpers import VECTOR_ADD, cache_dir

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    root = tmp_path_factory.mktemp("good")
    with cache_dir(root / "cache"):
        code, _, err = irscope("dump", VECTOR_ADD, "-s", SIG, "-t", "cuda:90", "-o", root / "add")
    assert code == 0, err
    (folder,) = (p.parent for p in (root / "add").glob("*/*/manifest.json"))
    return folder


def _edit_json(name, fn):
    def apply(folder: Path):
        p = folder / name
        doc = json.loads(p.read_text())
        fn(doc)
        p.write_text(json.dumps(doc))

    return apply


def _raw(name, data: bytes):
    def apply(folder: Path):
        (folder / name).write_bytes(data)

    return apply


def _set(path, value):
    def fn(doc):
        *head, last = path
        for k in head:
            doc = doc[k]
        doc[last] = value

    return fn


def _huge_int(name, key):
    def apply(folder: Path):
        p = folder / name
        text = p.read_text()
        doc = json.loads(text)
        doc[key] = 0
        p.write_text(json.dumps(doc).replace(f'"{key}": 0', f'"{key}": 1' + "0" * 5000))

    return apply


def _deep(name, key):
    def apply(folder: Path):
        p = folder / name
        doc = json.loads(p.read_text())
        doc[key] = "@@"
        p.write_text(json.dumps(doc).replace('"@@"', "[" * 100_000 + "]" * 100_000))

    return apply


M, MAP = "manifest.json", "map.json"
# (id, damage, word the one line must hold)
MANIFEST_CASES = [
    ("not-json", _raw(M, b"{not json"), "not valid JSON"),
    ("empty", _raw(M, b""), "empty"),
    ("a-list", _raw(M, b"[1, 2]"), "not irscope's"),
    ("not-utf8", _raw(M, b'{"irscope": 1, "kernel": "\xff\xfe"}'), "UTF-8"),
    ("stages-a-list", _edit_json(M, _set(["stages"], ["add_kernel.ptx"])), "stages"),
    ("stats-a-string", _edit_json(M, _set(["stats"], "big")), "stats"),
    ("options-a-number", _edit_json(M, _set(["options"], 5)), "options"),
    (
        "occupancy-a-string",
        _edit_json(M, _set(["stats", "occupancy", "occupancy"], "high")),
        "stats.occupancy.occupancy",
    ),
    ("registers-a-string", _edit_json(M, _set(["stats", "registers"], "26")), "stats.registers"),
    ("sass-top-a-string", _edit_json(M, _set(["stats", "sass", "top", "NOP"], "14")), "stats.sass.top.NOP"),
    (
        "limited-by-missing",
        _edit_json(M, lambda d: d["stats"]["occupancy"].pop("limited_by")),
        "stats.occupancy lacks 'limited_by'",
    ),
    ("kernel-missing", _edit_json(M, lambda d: d.pop("kernel")), "kernel"),
    ("kernel-a-number", _edit_json(M, _set(["kernel"], 7)), "kernel"),
    ("target-a-list", _edit_json(M, _set(["target"], ["cuda:90"])), "target"),
    ("notes-a-dict", _edit_json(M, _set(["notes"], {"a": 1})), "notes"),
    ("passes-a-string", _edit_json(M, _set(["passes"], "all")), "passes"),
    ("huge-int", _huge_int(M, "key"), "too long"),
    ("deep-nesting", _deep(M, "notes"), "nested too deeply"),
    ("stage-binary", _raw("add_kernel.ttgir", b"\x00\xff\xfe binary \x80"), "stages.ttgir"),
    ("stage-name-a-number", _edit_json(M, _set(["stages", "ttgir"], 5)), "stages.ttgir"),
]
MAP_CASES = [
    ("map-not-json", _raw(MAP, b"{"), "not valid JSON"),
    ("map-empty", _raw(MAP, b"  \n"), "empty"),
    ("map-a-list", _raw(MAP, b"[]"), "schema"),
    ("map-not-utf8", _raw(MAP, b"\xff{}"), "UTF-8"),
    ("map-lines-a-dict", _edit_json(MAP, _set(["lines"], {})), "map.json lines"),
    (
        "map-n-a-string",
        _edit_json(MAP, lambda d: d["lines"][0]["stages"].update(sass={"n": "17", "at": []})),
        "lines[0].stages.sass.n",
    ),
    (
        "map-at-strings",
        _edit_json(MAP, lambda d: d["lines"][0]["stages"].update(ptx={"n": 1, "at": ["29"]})),
        "lines[0].stages.ptx.at[0]",
    ),
    ("map-line-a-string", _edit_json(MAP, _set(["lines", 0, "line"], "11")), "lines[0].line"),
    ("map-huge-int", _huge_int(MAP, "machine"), "too long"),
    ("map-deep-nesting", _deep(MAP, "files"), "nested too deeply"),
]


@pytest.fixture
def damaged(good, tmp_path):
    def make(damage) -> Path:
        folder = tmp_path / "bad"
        shutil.copytree(good, folder)
        damage(folder)
        return folder

    return make


def _one_line_exit_2(args, word):
    code, out, err = irscope(*args)
    lines = error_lines(err)
    assert code == 2, (code, err, out[-1000:])
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(lines) == 1 and lines[0].startswith("irscope: error:"), lines
    assert word.lower() in lines[0].lower(), lines[0]
    assert len(lines[0]) < 600, lines[0]
    return lines[0]


@pytest.mark.parametrize("name, damage, word", [pytest.param(*c, id=c[0]) for c in MANIFEST_CASES])
@pytest.mark.parametrize("command", ["lines", "report", "diff"])
def test_damaged_manifest_is_one_line_exit_2(command, name, damage, word, damaged, good, tmp_path):
    bad = damaged(damage)
    page = tmp_path / "page.html"
    args = {"lines": ["lines", bad], "report": ["report", bad, "-o", page], "diff": ["diff", good, bad]}[command]
    if name == "stage-binary" and command != "report":  # lines reads a stage file only for --line --stage
        args += ["--stage", "ttgir"] + (["--line", "11"] if command == "lines" else [])
    _one_line_exit_2(args, word)
    assert not page.exists()


@pytest.mark.parametrize("name, damage, word", [pytest.param(*c, id=c[0]) for c in MAP_CASES])
def test_damaged_map_is_one_line_exit_2_for_lines(name, damage, word, damaged):
    _one_line_exit_2(["lines", damaged(damage)], word)


@pytest.mark.parametrize("name, damage, word", [pytest.param(*c, id=c[0]) for c in MAP_CASES[:6]])
def test_damaged_map_report_still_draws_the_page_and_says_why(name, damage, word, damaged, tmp_path):
    page = tmp_path / "page.html"
    code, out, err = irscope("report", damaged(damage), "-o", page, "--no-layouts")
    assert code == 0, err
    assert "No source map in this dump" in page.read_text()


@pytest.mark.parametrize("name, damage, word", [pytest.param(*c, id=c[0]) for c in MAP_CASES[4:8]])
def test_damaged_map_by_line_diff_is_one_line(name, damage, word, damaged, good):
    _one_line_exit_2(["diff", good, damaged(damage), "--by-line"], word)


def test_multi_folder_report_leaves_the_damaged_one_out(good, tmp_path):
    root = tmp_path / "capture-out"
    for i in range(3):
        shutil.copytree(good, root / f"k{i}")
    (root / "k1" / "manifest.json").write_text(
        json.dumps({**json.loads((good / "manifest.json").read_text()), "stats": "broken"})
    )
    page = tmp_path / "page.html"
    code, out, err = irscope("report", root, "-o", page, "--no-layouts")
    assert code == 0, err
    lines = error_lines(err)
    assert len(lines) == 1 and lines[0].startswith("irscope: note:") and "k1" in lines[0] and "stats" in lines[0], lines
    assert "2 dumps; 1 damaged left out" in out
    html = page.read_text()
    assert "left out, damaged" in html and "k1" in html

    # every one damaged: nothing to draw, one line, exit 2, no page
    for i in (0, 2):
        (root / f"k{i}" / "manifest.json").write_text("[]")
    page.unlink()
    line = _one_line_exit_2(["report", root, "-o", page], "no dump could be read")
    assert "2 more" in line and not page.exists()


@pytest.mark.parametrize(
    "ttgir",
    [
        pytest.param(
            "#blocked = #ttg.blocked<{sizePerThread = [4]\nmodule { %0 = #ttg.slice<{dim = 0, parent = #ttg.slice<",
            id="unbalanced",
        ),
        pytest.param(
            "#l = #ttg.blocked<{sizePerThread = " + "[" * 5000 + "]" * 5000 + "}>\n"
            "%x = foo : tensor<4xf32, #ttg.slice<" + "{dim = 0, parent = #ttg.slice<" * 3000,
            id="deep",
        ),
    ],
)
def test_damaged_ttgir_report_draws_the_rest(good, tmp_path, ttgir):
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    (bad / "add_kernel.ttgir").write_text(ttgir)
    page = tmp_path / "page.html"
    code, out, err = irscope("report", bad, "-o", page)
    assert code == 0, err
    assert page.is_file()


def test_huge_linear_layout_is_not_drawn_and_does_not_hang():
    from irscope.report import layouts

    bases = ", ".join(f"[{1 << i}]" for i in range(34))
    ttgir = (
        f"#lin = #ttg.linear<{{register = [{bases}], lane = [], warp = [], block = []}}>\n"
        "%0 = x : tensor<17179869184xf32, #lin>\n"
    )
    t = time.monotonic()
    (lay,) = layouts.pictures(ttgir)
    assert time.monotonic() - t < 5
    assert not lay["ok"] and lay["reason"].startswith("too large"), lay["reason"]

    zero = ", ".join("[0]" for _ in range(34))  # a 1-element tile broadcast 2**34 times
    (lay,) = layouts.pictures(f"#lin = #ttg.linear<{{register = [{zero}], lane = [], warp = [], block = []}}>\n")
    assert not lay["ok"] and lay["reason"].startswith("too large"), lay["reason"]


def test_layout_conversion_has_one_deadline(monkeypatch):
    import subprocess

    from irscope.report import layouts

    seen = []

    def slow(*a, timeout=None, **kw):
        seen.append(timeout)
        raise subprocess.TimeoutExpired(a[0], timeout)

    monkeypatch.setattr(subprocess, "run", slow)
    res = layouts._run_child([{"layout": {}, "shape": [4]}] * 3)
    assert len(res) == 3 and all(r["reason"].startswith("too large or too slow") for r in res)
    assert seen and seen[0] <= layouts.TIMEOUT_S


def test_schema_names_nested_fields():
    from irscope.artifacts import schema
    from irscope.errors import BadInput

    with pytest.raises(BadInput, match=r"stats.ptx.global_load.128 is \"4\", expected a number"):
        schema.check(
            {"irscope": 1, "kernel": "k", "target": "t", "stages": {}, "stats": {"ptx": {"global_load": {"128": "4"}}}},
            schema.MANIFEST,
            "manifest.json",
        )
    with pytest.raises(BadInput, match="true or false|a number"):
        schema.check(True, schema.NUMBER, "x")
    schema.check(
        {"irscope": 1, "kernel": "k", "target": "t", "stages": {}, "new_field": object()},
        schema.MANIFEST,
        "manifest.json",
    )  # fields irscope does not read are not checked


# ---------------------------------------------------------------- spec files of the wrong shape

ARGS = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32:16", "BLOCK_SIZE": 1024}
SPEC = {"irscope_spec": 1, "file": str(VECTOR_ADD), "kernel": "add_kernel", "args": ARGS, "target": "cuda:90"}


def _spec(**fields):
    doc = {**SPEC, **fields}
    return json.dumps({k: v for k, v in doc.items() if v is not ...}).encode()


SPEC_CASES = [
    ("file-a-number", _spec(file=5), "spec field file is 5"),
    ("file-null", _spec(file=None), "spec field file is null"),
    ("file-empty", _spec(file=" "), "spec field file"),
    ("file-missing", _spec(file=...), "lacks 'file'"),
    ("kernel-a-list", _spec(kernel=["add_kernel"]), "spec field kernel"),
    ("args-a-list", _spec(args=["*fp32"]), "spec field args"),
    ("args-a-string", _spec(args="*fp32, *fp32"), "spec field args"),
    ("arg-a-list", _spec(args={**ARGS, "x_ptr": ["*fp32"]}), "spec field args.x_ptr"),
    ("arg-true", _spec(args={**ARGS, "BLOCK_SIZE": True}), "spec field args.BLOCK_SIZE"),
    ("options-a-list", _spec(options=[1]), "spec field options"),
    ("options-a-string", _spec(options="num_warps=4"), "spec field options"),
    ("option-a-list", _spec(options={"num_warps": [4]}), "options.num_warps is [4], expected an integer"),
    ("option-a-string", _spec(options={"num_warps": "4"}), "options.num_warps"),
    ("option-bool-a-string", _spec(options={"enable_fp_fusion": "yes"}), "options.enable_fp_fusion"),
    ("target-a-number", _spec(target=90), "spec field target"),
    ("target-a-list", _spec(target=["cuda:90"]), "spec field target"),
    ("target-a-dict", _spec(target={"arch": 90}), "spec field target"),
    ("huge-int", _spec(args={**ARGS, "BLOCK_SIZE": 7}).replace(b": 7", b": 7" + b"0" * 5000), "too long"),
    ("deep", _spec(launch="@").replace(b'"@"', b"[" * 100_000 + b"]" * 100_000), "nested too deeply"),
    (
        "not-utf8",
        _spec(kernel="\udcff".encode("utf-8", "surrogateescape").decode("latin-1")).replace(b"\\u00ff", b"\xff"),
        "UTF-8",
    ),
    ("a-list", b"[1]", "expected a JSON object"),
    ("empty", b"", "empty"),
]


@pytest.mark.parametrize("name, data, word", [pytest.param(*c, id=c[0]) for c in SPEC_CASES])
@pytest.mark.parametrize("command", ["dump", "diff", "sweep"])
def test_spec_file_of_the_wrong_shape_is_one_line_exit_2(command, name, data, word, tmp_path):
    spec = tmp_path / "k.json"
    spec.write_bytes(data)
    out = tmp_path / "out"
    args = {
        "dump": ["dump", spec],
        "diff": ["diff", spec, "--a", "num_warps=4", "--b", "num_warps=8"],
        "sweep": ["sweep", spec, "--axis", "num_warps=4,8"],
    }[command]
    _one_line_exit_2([*args, "-o", out], word)
    assert not out.exists()


def test_well_formed_spec_file_still_dumps(tmp_path):
    spec = tmp_path / "k.json"
    spec.write_bytes(_spec(options={"num_warps": 8, "maxnreg": None}))
    code, _, err = irscope("dump", spec, "-o", tmp_path / "out")
    assert code == 0, err


# ---------------------------------------------------------------- flags and files refused in one line

RECIPE = '[recipe]\ntarget = "h100"\npurpose = "test"\n\n[kernel.add_kernel.partitions]\n{part}\n'


@pytest.fixture
def odd(tmp_path, good):
    """Files the CLI cases below name: recipes with odd partitions, a non-UTF-8 kernel, a foreign database."""
    import sqlite3

    for name, part in [
        ("str", 'worker0 = { registers = "48" }'),
        ("float", "worker0 = { registers = 48.0 }"),
        ("bool", "worker0 = { registers = true }"),
        ("newline", '"worker0\\nx" = { registers = 48 }'),
    ]:
        (tmp_path / f"{name}.toml").write_text(RECIPE.format(part=part))
    (tmp_path / "latin1.py").write_bytes(b"import triton\n# caf\xe9\n@triton.jit\ndef k(x):\n    pass\n")
    with sqlite3.connect(tmp_path / "other.sqlite") as db:
        db.execute("CREATE TABLE invoices (id INTEGER)")
    (tmp_path / "folder").mkdir()
    return {"tmp": str(tmp_path), "man": str(good / "manifest.json")}


VA = str(VECTOR_ADD)
D = ["dump", VA, "-s", SIG, "-t", "cuda:90"]
SW = ["sweep", VA, "-s", SIG, "-t", "cuda:90", "--axis", "num_warps=4,8"]
CLI_CASES = [
    ("sig-unclosed-paren", ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32, (1, 2"], "is never closed"),
    (
        "sig-unclosed-tensordesc",
        ["dump", VA, "-s", "tensordesc<fp16[64, 64], *fp32, *fp32, i32, 1024"],
        "'<' at column 11 is never closed",
    ),
    ("sig-stray-close", ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32, 1024)"], "closes no bracket"),
    ("sig-nested-600", ["dump", VA, "-s", "*fp32, *fp32, *fp32, i32, " + "(" * 600 + "1" + ")" * 600], "nested"),
    ("arg-nested-600", [*D, "--arg", "BLOCK_SIZE=" + "[" * 600 + "]" * 600], "nested"),
    ("seed-negative", [*SW, "--search", "optuna", "--trials", "2", "--seed", "-1"], "--seed"),
    ("seed-huge", [*SW, "--search", "optuna", "--trials", "2", "--seed", "1e20"], "--seed"),
    ("seed-too-big", [*SW, "--search", "random", "--trials", "2", "--seed", str(2**40)], "--seed"),
    ("db-without-time", [*SW, "--db", "{tmp}/x.sqlite"], "--db"),
    ("db-and-no-db", [*SW, "--time", "--db", "{tmp}/x.sqlite", "--no-db"], "--no-db"),
    ("db-foreign", ["sweep", VA, "--history", "--db", "{tmp}/other.sqlite"], "invoices"),
    (
        "pin-partition-conflict",
        [*D, "--pin-partition", "worker0:registers=48", "--pin-partition", "worker0:registers=56"],
        "given twice",
    ),
    ("recipe-partition-str", [*D, "--recipe", "{tmp}/str.toml"], "expected an integer"),
    ("recipe-partition-float", [*D, "--recipe", "{tmp}/float.toml"], "expected an integer"),
    ("recipe-partition-bool", [*D, "--recipe", "{tmp}/bool.toml"], "expected an integer"),
    ("recipe-key-newline", [*D, "--recipe", "{tmp}/newline.toml"], "workerN"),
    ("recipe-folder", [*D, "--recipe", "{tmp}/folder"], "is a folder"),
    ("spec-with-signature", ["dump", "{man}", "-s", "*fp32"], "carries its own specialization"),
    ("signature-of-a-spec", ["signature", "{man}"], "a spec file, not a kernel file"),
    ("kernel-not-utf8", ["dump", "{tmp}/latin1.py", "-s", "i32"], "not UTF-8"),
    ("num-ctas-3", [*D, "--set", "num_ctas=3"], "power of two"),
    ("num-ctas-32", [*D, "--set", "num_ctas=32"], "1, 2, 4, 8, 16"),
    ("num-ctas-on-ampere", ["dump", VA, "-s", SIG, "-t", "cuda:80", "--set", "num_ctas=2"], "no thread-block clusters"),
]


@pytest.mark.parametrize("name, argv, word", [pytest.param(*c, id=c[0]) for c in CLI_CASES])
def test_flags_and_files_refused_in_one_line(name, argv, word, odd, tmp_path, monkeypatch):
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    argv = [a.format(**odd) if "{" in a and not a.startswith(("*", "tensordesc")) else a for a in argv]
    if argv[0] in ("dump", "sweep") and "--history" not in argv:
        argv += ["-o", str(out)]
    line = _one_line_exit_2(argv, word)
    assert "\n" not in line
    assert not out.exists()
    if name == "db-foreign":
        import sqlite3

        with sqlite3.connect(Path(odd["tmp"]) / "other.sqlite") as db:  # left as it was: no irscope table
            assert {r[0] for r in db.execute("SELECT name FROM sqlite_master")} == {"invoices"}


def test_pin_partition_given_twice_alike_is_fine():
    from irscope import jobs

    request = jobs.Request(
        VECTOR_ADD, (), SIG, target="cuda:90", pin_partitions=("worker0:registers=48", "0:registers=48")
    )
    (job,) = jobs.resolve(request)
    assert [p.registers for p in job.settings.pins.partitions] == [48, 48]


@pytest.mark.parametrize("reply", [b"", b"HTTP/1.1 400 Bad Request\r\n\r\n"], ids=["silent", "http"])
def test_ray_address_where_something_else_listens_is_refused_fast(reply, tmp_path):
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            if reply:
                conn.sendall(reply)
                conn.close()
            else:
                threading.Timer(10, conn.close).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        from irscope.sweep import ray_engine

        t = time.monotonic()
        why = ray_engine._reachable(f"127.0.0.1:{port}", timeout=1.0)
        assert why and "not" in why and time.monotonic() - t < 3, why
        pytest.importorskip("ray")
        t = time.monotonic()
        line = _one_line_exit_2([*SW, "--cluster", f"ray:127.0.0.1:{port}", "-o", tmp_path / "o"], "Ray's GCS")
        assert time.monotonic() - t < 30 and f"127.0.0.1:{port}" in line
    finally:
        stop.set()
        server.close()


def test_ray_probe_accepts_an_http2_server():
    import socket
    import threading

    from irscope.sweep import ray_engine

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve():
        conn, _ = server.accept()
        conn.recv(64)
        conn.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")  # an HTTP/2 server's SETTINGS frame
        time.sleep(0.5)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        assert ray_engine._reachable(f"127.0.0.1:{server.getsockname()[1]}", timeout=2.0) is None
    finally:
        server.close()


def test_bench_checks_ref_before_asking_for_the_gpu(monkeypatch):
    from irscope.cli import bench as bench_cli

    monkeypatch.setattr(bench_cli, "timing_session", lambda: pytest.fail("asked for the GPU before --ref was read"))
    _one_line_exit_2(
        [
            "bench",
            VA,
            "--args",
            "x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), out_ptr=empty(4096, fp32), n_elements=4096",
            "--const",
            "BLOCK_SIZE=1024",
            "--grid",
            "4",
            "--target",
            "h100",
            "--ref",
            "torch.nosuch(x_ptr)",
        ],
        "--ref",
    )


# ------------------------------------------------------------------ issue #41 item 7


def _profiled(tmp_path: Path, edit) -> Path:
    from test_profile import _doc

    folder = tmp_path / "measured"
    folder.mkdir()
    doc = {"irscope_profile": 1, **_doc("gluon")}
    edit(doc)
    (folder / "profile.json").write_text(json.dumps(doc) if isinstance(doc, dict) else doc)
    return folder


def _huge_samples(doc: dict) -> None:
    doc["totals"]["samples"] = 10**400  # JSON holds it; a float cannot


def _zero_samples(doc: dict) -> None:
    doc["totals"]["samples"] = 0
    doc["unmapped"] = {"samples": 5}


def _escaping_stall(doc: dict) -> None:
    doc["lines"][0]["stalls"] = {"\x1b]0;pwned\x07\x1b[2J": 5}
    doc["totals"]["stalls"] = {"\x1b[31mred": 3}


@pytest.mark.parametrize(
    "edit, code, word",
    [(_huge_samples, 2, "totals.samples"), (_zero_samples, 0, "0 warp samples"), (_escaping_stall, 0, "\\x1b")],
)
def test_profile_dir_with_odd_figures_is_one_line_or_shown_safely(edit, code, word, tmp_path):
    got, out, err = irscope("profile", str(_profiled(tmp_path, edit)))
    assert got == code and "internal error" not in err and "Traceback" not in err, err
    assert word in (out if code == 0 else err)
    assert "\x1b" not in out and "\x1b" not in err
    if code:
        assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "call, word",
    [
        ("irscope.dump(K, signature=1, target='h100')", "signature="),
        ("irscope.dump(K, signature=S, target='h100', set='x')", "set="),
        ("irscope.dump(K, signature=S, target=1)", "target="),
        ("irscope.dump(K, signature=S, target='h100', args=[1])", "args="),
        ("irscope.sweep(K, signature=S, target='h100', grid=None)", "grid="),
        ("irscope.diff('a', 'b', stages=1)", "stages="),
        ("irscope.diff('a', 'b', context=-1)", "context=-1"),
        ("irscope.diff('a', 'b', context='3')", "context="),
    ],
)
def test_the_api_says_a_wrong_type_as_bad_input(call, word):
    import irscope as api

    namespace = {"irscope": api, "K": str(VECTOR_ADD), "S": "*fp32, *fp32, *fp32, i32, 1024"}
    with pytest.raises(api.BadInput) as e:
        eval(call, namespace)  # noqa: S307 - the test's own literal calls
    assert word in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("given, word", [("", "give a Triton release"), ("/usr/bin/python3\nx", "control character")])
def test_a_triton_that_is_empty_or_holds_a_newline_is_one_line(given, word):
    code, _, err = irscope("diff-releases", VECTOR_ADD, "-s", "*fp32, *fp32, *fp32, i32, 1024", "--a-triton", given)
    assert code == 2 and word in err and len(err.strip().splitlines()) == 1, err


def test_a_full_disk_under_dump_o_is_one_line(tmp_path):
    import subprocess
    import sys

    code = (
        "import errno, sys\nfrom irscope import artifacts\n"
        "def full(*a, **k):\n    raise OSError(errno.ENOSPC, 'No space left on device')\n"
        "artifacts.write = full\nfrom irscope.cli import main\n"
        f"main(['dump', {str(VECTOR_ADD)!r}, '-s', '*fp32, *fp32, *fp32, i32, 1024', '-t', 'h100', '-o', "
        f"{str(tmp_path / 'out')!r}, '--no-cache'])\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    assert p.stderr.strip().splitlines() == [
        "irscope: error: could not write the output or a cache (irscope's, Triton's): No space left on device"
    ]
