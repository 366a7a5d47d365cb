"""Issue #41's harness: a hostile cache, stale inputs and a hostile capture folder against `irscope dump`.

    python benchmarks/hostile_cache.py [--irscope DIR]

--irscope DIR runs the irscope found in DIR (an older checkout, for the figures before; default: this one).
Each case seeds a cache with one dump of a small kernel, damages it as a writer of a shared cache could (an
entry's manifest, a link, a FIFO, a forged record of the direct mode, an edit that keeps a file's size with
its stat put back), runs the dump again and says whether the run was clean: exit 0, no traceback or
internal error, within 60 s, nothing written outside -o (and the cache), no secret from outside printed or
copied, no escape sequence printed, and the dump the one the kernel file says now (never stale).
Prints one line per case and the count of clean ones.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"
KERNEL = """import triton
import triton.language as tl
from helpers import combine


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, combine(tl.load(x_ptr + offs, mask=mask), tl.load(y_ptr + offs, mask=mask)), mask=mask)
"""
HELPER = "import triton\n\n\n@triton.jit\ndef combine(x, y):\n    return x + y\n"
SECRET = "TOP-SECRET-NOT-PTX"

# in the irscope under test: rewrite a record, with its MAC where that irscope signs records
RESIGN = """
import json, sys
from irscope.direct import record
from irscope.direct.record import file_stat
path, restamp, edit = sys.argv[1], sys.argv[2] == "1", json.loads(sys.argv[3])
doc = json.load(open(path))
if restamp:
    for name, stamp in doc["files"].items():
        doc["files"][name] = file_stat(name) + [stamp[-1]]
for k, v in edit.items():
    if k == "entry_key":
        doc["entries"][0]["key"] = v
    else:
        doc[k] = v
key = path.rsplit("/", 1)[-1][:-5]
if hasattr(record, "_secret") and edit.get("signed", True) and restamp:
    doc.pop("mac", None)
    record.write(key, doc)
else:
    open(path, "w").write(json.dumps(doc))
"""


def _env(tmp: Path, irscope: Path) -> dict:
    return dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp / "cache"), PYTHONPATH=str(irscope), PYTHONDONTWRITEBYTECODE="1")


def _dump(tmp: Path, irscope: Path, *extra: str) -> subprocess.CompletedProcess | None:
    argv = [sys.executable, "-m", "irscope", "dump", str(tmp / "k" / "kern.py"), "-s", SIG, "-t", "h100"]
    try:
        return subprocess.run(
            [*argv, "-o", str(tmp / "out"), "--json", *extra],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=60,
            env=_env(tmp, irscope),
        )
    except subprocess.TimeoutExpired:
        return None


def _entries(tmp: Path) -> list[Path]:
    return [p for p in (tmp / "cache").iterdir() if len(p.name) == 64 and not p.name.startswith(".")]


def _resign_entry(entry: Path) -> None:
    """Checksums (and the digest, where this irscope writes one) computed afresh, as a hostile writer can."""
    sums_path = entry / ".irscope-sha256.json"
    old = json.loads(sums_path.read_text())
    sums = {}
    for p in sorted(entry.rglob("*")):
        if p.name != sums_path.name and p.is_file():
            try:
                sums[p.relative_to(entry).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError:
                pass
    if "digest" in old:
        h = hashlib.sha256(f"irscope-entry\0{entry.name}\0".encode())
        for name in sorted(sums):
            h.update(f"{name}\0{sums[name]}\n".encode())
        doc = {"key": entry.name, "files": sums, "digest": h.hexdigest()}
    else:
        doc = sums
    sums_path.write_text(json.dumps(doc))


def _manifest(entry: Path, **change) -> None:
    m = json.loads((entry / "manifest.json").read_text())
    m.update(change)
    (entry / "manifest.json").write_text(json.dumps(m))
    _resign_entry(entry)


def _ptx_name(entry: Path) -> Path:
    return entry / json.loads((entry / "manifest.json").read_text())["stages"]["ptx"]


def _link_stage(entry: Path, tmp: Path) -> None:
    ptx = _ptx_name(entry)
    ptx.unlink()
    ptx.symlink_to(tmp / "secret.txt")
    _resign_entry(entry)


def _link_folder(entry: Path, tmp: Path) -> None:
    (tmp / "outside").mkdir(exist_ok=True)
    (tmp / "outside" / "x.txt").write_text(SECRET)
    (entry / "sub").symlink_to(tmp / "outside")
    _resign_entry(entry)


def _entry_link(entry: Path, tmp: Path) -> None:
    if (tmp / "elsewhere").exists():
        shutil.rmtree(entry)
        return
    shutil.move(entry, tmp / "elsewhere")
    _ptx_name(tmp / "elsewhere").write_text(SECRET)
    _resign_entry(tmp / "elsewhere")
    entry.symlink_to(tmp / "elsewhere")


def _fifo(entry: Path, name: str) -> None:
    (entry / name).unlink()
    os.mkfifo(entry / name)


ENTRY_CASES = {
    "manifest kernel ../../escaped": lambda e, t: _manifest(e, kernel="../../escaped"),
    "manifest kernel absolute": lambda e, t: _manifest(e, kernel=str(t / "abs")),
    "manifest target a/b": lambda e, t: _manifest(e, target="a/../../b"),
    "manifest kernel with NUL": lambda e, t: _manifest(e, kernel="add\0kernel"),
    "manifest kernel with ESC": lambda e, t: _manifest(e, kernel="add\x1b]0;pwned\x07"),
    "manifest nested 100000 deep": lambda e, t: ((e / "manifest.json").write_text("[" * 100000), _resign_entry(e)),
    "manifest of another kernel": lambda e, t: _manifest(e, kernel="matmul_kernel"),
    "stage file a link outside": _link_stage,
    "extra file a link outside": lambda e, t: ((e / "x.txt").symlink_to(t / "secret.txt"), _resign_entry(e)),
    "folder a link outside": _link_folder,
    "the entry a link": _entry_link,
    "manifest a FIFO": lambda e, t: _fifo(e, "manifest.json"),
    "checksums a FIFO": lambda e, t: _fifo(e, ".irscope-sha256.json"),
    "manifest a link to /dev/zero": lambda e, t: (
        (e / "manifest.json").unlink(),
        (e / "manifest.json").symlink_to("/dev/zero"),
    ),
}

RECORD_CASES = {
    "record summary made up, escapes": {"summary": "\x1b]0;pwned\x07\x1b[2Jadd_kernel: 1 registers\n"},
    "record status 255": {"status": 255},
    "record status a string": {"status": "boom"},
    "record with no entries": {"entries": []},
    "record entry key ../forged": {"entry_key": "../forged"},
}


def _record(tmp: Path) -> Path | None:
    return next((tmp / "cache" / ".irscope-direct").glob("*.json"), None)


def _clean(tmp: Path, r: subprocess.CompletedProcess | None, want: str = "add.f32") -> str:
    """'' when the run was clean, else why not."""
    if r is None:
        return "hung (60 s)"
    if "Traceback" in r.stderr or "internal error" in r.stderr:
        return "internal error: " + r.stderr.strip().splitlines()[-1][:80]
    if r.returncode != 0:
        return f"exit {r.returncode}: {r.stderr.strip()[:80]}"
    if "\x1b" in r.stdout or "\x1b" in r.stderr:
        return "escape sequence printed"
    if SECRET in r.stdout or "1 registers" in r.stdout:
        return "forged output printed"
    outside = [
        p
        for p in tmp.rglob("*")
        if not any(p.is_relative_to(tmp / d) for d in ("out", "cache", "k", "elsewhere", "outside"))
        and p.name not in ("secret.txt", "abs")
    ]
    if outside or (tmp / "abs").exists() or list(tmp.parent.glob("escaped")):
        return "wrote outside -o"
    try:
        k = json.loads(r.stdout)["kernels"][0]
        folder, ptx = Path(k["folder"]), Path(k["stages"]["ptx"]).read_text()
    except (ValueError, KeyError, IndexError, OSError) as e:
        return f"no dump: {e}"
    if not folder.resolve().is_relative_to((tmp / "out").resolve()):
        return "dump folder outside -o"
    if folder.parent.name != "add_kernel":
        return f"served another kernel's dump ({folder.parent.name})"
    if SECRET in ptx or any(SECRET in p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file()):
        return "a file from outside the cache copied into the dump"
    if want not in ptx:
        return "stale: the dump is not of the kernel as it is now"
    return ""


def _seed(base: Path, irscope: Path) -> Path:
    seed = base / "seed"
    (seed / "k").mkdir(parents=True)
    (seed / "k" / "kern.py").write_text(KERNEL)
    (seed / "k" / "helpers.py").write_text(HELPER)
    (seed / "secret.txt").write_text(SECRET)
    assert (r := _dump(seed, irscope)) is not None and r.returncode == 0, r and r.stderr
    shutil.rmtree(seed / "out")
    shutil.rmtree(seed / "cache")  # the full key names the kernel file: each case makes its own entry
    return seed


def _case(base: Path, seed: Path, name: str, irscope: Path, record: bool = False) -> Path:
    """A copy of the seed's kernel and cache entries (records are keyed by the folder: none copied); with
    `record`, one dump run there first (a hit of the full key) leaves this folder's record."""
    tmp = base / name.replace(" ", "_").replace("/", "_") / "case"  # its own parent: what climbs out lands there
    shutil.copytree(seed, tmp, symlinks=True)
    shutil.rmtree(tmp / "cache" / ".irscope-direct", ignore_errors=True)
    if record:  # this folder's entry (the key names the kernel's file), then a record that serves it
        for _ in range(3):
            assert (r := _dump(tmp, irscope)) is not None and r.returncode == 0, r and r.stderr
            if json.loads(r.stdout)["kernels"][0]["cache"] == "direct":
                break
        else:
            raise AssertionError("the direct mode never served the repeat")
    return tmp


def _same_size_edit(path: Path, old: str, new: str) -> None:
    st = path.stat()
    path.write_text(path.read_text().replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--irscope", type=Path, default=Path(__file__).resolve().parent.parent)
    irscope = ap.parse_args().irscope.resolve()
    results: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        seed = _seed(base, irscope)
        for name, damage in ENTRY_CASES.items():
            tmp = _case(base, seed, name, irscope, record=True)
            shutil.rmtree(tmp / "cache" / ".irscope-direct")  # no record: the full key's lookup meets the entry
            shutil.rmtree(tmp / "out")
            for entry in _entries(tmp):
                damage(entry, tmp)
            results.append((name, _clean(tmp, _dump(tmp, irscope))))
        for name, edit in {**RECORD_CASES, "record a FIFO": None, "record a link to /dev/zero": None}.items():
            tmp = _case(base, seed, name, irscope, record=True)
            rec = _record(tmp)
            assert rec is not None
            if edit is None:
                rec.unlink()
                os.mkfifo(rec) if "FIFO" in name else rec.symlink_to("/dev/zero")
            else:
                subprocess.run(
                    [sys.executable, "-c", RESIGN, str(rec), "0", json.dumps({**edit, "signed": False})],
                    env=_env(tmp, irscope),
                    check=True,
                )
            results.append((name, _clean(tmp, _dump(tmp, irscope))))
        for name, (file, old, new, want) in {
            "same-size edit of the kernel file": (
                "kern.py",
                "offs = tl.program_id(0)",
                "offs = tl.program_id(1)",
                "ctaid.y",
            ),
            "same-size edit of a @jit helper": ("helpers.py", "x + y", "x - y", "sub.f32"),
        }.items():
            tmp = _case(base, seed, name, irscope, record=True)
            _same_size_edit(tmp / "k" / file, old, new)
            rec = _record(tmp)
            assert rec is not None
            subprocess.run(  # the edit hidden from the stat, as within one tick of a coarse clock
                [sys.executable, "-c", RESIGN, str(rec), "1", "{}"], env=_env(tmp, irscope), check=True
            )
            results.append((name, _clean(tmp, _dump(tmp, irscope), want)))
    for name, why in results:
        print(f"{'clean' if not why else 'NOT clean':9}  {name}{'' if not why else ': ' + why}")
    print(f"{sum(1 for _, why in results if not why)} of {len(results)} clean  (irscope from {irscope})")


if __name__ == "__main__":
    main()
