"""Which irscope files does `--set num_warps=8` pass through, from the command line to the compile?

    python benchmarks/walk_set.py        (from the checkout's root; prints to stderr)

Runs `irscope dump examples/vector_add.py ... --set num_warps=8 --no-cache` in this process with a
profile hook on every call into irscope's code, and records the file and function whenever one of the
frame's locals holds the value in any of its forms: the text 'num_warps=8', a (key, value) pair, a
mapping or a dataclass carrying num_warps=8, Triton's backend options. A frame that merely passes a
dict along counts too, so this is an upper bound. The files up to adapter/compiling.py (the
triton.compile call) are the walk #37 asks about; the rest is the dump's figures and checks.
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
seen = []


def carries(v, depth=0):
    if isinstance(v, str):
        return v == "num_warps=8"
    if depth > 2:
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


def prof(frame, event, arg):
    if event != "call":
        return
    f = frame.f_code.co_filename
    if "/irscope/" in f and "/tests/" not in f:
        try:
            if any(carries(v) for v in frame.f_locals.values()):
                rel = f.split("/irscope/", 1)[1]
                entry = (rel, frame.f_code.co_name)
                if not seen or seen[-1] != entry:
                    seen.append(entry)
        except Exception:
            pass


sys.setprofile(prof)
from irscope import entry  # noqa: E402 - imported under the profile hook, so its calls are traced

try:
    entry.main()
except SystemExit:
    pass
sys.setprofile(None)
files = []
for rel, _fn in seen:
    if not files or files[-1] != rel:
        files.append(rel)
print("\n".join(f"{r}:{fn}" for r, fn in seen), file=sys.stderr)
print("files in order:", files, file=sys.stderr)
print("distinct files:", len(set(files)), sorted(set(files)), file=sys.stderr)
