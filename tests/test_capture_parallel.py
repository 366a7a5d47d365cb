"""A capture's dumps in worker processes (#29): each worker rebuilds the kernel from its spec file's closure
(capture/closure.py), never from the script, and its dump is the one irscope's own process would make;
whatever is in doubt is dumped in-process, and --json says which and why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import triton
import triton.language as tl

from irscope.capture import closure, parallel
from tests.helpers import EXAMPLES, FBTRITON, ROOT, run_cli

# a tutorial-style script: an autotuned kernel (two configs), a @jit callee defined in the script, a
# constexpr global, a libdevice call, and a module-level run that is the script itself
SCRIPT = """\
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

SCALE: tl.constexpr = tl.constexpr(2)


@triton.jit
def scaled_exp(x):
    return libdevice.exp(x) * SCALE  # the callee's line


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256}, num_warps=8)], key=["n"])
@triton.jit
def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, scaled_exp(x), mask=m)


x = torch.randn(1000, device="cuda")
y = torch.empty_like(x)
kernel[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, y, 1000)
assert torch.allclose(y, torch.exp(x) * 2, atol=1e-3)
"""
TEXT_STAGES = ("ttir", "ttgir", "llir", "ptx")


def _capture(script: Path, out: Path, cache: Path, *flags: str):
    return run_cli(
        "capture",
        str(script),
        "--compile-only",
        "--target",
        "cuda:90",
        "-o",
        str(out),
        *flags,
        env={"IRSCOPE_CACHE_DIR": str(cache)},
    )


def _same_dumps(a: Path, b: Path) -> list[str]:
    """The dump folders under a (by their cache-key names), each stage's text equal to b's."""
    folders = sorted(p.relative_to(a) for p in a.glob("*/*/manifest.json"))
    assert folders, f"no dumps under {a}"
    for rel in folders:
        mine = {p.suffix: p.read_text() for p in (a / rel.parent).iterdir() if p.suffix[1:] in TEXT_STAGES}
        theirs = {p.suffix: p.read_text() for p in (b / rel.parent).iterdir() if p.suffix[1:] in TEXT_STAGES}
        assert {".ttgir", ".ptx"} <= set(mine) and set(mine) == set(theirs), (rel, set(mine), set(theirs))
        for stage, text in mine.items():
            assert text == theirs[stage], f"{rel.parent} {stage} differs between the worker and in-process dumps"
    return [str(r.parent) for r in folders]


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory):
    """The script captured twice: dumps in two workers, then one after another in-process (--jobs 1)."""
    tmp = tmp_path_factory.mktemp("tutorial")
    script = tmp / "tutorial_style.py"
    script.write_text(SCRIPT)
    workers = _capture(script, tmp / "w", tmp / "cw", "--jobs", "2", "--json")
    here = _capture(script, tmp / "h", tmp / "ch", "--jobs", "1")
    assert workers.code == 0, workers.err[-2000:]
    assert here.code == 0, here.err[-2000:]
    return script, tmp, json.loads(workers.out), here


@pytest.mark.torch
def test_a_worker_rebuilds_the_kernel_and_dumps_what_irscope_itself_dumps(tutorial):
    script, tmp, doc, _ = tutorial
    caps = doc["capture"]["captures"]
    assert len(caps) == 2 and all(c["dumped_in"] == "worker" and c["folder"] for c in caps), caps
    folders = _same_dumps(tmp / "w", tmp / "h")
    assert len(folders) == 2
    # the line info is the script's own: the callee's line, in the script's own file
    line = SCRIPT.splitlines().index("    return libdevice.exp(x) * SCALE  # the callee's line") + 1
    ttgir = next((tmp / "w" / folders[0]).glob("*.ttgir")).read_text()
    assert f'"{script.resolve()}":{line}:' in ttgir or f'"{script}":{line}:' in ttgir


@pytest.mark.torch
def test_the_spec_file_holds_the_closure_as_data(tutorial):
    _, _, doc, _ = tutorial
    spec = json.loads(Path(doc["capture"]["captures"][0]["spec"]).read_text())
    fns = spec["closure"]["functions"]
    kernel = fns[spec["closure"]["kernel"]]
    assert kernel["globals"]["scaled_exp"] == {"jit": "__main__:scaled_exp"}
    assert kernel["globals"]["tl"] == {"module": "triton.language"}
    callee = fns["__main__:scaled_exp"]
    assert callee["globals"]["SCALE"] == {"constexpr": {"value": 2}}
    assert callee["globals"]["libdevice"] == {"module": "triton.language.extra.libdevice"}
    assert callee["lines"][0].startswith("@triton.jit") and callee["def_line"] == callee["first_line"] + 1


@pytest.mark.torch
def test_the_json_and_the_summary_say_where_the_time_went(tutorial):
    _, _, doc, here = tutorial
    t = doc["capture"]["timing"]
    assert t["script_s"] > 0 and t["dumps_s"] > 0 and t["dumped_in_workers"] == 2 and t["dumped_in_process"] == 0
    assert t["dominant"] in ("the script's own work", "the interpreter", "preparing specs", "the dumps")
    line = next(x for x in here.out.splitlines() if "time: script" in x)
    assert "0 in workers, 2 here: --jobs 1" in line and "dominate" in line


# the example kernels (Triton's and Gluon's), each launched at two block sizes: two captures a kernel
EXAMPLE_LAUNCHES = f"""\
import sys
import torch
import triton
from triton.experimental.gluon import language as gl

sys.path.insert(0, {str(EXAMPLES)!r})
from vector_add import add_kernel
from gluon_add import gluon_add_kernel

n = 4096
x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
for block in (1024, 512):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK_SIZE=block)
    if {FBTRITON!r}:
        continue   # fbtriton's gl.load cannot compile examples/gluon_add.py
    out = torch.empty_like(x)
    layout = gl.BlockedLayout([block // 128], [32], [4], [0])
    gluon_add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block, layout=layout, num_warps=4)
"""


@pytest.mark.torch
def test_example_kernels_dump_the_same_in_workers(tmp_path):
    script = tmp_path / "launch_examples.py"
    script.write_text(EXAMPLE_LAUNCHES)
    w = _capture(script, tmp_path / "w", tmp_path / "cw", "--jobs", "2", "--json")
    h = _capture(script, tmp_path / "h", tmp_path / "ch", "--jobs", "1")
    assert w.code == 0 and h.code == 0, (w.err[-1500:], h.err[-1500:])
    doc = json.loads(w.out)["capture"]
    caps = doc["captures"]
    assert len(caps) == (2 if FBTRITON else 4), doc["stopped"]
    assert {c["dumped_in"] for c in caps} == {"worker"}, [(c["kernel"], c["in_process_why"]) for c in caps]
    assert len(_same_dumps(tmp_path / "w", tmp_path / "h")) == len(caps)


def test_every_example_kernel_is_rebuilt_with_the_captured_cache_key_or_says_why_not(tmp_path):
    """Each example file's kernels: described here, rebuilt in a fresh process that never runs the file."""
    from irscope.kernel import loader

    docs = {}
    for path in sorted(EXAMPLES.glob("*.py")):
        if path.name.startswith("tlx") and not FBTRITON:
            continue
        for ref in loader.select_kernels(path, None, every=True):
            doc, why = closure.describe(ref.fn)
            assert (doc is None) == (why is not None)
            docs[f"{path.name}:{ref.name}"] = doc or why
    rebuilt = {k: d for k, d in docs.items() if isinstance(d, dict)}
    assert len(rebuilt) >= 6, docs
    (tmp_path / "docs.json").write_text(json.dumps(rebuilt))
    code = (
        "import json, sys\nfrom irscope.capture import closure\n"
        "docs = json.load(open(sys.argv[1]))\n"
        "print(json.dumps({k: closure.rebuilt_exactly(closure.rebuild(d), d) for k, d in docs.items()}))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "docs.json")], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout.splitlines()[-1]) == {k: True for k in rebuilt}


# two kernels of one file whose callees sit one under the other, the second indented under an `if` (as
# fla's exp/exp2): a worker rebuilding both must read each callee's block as it ends in the file
SIBLINGS = """\
import triton
import triton.language as tl


@triton.jit
def first(x):
    return x + 1
if True:
    @triton.jit
    def second(x): return x * 2


@triton.jit
def uses_second(p):
    tl.store(p, second(tl.load(p)))


@triton.jit
def uses_first(p):
    tl.store(p, first(tl.load(p)))
"""


def test_kernels_of_one_file_rebuilt_in_one_worker_each_read_their_own_lines(tmp_path):
    from irscope.kernel import loader

    path = tmp_path / "siblings.py"
    path.write_text(SIBLINGS)
    refs = {r.name: r.fn for r in loader.select_kernels(path, None, every=True)}
    docs = [closure.describe(refs[name])[0] for name in ("uses_second", "uses_first")]
    assert all(docs)
    (tmp_path / "docs.json").write_text(json.dumps(docs))
    code = (
        "import json, sys\nfrom irscope.capture import closure\n"
        "print([closure.rebuilt_exactly(closure.rebuild(d), d) for d in json.load(open(sys.argv[1]))])\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "docs.json")], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert p.returncode == 0 and p.stdout.split()[-2:] == ["[True,", "True]"], (p.stdout, p.stderr[-1500:])


# kernels whose closure is not data: each is dumped in-process, and says why
TABLE = [1, 2, 3]


@triton.jit
def _reads_a_list(x_ptr):
    tl.store(x_ptr, TABLE[0])


def _make_closure():
    n = 3

    @triton.jit
    def inner(x_ptr):
        tl.store(x_ptr, n)

    return inner


@pytest.mark.parametrize(
    "jit, why",
    [
        (_reads_a_list, "TABLE (list), which is not plain data"),
        (_make_closure(), "enclosing function"),
    ],
)
def test_a_closure_that_is_not_data_is_refused_with_its_reason(jit, why):
    doc, reason = closure.describe(jit)
    assert doc is None and why in reason


def test_a_worker_hands_back_a_kernel_it_cannot_rebuild_exactly(tmp_path, worker_linecache):
    doc, _ = closure.describe(_make_plain())
    doc["cache_key"] = "0" * 64  # as if the kernel's file had changed since the capture
    spec = tmp_path / "k-1.json"
    spec.write_text(json.dumps({"closure": doc}))
    result, _ = parallel.dump_capture({"spec_file": str(spec), "closure": doc})  # the worker's function, here
    assert result == {"status": "not rebuilt", "reason": "the rebuilt kernel's Triton cache key differs"}


@triton.jit
def _plain(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


def _make_plain():
    return _plain


def test_jobs_is_refused_where_nothing_is_captured():
    r = run_cli("dump", str(EXAMPLES / "vector_add.py"), "--signature", "*fp32, *fp32, *fp32, i32, 1024", "--jobs", "2")
    assert r.code == 2 and "--jobs" in r.err and len(r.err.strip().splitlines()) == 1, r.err


@pytest.mark.torch
def test_a_knob_the_script_set_in_python_keeps_every_dump_in_process(tmp_path):
    """`triton.knobs.compilation.disable_line_info = True` in the script changes what Triton builds, and a
    worker process would not see it: every capture is dumped here, saying why, and its PTX has no line info."""
    script = tmp_path / "knob_script.py"
    script.write_text(
        SCRIPT.replace(
            "import triton.language as tl\n",
            "import triton.language as tl\ntriton.knobs.compilation.disable_line_info = True\n",
            1,
        )
    )
    r = _capture(script, tmp_path / "o", tmp_path / "c", "--jobs", "2", "--json")
    assert r.code == 0, r.err[-2000:]
    caps = json.loads(r.out)["capture"]["captures"]
    assert len(caps) == 2 and {c["dumped_in"] for c in caps} == {"in-process"}, caps
    assert all("compilation.disable_line_info" in c["in_process_why"] for c in caps)
    for ptx in (tmp_path / "o").glob("*/*/*.ptx"):
        assert ".loc" not in ptx.read_text()


QUICK_WORKER = """
from irscope import workers
workers.serve(workers.READY, lambda job: workers.say("RESULT", {"status": "ok", "n": job["n"]}))
"""


class _QuickPool(parallel.workers.Pool):
    def argv(self):
        return ("-c", QUICK_WORKER)


def test_an_interrupt_keeps_the_results_already_sent(monkeypatch):
    """SIGINT/SIGTERM arrive as an exception in the pool's loop; a worker's RESULT already in the pipe (its
    dump published) still reaches `finished` before the pool goes down, so the capture lists that dump
    (tests/test_capture_hardening's SIGTERM test lost one this way: 0 of 8 dumps, one folder on disk)."""
    from irscope import workers

    real = workers.receive
    raised = []

    def signal_on_a_result(inbox, timeout):
        msg = real(inbox, timeout)
        if msg is not None and msg.tag == "RESULT" and not raised:
            with inbox.mutex:  # back where it was: the signal came while it waited in the inbox
                inbox.queue.appendleft(msg)
                inbox.unfinished_tasks += 1
                inbox.not_empty.notify()
            raised.append(True)
            raise KeyboardInterrupt
        return msg

    monkeypatch.setattr(workers, "receive", signal_on_a_result)
    got = []
    pool = _QuickPool(1, 60.0)
    with pytest.raises(KeyboardInterrupt):
        pool.run([1, 2, 3], lambda n: {"n": n}, lambda job, outcome, s: got.append((job, outcome["n"])))
    assert raised and got == [(1, 1)] and not pool.workers
