"""Which irscope files does `--set num_warps=8` pass through, from the command line to the compile?

    python benchmarks/walk_set.py        (from the checkout's root; prints to stderr)

Runs `irscope dump examples/vector_add.py ... --set num_warps=8 --no-cache` in this process with a
profile hook on every call into irscope's code. A frame *holds the value* when one of its locals carries
it in any of its forms: the text 'num_warps=8', a (key, value) pair, a mapping, a dataclass (a Request,
a Job, Settings) or Triton's backend options with num_warps=8.

Three answers, from strict to loose:
- **the walk** (issue #37's figure): the irscope frames on the call stack at the moment
  adapter/compiling.py's `compile` (the `triton.compile` call) is entered that hold the value: the path
  the value travels down from the command line, in order, outermost first;
- **consulted**: files whose functions were handed the value before the compile and returned (a parser,
  a check, Triton's binder): leaves the walk calls, not steps it goes through;
- **after**: files that see the value once the compile is done (the dump's checks, stats, findings).
"""

import dataclasses
import sys

sys.argv = [
    "irscope",
    "dump",
    "examples/vector_add.py",
    "-s",
    "*fp32, *fp32, *fp32, i32, 1024",
    "--target",
    "cuda:90",
    "--set",
    "num_warps=8",
    "--no-cache",
    "-o",
    "/tmp/walk-out",
    "--json",
]
before: list[tuple[str, str]] = []  # (file, function) of each call that held the value, before the compile
after: list[tuple[str, str]] = []
walk: list[tuple[str, str]] = []  # the stack at the compile


def carries(v, depth=0):
    if isinstance(v, str):
        return v == "num_warps=8"
    if depth > 4:
        return False
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "num_warps" and v[1] in (8, "8"):
        return True
    if isinstance(v, dict):
        if v.get("num_warps") == 8 and not isinstance(v.get("num_warps"), bool):
            return True
        return any(carries(x, depth + 1) for x in list(v.values())[:50])
    if isinstance(v, (list, tuple)):
        return any(carries(x, depth + 1) for x in v[:50])
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return any(carries(getattr(v, f.name, None), depth + 1) for f in dataclasses.fields(v))
    if type(v).__name__ in ("CUDAOptions", "HIPOptions"):
        return getattr(v, "num_warps", None) == 8
    return False


def rel(frame) -> str | None:
    f = frame.f_code.co_filename
    if "/irscope/" in f and "/tests/" not in f and "/benchmarks/" not in f:
        return f.split("/irscope/", 1)[1]
    return None


def holds(frame) -> bool:
    try:
        return any(carries(v) for v in frame.f_locals.values())
    except Exception:
        return False


def prof(frame, event, arg):
    if event != "call":
        return
    where = rel(frame)
    if where is None:
        return
    if where == "adapter/compiling.py" and frame.f_code.co_name == "compile" and not walk:
        f = frame
        while f is not None:
            if rel(f) is not None and holds(f):
                walk.append((rel(f), f.f_code.co_name))
            f = f.f_back
        walk.reverse()
        return
    if holds(frame):
        entry = (where, frame.f_code.co_name)
        seen = after if walk else before
        if not seen or seen[-1] != entry:
            seen.append(entry)


sys.setprofile(prof)
from irscope import entry  # noqa: E402 - imported under the profile hook, so its calls are traced

try:
    entry.main()
except SystemExit:
    pass
sys.setprofile(None)


def files(calls):
    out: list[str] = []
    for r, _fn in calls:
        if r not in out:
            out.append(r)
    return out


walk_files = files(walk)
consulted = [f for f in files(before) if f not in walk_files]
print("the walk (the stack at triton.compile, outermost first):", file=sys.stderr)
print("\n".join(f"  {r}:{fn}" for r, fn in walk), file=sys.stderr)
print(f"files on the walk: {len(walk_files)} {walk_files}", file=sys.stderr)
print(f"consulted before the compile (called and returned): {len(consulted)} {consulted}", file=sys.stderr)
print(f"after the compile: {len(files(after))} {sorted(files(after))}", file=sys.stderr)
