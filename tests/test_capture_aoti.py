"""AOTInductor captured like torch.compile (issue #42 item 3): `torch.export` of a LayerNorm + Linear block
on "cuda", then `torch._inductor.aoti_compile_and_package`, under `irscope capture --target h100` on a
CPU build of torch (the stand-in GPU: standin/aoti.py).

Before, the script killed irscope's process (a c10::Error thrown by autograd for a fake cuda tensor,
SIGABRT): the capture runs in a child process here because that boundary is what failed. The functions
that wrap AOTInductor's entry points are tested by calling them (standin/generators.py)."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from irscope.standin import generators
from irscope.views.capture import made_by
from tests.helpers import DATA, run_cli

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = DATA / "aoti_block.py"


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """One capture of the script for the tests below: (--json document, stderr, the package path asked for)."""
    tmp = tmp_path_factory.mktemp("aoti")
    package = tmp / "pkg" / "block.pt2"
    # a process of its own: AOTI's C++ side may abort the process that runs it (the supervisor's case)
    r = run_cli("capture", str(SCRIPT), "--target", "h100", "-o", str(tmp / "out"), "--json", "--", str(package))
    assert r.code == 0, r.err[-3000:]
    return json.loads(r.out), r.err, package


@pytest.mark.torch
def test_the_capture_ends_with_every_kernel_labelled_aoti(captured):
    doc, err, _ = captured
    kernels = doc["kernels"]
    assert len(kernels) >= 2 and len(kernels) == len(doc["capture"]["captures"])  # none left undumped
    gens = [k["capture"]["generated_by"] for k in kernels]
    assert all(g["layer"] == "aoti" for g in gens)
    assert all(g["graph"]["kind"] == "inference" for g in gens)  # AOTI lowers the exported inference graph
    for k in kernels:
        assert not k["capture"]["failed"] and k["capture"]["grid"], k["name"]  # launched once, and dumped
        assert k["file"] == k["capture"]["generated_by"]["generated_file"]  # the source is Inductor's .py
    # the stop is AOTInductor's C++ build, said as such, after the kernels were generated
    stopped = doc["capture"]["stopped"]
    assert stopped.startswith("aoti_block.py:") and "AotiBuildSkipped" in stopped and "C++ build" in stopped
    assert "AOTInductor lowered 1 graph" in err and "compile_threads=1" in err
    assert "(where the stand-in GPU stops AOTInductor, once every kernel it generated is captured)" in err


@pytest.mark.torch
def test_each_kernel_names_the_aten_ops_it_was_made_from(captured):
    doc, _, _ = captured
    ops = {k["name"]: k["capture"]["generated_by"]["aten_ops"] for k in doc["kernels"]}
    assert all(o and all(op.startswith("aten.") for op in o) for o in ops.values()), ops
    norm = [name for name, o in ops.items() if "aten.native_layer_norm" in o]
    gelu = [name for name, o in ops.items() if "aten.gelu" in o]
    assert norm and gelu and not set(norm) & set(gelu), ops  # the norm, and the GELU fused into the bias add
    for k in doc["kernels"]:
        gen = k["capture"]["generated_by"]
        assert gen["source_nodes"] and all("=>" in n for n in gen["source_nodes"])
        if k["name"] in norm:
            assert gen["category"] in ("persistent_reduction", "reduction")


@pytest.mark.torch
def test_each_dump_has_its_ptx_entry(captured):
    doc, _, _ = captured
    for k in doc["kernels"]:
        ptx = Path(k["stages"]["ptx"]).read_text()
        assert re.search(rf"^\.visible \.entry {re.escape(k['name'])}\(", ptx, re.M), k["name"]
        assert ".target sm_90" in ptx


@pytest.mark.torch
def test_the_package_is_recorded_and_said_unwritten(captured):
    doc, err, package = captured
    for c in doc["capture"]["captures"]:
        aoti = c["generated_by"]["aoti"]
        assert aoti == {"entry": "aoti_compile_and_package", "package": str(package), "package_written": False}
    assert not package.exists()  # the stand-in does not build the .so, so nothing is packaged
    assert str(package) in doc["capture"]["stopped"]
    assert any(str(package) in n and "not written" in n for n in doc["capture"]["standin_notes"])
    line = made_by(doc["kernels"][0]["capture"]["generated_by"])
    assert line.startswith("aoti  ·  inference graph 0  ·  aten.") and line.endswith(f"{package} (not written)")


def test_an_aoti_call_records_the_package_asked_for_or_returned():
    calls = []

    def aoti_compile_and_package(ep, package_path=None):
        calls.append(generators.aoti_call())
        return package_path or "/derived/model.pt2"

    set_up = []
    wrapped = generators._aoti_entry("aoti_compile_and_package", aoti_compile_and_package, lambda: set_up.append(1))
    assert wrapped("ep", package_path="/tmp/asked.pt2") == "/tmp/asked.pt2"
    assert wrapped("ep") == "/derived/model.pt2"
    assert [(c.entry, c.package, c.built) for c in calls] == [
        ("aoti_compile_and_package", "/tmp/asked.pt2", True),  # the record, after the call returned
        ("aoti_compile_and_package", "/derived/model.pt2", True),
    ]
    assert len(set_up) == 2 and generators.aoti_call() is None


def test_a_nested_aoti_call_is_one_call_and_a_failed_one_is_not_built():
    seen = []

    def aot_compile(gm):
        seen.append(generators.aoti_call())
        raise RuntimeError("no CUDA_HOME")

    inner = generators._aoti_entry("aot_compile", aot_compile, lambda: None)

    def aoti_compile_and_package(ep, package_path=None):
        return inner(ep)

    outer = generators._aoti_entry("aoti_compile_and_package", aoti_compile_and_package, lambda: None)
    with pytest.raises(RuntimeError):
        outer("ep", "/tmp/x.pt2")
    assert [(c.entry, c.package, c.built) for c in seen] == [("aoti_compile_and_package", "/tmp/x.pt2", None)]
    assert generators.aoti_call() is None


def test_the_entries_are_wrapped_once_torch_inductor_is_imported_and_put_back(monkeypatch, tmp_path):
    """torch._inductor loads lazily: a finder wraps its AOTI functions right after its import, and both are
    undone on exit. A stand-in package named torch._inductor, so the real torch stays untouched."""
    pkg = tmp_path / "fake_root" / "torch" / "_inductor"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("def aoti_compile_and_package(ep, package_path=None):\n    return 'built'\n")
    names = ("torch", "torch._inductor")
    saved = {name: sys.modules.pop(name) for name in names if name in sys.modules}  # the real ones, if loaded
    monkeypatch.syspath_prepend(str(tmp_path / "fake_root"))
    set_up = []
    try:
        with generators._aoti_entries(lambda: set_up.append(1)):
            inductor = importlib.import_module("torch._inductor")  # the fake one: no torch needed

            assert getattr(inductor.aoti_compile_and_package, "_irscope_aoti", False)
            assert inductor.__spec__.loader.is_package("torch._inductor")  # the real loader answers the rest
            assert inductor.aoti_compile_and_package("ep", "/tmp/p.pt2") == "built" and set_up == [1]
    finally:
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
    assert not getattr(inductor.aoti_compile_and_package, "_irscope_aoti", False)
    assert not any(isinstance(f, generators._AfterImport) for f in sys.meta_path)
    assert isinstance(inductor, types.ModuleType)


@pytest.mark.torch
def test_an_exported_dynamic_dimension_is_not_specialised_by_the_stand_in():
    """The stand-in's shape-only mode estimated each op's cost from its sizes, and under torch.export the
    sizes are symbolic: the comparison became a guard, and export refused the dynamic batch ("Constraints
    violated (batch)"). Traced ops (fake tensors, symbolic sizes) are now left alone."""
    import torch

    from irscope.standin.shapes import ShapeOnly, shape_only_mode

    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.LayerNorm(64)).eval()
    batch, x = torch.export.Dim("batch", min=2, max=1024), torch.randn(8, 32)
    stats = ShapeOnly(1e-9)  # every op computed for real is over this budget
    with shape_only_mode(stats):
        ep = torch.export.export(model, (x,), dynamic_shapes={"input": {0: batch}})
    (bounds,) = ep.range_constraints.values()
    assert (bounds.lower, bounds.upper) == (2, 1024)
    assert stats.count == 0  # nothing traced was run shape-only


def test_a_kernels_aten_ops_come_from_its_own_definition_among_the_graphs():
    """AOTInductor's kernel definitions are text (its C++ wrapper's autotune block, an FX wrapper's imports),
    one per kernel, as Inductor formats them: each kernel's ops are those above its own definition."""
    from irscope.capture.inductor_origins import origins_in

    defs = [
        "\n\n# kernel path: /tmp/a.py\n# Topologically Sorted Source Nodes: [layer_norm], Original ATen: "
        "[aten.native_layer_norm]\n# Source node to ATen node mapping:\n#   layer_norm => add, mul\n"
        "triton_per_fused_native_layer_norm_0 = async_compile.triton('triton_per_fused_native_layer_norm_0', '''",
        "\n\n# kernel path: /tmp/b.py\n# Topologically Sorted Source Nodes: [linear, gelu], Original ATen: "
        "[aten.addmm, aten.gelu]\ntriton_poi_fused_addmm_gelu_1 = async_compile.triton('x', '''",
    ]
    lines = "\n".join(defs).splitlines()
    assert origins_in(lines, "triton_poi_fused_addmm_gelu_1", own_module=False) == (["aten.addmm", "aten.gelu"], [])
    assert origins_in(lines, "triton_per_fused_native_layer_norm_0", own_module=False) == (
        ["aten.native_layer_norm"],
        ["layer_norm => add, mul"],
    )
    assert origins_in(lines, "triton_poi_other_2", own_module=False) == ([], [])  # not defined here: none


@pytest.mark.torch
def test_the_python_api_keeps_an_aoti_calls_kernels(tmp_path):
    """irscope.capture(fn) of a function that compiles with AOTInductor: the stand-in's stop at the C++ build
    ends the call (fn's own failure, as on a machine that cannot build), and its kernels are kept."""
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        IRSCOPE_CACHE_DIR=str(tmp_path / "cache"),
    )
    package = tmp_path / "m.pt2"
    p = subprocess.run(
        [sys.executable, str(DATA / "aoti_api.py"), str(package)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert "AotiBuildSkipped" in out["stopped"] and str(package) in out["stopped"]
    assert out["generated_by"] and all(
        g["layer"] == "aoti" and "aten.gelu" in g["aten_ops"] for g in out["generated_by"]
    )
    assert not package.exists()


@pytest.mark.torch
def test_the_frontier_reads_an_aoti_capture_as_inductors(captured):
    """frontier's sides: an AOTI kernel is Inductor's (category, ATen ops, the inference graph's
    direction), labelled aoti, not a hand-written kernel guessed from its name."""
    from irscope.compare.frontier import load_side
    from irscope.views.frontier import _made_by

    doc, _, _ = captured
    out = Path(doc["kernels"][0]["folder"]).parents[1]
    side = load_side("a", out)
    assert side.kernels and all(k.made_by["layer"] == "aoti" for k in side.kernels)
    assert all(k.direction == "inference" and k.direction_from == "inductor graph" for k in side.kernels)
    norm = [k for k in side.kernels if "aten.native_layer_norm" in k.made_by["aten_ops"]]
    assert (
        norm
        and _made_by(norm[0]).startswith(f"aoti {norm[0].made_by['category']}: ")
        and "native_layer_norm" in _made_by(norm[0])
    )
