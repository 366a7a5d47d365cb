"""Kernel generators on the stand-in GPU (issue #27): Helion and torch.compile (Inductor) scripts
run unmodified through `irscope capture SCRIPT --target h100 --json`; each generated kernel is
captured and says what generated it."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FBTRITON

# fbtriton 3.7.4's interpreter: InterpreterBuilder.create_dot takes another arity, so a tl.dot kernel is not
# computed on the stand-in and the script's own check fails there (the capture and its dumps are fine)
FB_INTERPRETER_DOT = "fbtriton 3.7.4's interpreter cannot run tl.dot (create_dot's arity): the matmul is not computed"
LAYERS = Path(__file__).parent / "data" / "layers"
ROOT = Path(__file__).resolve().parents[1]


def _importable(module: str) -> str:
    """'' when `module` imports here (in a child: helion imports torch and checks the Triton it finds),
    else why not — a Helion release may not import under every Triton irscope supports."""
    if importlib.util.find_spec(module) is None or importlib.util.find_spec("torch") is None:
        return f"{module} and torch are not installed"
    p = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=300)
    return (
        "" if p.returncode == 0 else f"{module} does not import with this Triton: {p.stderr.strip().splitlines()[-1]}"
    )


HELION_UNUSABLE = _importable("helion")


def needs_helion(test):
    """Helion imports torch: a Helion test is a torch test too (the conftest rule gives that reason first)."""
    return pytest.mark.torch(pytest.mark.skipif(bool(HELION_UNUSABLE), reason=HELION_UNUSABLE or "-")(test))


def _dump(script: str, tmp_path: Path, *args: str) -> tuple[dict, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "irscope",
            "capture",
            str(LAYERS / script),
            "--target",
            "h100",
            "-o",
            str(tmp_path / "out"),
            "--json",
            *(["--", *args] if args else []),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout), p.stderr


def _ttgir_num_warps(kernel: dict) -> int:
    text = Path(kernel["stages"]["ttgir"]).read_text()
    return int(text.split('"ttg.num-warps" = ', 1)[1].split(" ", 1)[0])


@needs_helion
@pytest.mark.skipif(FBTRITON, reason=FB_INTERPRETER_DOT)
def test_helion_fixed_config(tmp_path):
    doc, err = _dump("helion_matmul.py", tmp_path)
    assert "helion_matmul: checks passed" in err  # the script's own allclose ran on computed results
    assert doc["capture"]["stopped"] is None
    kernels = doc["kernels"]
    assert len(kernels) == 1
    k = kernels[0]
    gen = k["capture"]["generated_by"]
    assert gen["layer"] == "helion" and gen["kernel"] == "matmul"
    assert Path(gen["source"]).name == "helion_matmul.py"
    assert gen["config"]["block_sizes"] == [16, 16, 16] and gen["config"]["num_warps"] == 4
    assert "block_sizes=[16, 16, 16]" in k["capture"]["config"]
    assert _ttgir_num_warps(k) == gen["config"]["num_warps"]
    assert k["file"] == gen["generated"]  # the dump's source is Helion's generated file
    # the two-level map: the Helion line of the addmm reaches generated lines with a tl.dot
    generated = Path(gen["generated"]).read_text().splitlines()
    lines16 = gen["src_lines"]["helion_matmul.py:16"]
    assert any("tl.dot" in generated[n - 1] for n in lines16)
    manifest = json.loads((Path(k["folder"]) / "manifest.json").read_text())
    assert manifest["generated_by"]["layer"] == "helion"


@needs_helion
def test_helion_traces_on_the_kernels_device(tmp_path):
    """Tensors made in a Helion kernel (torch.empty/full_like/new_zeros, hl.zeros, addmm's result) are fake
    cuda tensors while Helion traces, as on a GPU: no WrongDevice warning, and `full_like` / `new_zeros` in
    the device loop (Helion's layer-norm and attention examples) compile instead of 'expected cuda:0, got cpu'."""
    for script in ("helion_matmul.py", "helion_full_like.py"):
        doc, err = _dump(script, tmp_path)
        assert "WrongDevice" not in err, err[-2000:]
        assert f"{script[:-3]}: checks passed" in err
        assert doc["kernels"] and not any(k["capture"]["failed"] for k in doc["kernels"])


@needs_helion
def test_helion_epilogue_indexing_a_tensor_by_tiles(tmp_path):
    """Helion's matmul example (issue #42 item 4): an epilogue lambda indexing the caller's tensor by the
    tiles. The stand-in read each argument's device through the tile proxies, which refuse it
    (IncorrectTileUsage), and Python's indexing of the fake cuda tensor took a device guard a CPU torch
    cannot make. Now the kernel compiles with the bias load in it, and the script's check passes."""
    doc, err = _dump("helion_epilogue_index.py", tmp_path)
    assert "helion_epilogue_index: checks passed" in err
    assert doc["capture"]["stopped"] is None
    [kernel] = doc["kernels"]
    assert not kernel["capture"]["failed"]
    assert kernel["capture"]["generated_by"]["layer"] == "helion"
    args = json.loads(Path(doc["capture"]["specs"][0]).read_text())["launch"]["args"]
    assert sum(1 for a in args.values() if a.get("shape") == [32, 32]) == 3  # x, bias and out: bias is loaded


@needs_helion
def test_helion_every_config_captured(tmp_path):
    doc, err = _dump("helion_two_configs.py", tmp_path)
    assert "helion_two_configs: checks passed" in err
    configs = [k["capture"]["generated_by"]["config"] for k in doc["kernels"]]
    assert {(c["block_sizes"][0], c["num_warps"]) for c in configs} >= {(32, 2), (64, 8)}
    for k in doc["kernels"]:
        assert _ttgir_num_warps(k) == k["capture"]["generated_by"]["config"]["num_warps"]


@needs_helion
def test_helion_autotuner_configs_captured_and_timings_said_to_be_placeholders(tmp_path):
    """autotune_effort="quick": every config Helion's autotuner compiles is captured and labelled; its
    timers ran each candidate once (captured, not computed) and the notes say the times are not real.

    The search as a whole is a trial (issue #42 item 4, Helion's add example autotuned): its accuracy
    baseline and each candidate's checked run are not computed, so the interpreter's budget is left for
    the script's own call after it, the only launch computed."""
    doc, err = _dump("helion_autotune.py", tmp_path)
    assert "helion_autotune: checks passed" in err
    assert "Helion's autotuner timed" in err and "not a measurement" in err
    assert "Helion's autotuner searched 1 time on the stand-in GPU with its accuracy check off" in err
    computed = doc["capture"]["computed"]
    assert computed["computed"] == 1, computed  # scale_add(x, y) with the chosen config, and nothing else
    assert computed["not_computed_by"] == {"benchmarking": doc["capture"]["launches"] - 1}, computed
    assert "Skipping config with accuracy mismatch" not in err
    caps = doc["capture"]["captures"]
    assert len(caps) >= 5
    configs = {json.dumps(c["generated_by"]["config"], sort_keys=True) for c in caps}
    assert len(configs) == len(caps)  # one capture per config, each labelled with it
    assert all(c["generated_by"]["layer"] == "helion" and "block_sizes=" in c["config"] for c in caps)
    assert "tqdm_monitor" not in err  # no progress-bar thread left behind


@needs_helion
def test_lines_on_the_helion_file_reaches_the_stages(tmp_path):
    """The two-level source map: `irscope lines DUMP --line helion_matmul.py:16` (the addmm line of the
    Helion function) sums the generated lines made from it, which hold the tl.dot: an MMA in PTX."""
    doc, _ = _dump("helion_matmul.py", tmp_path)
    folder = doc["kernels"][0]["folder"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run(
        [sys.executable, "-m", "irscope", "lines", folder, "--line", "helion_matmul.py:16", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    entry = json.loads(p.stdout)["line"]
    assert entry["line"] == 16 and entry["generated_lines"]
    assert entry["stages"]["ptx"]["n"] > 0 and entry["stages"]["ptx"]["classes"].get("mma", 0) > 0


needs_torch = pytest.mark.torch


@needs_torch
def test_inductor_forward_and_backward_kernels(tmp_path):
    doc, err = _dump("inductor_mlp.py", tmp_path)
    assert "inductor_mlp: checks passed default" in err  # forward and backward results computed, eager agrees
    assert doc["capture"]["stopped"] is None
    assert not doc["capture"]["computed"]["cannot_run"]
    kernels = doc["kernels"]
    gens = [k["capture"]["generated_by"] for k in kernels]
    assert all(g["layer"] == "inductor" and g["category"] and g["aten_ops"] for g in gens)
    kinds = {g["graph"]["kind"] for g in gens}
    assert {"forward", "backward"} <= kinds
    norm = [
        k
        for k in kernels
        if k["capture"]["generated_by"]["graph"]["kind"] == "forward"
        and "aten.native_layer_norm" in k["capture"]["generated_by"]["aten_ops"]
    ]
    assert norm and norm[0]["capture"]["generated_by"]["category"] in ("persistent_reduction", "reduction")
    backward = [g for g in gens if g["graph"]["kind"] == "backward"]
    assert any("aten.native_layer_norm_backward" in g["aten_ops"] for g in backward)
    for k in kernels:
        gen = k["capture"]["generated_by"]
        assert k["file"] == gen["generated_file"]  # the dump's source is Inductor's generated .py
        assert gen["kernel_name"] == k["name"]
        assert f"def {k['name']}(" in Path(gen["generated_file"]).read_text()
        assert _ttgir_num_warps(k) == k["options"]["num_warps"]
        assert not k["capture"]["failed"]
    # a kernel with several configs: each is captured and labelled with its config, as an autotune config is
    labelled = [k for k in kernels if k["capture"]["config"]]
    assert labelled and all("num_warps=" in k["capture"]["config"] for k in labelled)
    for k in labelled:
        assert f"num_warps={_ttgir_num_warps(k)}" in k["capture"]["config"]


@needs_torch
def test_inductor_dropout_in_train_mode_and_embedding_backward(tmp_path):
    """Two stops of the corpus (an MNIST CNN, nanoGPT's training step): Inductor's seed lookup for Dropout and
    index_put(accumulate=True)'s `~mask` took a CUDA device guard a CPU torch cannot make. Now the script's
    own checks pass, and every kernel is dumped (the dropout kernel's bool outputs are '*i1' pointers)."""
    doc, err = _dump("inductor_dropout_embedding.py", tmp_path)
    assert "inductor_dropout_embedding: checks passed" in err
    assert doc["capture"]["stopped"] is None
    ops = {op for k in doc["kernels"] for op in k["capture"]["generated_by"]["aten_ops"]}
    assert {"aten.native_dropout", "aten.embedding_dense_backward"} <= ops
    assert len(doc["kernels"]) == len(doc["capture"]["captures"])  # none left undumped


@needs_torch
def test_inductor_conv_layout_is_cudnn_s(tmp_path):
    """The MNIST CNN's stop (issue #42 item 4): a torch without cuDNN told Inductor a convolution of
    channels-last tensors returns a contiguous one; the compiled code's assert_size_stride then failed on
    the CPU's channels-last result, and the kernels after it were made for a layout the chip never gives.
    As cuDNN does, the second convolution's output (4, 64, 24, 24) is channels-last in the kernel that
    reads it, and the script's own checks against eager pass."""
    doc, err = _dump("inductor_conv_net.py", tmp_path)
    assert "inductor_conv_net: checks passed" in err
    assert doc["capture"]["stopped"] is None
    launches = [json.loads(Path(spec).read_text())["launch"] for spec in doc["capture"]["specs"]]
    conv_outs = [
        a["strides"] for launch in launches for a in launch["args"].values() if a.get("shape") == [4, 64, 24, 24]
    ]
    assert conv_outs and all(s == [36864, 1, 1536, 64] for s in conv_outs), conv_outs


@needs_torch
def test_inductor_flex_attention(tmp_path):
    """Helion's attention example's baseline (issue #42 item 4): flex_attention's fake kernel makes its output
    with out.new_empty_strided(...).copy_(out), bindings that take a device guard a torch without CUDA cannot
    make for a fake cuda tensor; Inductor stopped before any kernel. Now its template kernel is captured,
    made from the flex_attention op, and the script's check against SDPA passes."""
    doc, err = _dump("inductor_flex_attention.py", tmp_path)
    assert "inductor_flex_attention: checks passed" in err
    assert doc["capture"]["stopped"] is None
    gens = [k["capture"]["generated_by"] for k in doc["kernels"]]
    assert any(g["category"] == "template" and "flex_attention" in g["aten_ops"] for g in gens), gens


@needs_torch
def test_inductor_cuda_graphs_are_skipped_not_a_stop(tmp_path):
    """nanoGPT under max-autotune (issue #42 item 4): Inductor's CUDA-graph check asked torch._C whether the
    caching allocator is on, which a CPU torch cannot answer, and the script stopped in its compile. The
    stand-in answers "off": Inductor skips the graph capture (and says so), the kernels are generated and
    launched one by one, and the script's check passes."""
    doc, err = _dump("inductor_cudagraphs.py", tmp_path)
    assert "inductor_cudagraphs: checks passed" in err
    assert doc["capture"]["stopped"] is None
    assert "skipping cudagraphs" in err and "current allocator is uncached" in err
    assert doc["kernels"] and all(k["capture"]["generated_by"]["layer"] == "inductor" for k in doc["kernels"])


@needs_torch
def test_inductor_inference_graph(tmp_path):
    doc, err = _dump("inductor_inference.py", tmp_path)
    assert "inductor_inference: checks passed" in err
    gens = [k["capture"]["generated_by"] for k in doc["kernels"]]
    assert gens and all(g["graph"]["kind"] == "inference" and "aten._softmax" in g["aten_ops"] for g in gens)
    assert "compile_threads=1" in err and "placeholders" in err


@needs_torch
@pytest.mark.skipif(
    os.environ.get("IRSCOPE_SLOW_TESTS") != "1",
    reason="max-autotune compiles every mm template candidate (minutes on 2 CPU cores); IRSCOPE_SLOW_TESTS=1 runs it",
)
def test_inductor_max_autotune_templates(tmp_path):
    doc, err = _dump("inductor_mlp.py", tmp_path, "max-autotune-no-cudagraphs")
    assert "inductor_mlp: checks passed max-autotune-no-cudagraphs" in err
    templates = [k for k in doc["kernels"] if k["capture"]["generated_by"]["category"] == "template"]
    assert sum(k["capture"]["generated_by"].get("template") == "mm" for k in templates) >= 2  # every candidate
    assert {k["capture"]["generated_by"]["graph"]["kind"] for k in templates} >= {"forward", "backward"}
    assert "placeholders" in err and "compile_threads=1" in err  # the notes say what is not a GPU's
    for k in templates:
        assert "BLOCK_M=" in k["capture"]["config"] and "num_warps=" in k["capture"]["config"]
        gen = k["capture"]["generated_by"]
        # a candidate names its template (select_algorithm's triton_<template>); the one picked, its ATen ops
        assert gen.get("template") == "mm" or {"aten.mm", "aten.addmm"} & set(gen["aten_ops"])
        assert f"num_warps={_ttgir_num_warps(k)}" in k["capture"]["config"]
