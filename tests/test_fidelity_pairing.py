"""benchmarks/fidelity_layers.py's pairing: the H200 fidelity figures (docs/benchmarks.md) are counted by it,
so what it calls equal must be equal. Its one allowance: the bytes of an assert's file name, which name the
file Inductor generated in each run's own cache folder."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("fidelity_layers", ROOT / "benchmarks" / "fidelity_layers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _ptx(path: str, body: str = "add.s32 %r2, %r1, 1;") -> str:
    data = ", ".join(str(b) for b in path.encode())
    return (
        "//\n.version 8.7\n.target sm_90a\n.address_size 64\n"
        f".global .align 1 .b8 assertFile_0[{len(path)}] = {{{data}}};\n"
        ".visible .entry k(\n.param .u64 k_param_0\n)\n{\n"
        f"\t{body}\n\tret;\n}}\n"
    )


def test_an_assert_file_path_alone_is_reported_as_such_and_nothing_else_is_forgiven():
    f = _module()
    plain = {"k [num_warps=4, num_stages=1]": [_ptx("/tmp/plain/inductor/d2/cd2r.py")]}
    same = {"k [num_warps=4, num_stages=1]": [_ptx("/tmp/plain/inductor/d2/cd2r.py")]}
    path = {"k [num_warps=4, num_stages=1]": [_ptx("/tmp/standin/inductor/fa/cfaq76.py")]}
    code = {"k [num_warps=4, num_stages=1]": [_ptx("/tmp/standin/inductor/fa/cfaq76.py", "add.s32 %r2, %r1, 2;")]}
    rows = f.pair(plain, {"same": same, "path": path, "code": code, "none": {}, "off": None})
    assert len(rows) == 1
    row = rows[0]
    assert row["same"] is True and row["path"] == "path" and row["code"] is False
    assert row["none"] == "missing" and row["off"] is None
