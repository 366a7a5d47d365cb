"""Recipe regression on the GPU machine: every h200 recipe variant of the examples against what a user calls instead.

    python3 benchmarks/bench_recipes_h200.py [--recipe h200] [--max-seconds 6] [--only matmul_persistent,...]

For each example kernel (CASES) and shape, one `irscope bench --recipe h200 --variant ... --ref ...` run:
the baseline and every variant of the recipe that names the kernel (read from the recipe file), and the
`--ref` torch call (cuBLAS for the matmuls, torch's softmax and add), all in the same interleaved rounds.
Each run's --json is parsed into one markdown table (variant, median, TFLOP/s or GB/s, time against the
reference with its 95 % CI, verdict at +-1 %), printed last and written to $OUT/recipes-h200.md; the
whole output goes to $OUT/recipes-h200.log. A change in Triton or in a recipe that costs speed shows as
a ratio that moved. examples/tma_matmul.py (host-side descriptors) is not here: `--args` has no
descriptor maker; examples/persistent_matmul.py is the same loop over device-side descriptors.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
SHAPES = {"8192^3": (8192, 8192, 8192), "4096^3": (4096, 4096, 4096), "16384x1024x8192": (16384, 1024, 8192)}
PERSISTENT_GRID = "min(NUM_SMS, cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N))"


def matmul_args(m: int, n: int, k: int, dtype: str, strides: bool = False) -> str:
    text = (
        f"a_ptr=randn({m}, {k}, {dtype}), b_ptr=randn({k}, {n}, {dtype}), c_ptr=empty({m}, {n}, {dtype}), "
        f"M={m}, N={n}, K={k}"
    )
    if strides:
        text += f", stride_am={k}, stride_ak=1, stride_bk={n}, stride_bn=1, stride_cm={n}, stride_cn=1"
    return text


def cases(shapes: list[str]) -> list[dict]:
    """(example, kernel, shape label, dtype, args, grid, ref, flops/bytes) for every timed run."""
    out = []
    for label in shapes:
        m, n, k = SHAPES[label]
        for dtype in ("fp16", "bf16"):
            flops = "2*M*N*K"
            ref = "torch.matmul(a_ptr, b_ptr)"
            out.append(
                {
                    "file": "examples/persistent_matmul.py",
                    "kernel": "matmul_persistent",
                    "shape": label,
                    "dtype": dtype,
                    "args": matmul_args(m, n, k, dtype),
                    "grid": PERSISTENT_GRID,
                    "ref": ref,
                    "flops": flops,
                }
            )
            out.append(
                {
                    "file": "examples/gluon_persistent_matmul.py",
                    "kernel": "matmul_persistent_ws_kernel",
                    "shape": label,
                    "dtype": dtype,
                    "args": matmul_args(m, n, k, dtype),
                    "grid": PERSISTENT_GRID,
                    "ref": ref,
                    "flops": flops,
                }
            )
            if label == "8192^3":
                out.append(
                    {
                        "file": "examples/matmul.py",
                        "kernel": "matmul_kernel",
                        "shape": label,
                        "dtype": dtype,
                        "args": matmul_args(m, n, k, dtype, strides=True),
                        "grid": "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)",
                        "ref": ref,
                        "flops": flops,
                    }
                )
                out.append(
                    {
                        "file": "examples/gluon_persistent_matmul.py",
                        "kernel": "matmul_pipelined_kernel",
                        "shape": label,
                        "dtype": dtype,
                        "args": matmul_args(m, n, k, dtype),
                        "grid": PERSISTENT_GRID,
                        "ref": ref,
                        "flops": flops,
                    }
                )
    rows, cols = 16384, 4096
    out.append(
        {
            "file": "examples/softmax.py",
            "kernel": "softmax_kernel",
            "shape": f"{rows}x{cols}",
            "dtype": "fp32",
            "args": (
                f"output_ptr=empty({rows}, {cols}, fp32), input_ptr=randn({rows}, {cols}, fp32), "
                f"input_row_stride={cols}, output_row_stride={cols}, n_rows={rows}, n_cols={cols}"
            ),
            "grid": "min(n_rows, 132 * 4)",
            "ref": "F.softmax(input_ptr, -1)",
            "bytes": "2 * n_rows * n_cols * 4",
            "sets": ("BLOCK_SIZE=4096",),
        }
    )
    n_el = 1 << 28
    out.append(
        {
            "file": "examples/vector_add.py",
            "kernel": "add_kernel",
            "shape": f"{n_el}",
            "dtype": "fp32",
            "args": f"x_ptr=randn({n_el}, fp32), y_ptr=randn({n_el}, fp32), out_ptr=empty({n_el}, fp32), "
            f"n_elements={n_el}",
            "grid": "cdiv(n_elements, BLOCK_SIZE)",
            "ref": "torch.add(x_ptr, y_ptr)",
            "bytes": "3 * n_elements * 4",
        }
    )
    return out


def variants_of(recipe: dict, kernel: str) -> list[str]:
    """The recipe's variants that change this kernel (the baseline first)."""
    names = ["baseline"]
    for name, body in (recipe.get("variant") or {}).items():
        if name != "baseline" and kernel in (body.get("kernel") or {}):
            names.append(name)
    return names


def run_case(case: dict, recipe_name: str, variants: list[str], max_seconds: float) -> tuple[dict | None, str]:
    cmd = [
        sys.executable,
        "-m",
        "irscope",
        "bench",
        case["file"],
        "-k",
        case["kernel"],
        "--recipe",
        recipe_name,
        "--args",
        case["args"],
        "--grid",
        case["grid"],
        "--ref",
        case["ref"],
        "--max-seconds",
        str(max_seconds),
        "--json",
        "-o",
        "/tmp/irscope-recipes-out",
    ]
    for v in variants:
        cmd += ["--variant", v]
    for s in case.get("sets", ()):
        cmd += ["--const", s]
    if case.get("flops"):
        cmd += ["--flops", case["flops"]]
    if case.get("bytes"):
        cmd += ["--bytes", case["bytes"]]
    proc = subprocess.run(
        cmd, check=False, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return json.loads(proc.stdout), ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recipe", default="h200")
    ap.add_argument("--max-seconds", type=float, default=6.0, help="each bench run's budget for its rounds")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--only", default="", help="comma list of kernel names")
    opts = ap.parse_args()
    recipe = tomllib.loads((ROOT / "recipes" / f"{opts.recipe}.toml").read_text())
    only = {k for k in opts.only.split(",") if k}
    lines = [
        "| kernel | shape | dtype | variant | median | throughput | time vs ref [95 % CI] | verdict | rounds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    log = []
    for case in cases(opts.shapes.split(",")):
        if only and case["kernel"] not in only:
            continue
        variants = variants_of(recipe, case["kernel"])
        doc, err = run_case(case, opts.recipe, variants, opts.max_seconds)
        head = f"| {case['kernel']} | {case['shape']} | {case['dtype']} |"
        if doc is None:
            lines.append(f"{head} {', '.join(variants)} | failed: {err[:120]} | | | | |")
            log.append(f"{case['kernel']} {case['shape']} {case['dtype']}: {err}")
            continue
        log.append(json.dumps({k: doc[k] for k in ("device", "triton_version", "rounds", "method", "clocks")}))
        ref_name = (doc.get("ref") or {}).get("name", case["ref"])
        for v in doc["variants"] + ([doc["ref"]] if doc.get("ref") else []):
            s = v.get("summary") or {}
            median = f"{s['median'] * 1e3:.1f} us" if s else v.get("status", "")
            thr = f"{v['tflops']:.0f} TFLOP/s" if v.get("tflops") else f"{v['gbps']:.0f} GB/s" if v.get("gbps") else ""
            vr = v.get("versus_reference")
            versus = (
                f"{vr['ratio']:.3f} [{vr['ci_low']:.3f}, {vr['ci_high']:.3f}]"
                if vr
                else ("reference" if v is doc.get("ref") else v.get("reason", ""))
            )
            verdict = vr["verdict"] if vr else ""
            name = f"ref: {ref_name}" if v is doc.get("ref") else v["name"]
            lines.append(f"{head} {name} | {median} | {thr} | {versus} | {verdict} | {doc['rounds']} |")
        print("\n".join(lines[-len(doc["variants"]) - 1 :]), flush=True)
    table = "\n".join(lines)
    print("\n" + table)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "recipes-h200.md").write_text(table + "\n")
        Path(os.environ["OUT"], "recipes-h200.log").write_text("\n".join(log) + "\n")


if __name__ == "__main__":
    main()
