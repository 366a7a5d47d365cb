#!/usr/bin/env bash
# Produce the committed one-knob pairs of benchmarks/bench_diff_align.py (issue #39): each pair is two
# dumps of one kernel that differ by one knob; their text stages are kept gzipped as PAIR/{a,b}.STAGE.gz.
# Run from the repository root:  bash benchmarks/diff_pairs/make.sh   (Triton 3.9.0; TLX needs fbtriton in
# /work/vfb; the Inductor pair needs torch: both made once, their texts committed).
set -euo pipefail
V39=${V39:-/work/v39/bin/python}
VFB=${VFB:-/work/vfb/bin/python}
OUT=${OUT:-/tmp/irscope-diff-pairs}
HERE=benchmarks/diff_pairs
export PYTHONPATH=$PWD
MM="*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
GL="*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, 128, 256, 64, 2, 8, 132, 8"  # STAGES 2 -> 3
GL3="*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, 128, 256, 64, 3, 8, 132, 8"
# gfx942 has 64 KiB of LDS: BLOCK_K 32 leaves room for 4 stages
MMG="*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 32, 8"
TLX="tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, i32:16, i32:16, 128, 128, 64, 3, 4, 232"
TLX4="tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, i32:16, i32:16, 128, 128, 64, 4, 4, 232"

dump() {  # dump PY NAME SIDE ARGS... : one side of a pair (ONLY=GLOB: only the pairs so named)
  local py=$1 name=$2 side=$3; shift 3
  [[ $name == ${ONLY:-*} ]] || return 0
  rm -rf "$OUT/$name/$side"
  "$py" -m irscope dump "$@" -o "$OUT/$name/$side" --no-cache >/dev/null
  mkdir -p "$HERE/$name"
  local dir; dir=$(dirname "$(find "$OUT/$name/$side" -name manifest.json | head -1)")
  for f in "$dir"/*.{ttgir,llir,ptx,sass,amdgcn}; do
    [ -e "$f" ] || continue
    gzip -9n < "$f" > "$HERE/$name/$side.${f##*.}.gz"
  done
}

dump "$V39" matmul-stages-cuda90 a examples/matmul.py -k matmul_kernel -t cuda:90 -s "$MM" --set num_stages=3
dump "$V39" matmul-stages-cuda90 b examples/matmul.py -k matmul_kernel -t cuda:90 -s "$MM" --set num_stages=4
dump "$V39" matmul-warps-cuda90 a examples/matmul.py -k matmul_kernel -t cuda:90 -s "$MM" --set num_warps=4
dump "$V39" matmul-warps-cuda90 b examples/matmul.py -k matmul_kernel -t cuda:90 -s "$MM" --set num_warps=8
dump "$V39" matmul-stages-gfx942 a examples/matmul.py -k matmul_kernel -t hip:gfx942 -s "$MMG" --set num_stages=3
dump "$V39" matmul-stages-gfx942 b examples/matmul.py -k matmul_kernel -t hip:gfx942 -s "$MMG" --set num_stages=4
dump "$V39" matmul-warps-gfx942 a examples/matmul.py -k matmul_kernel -t hip:gfx942 -s "$MMG" --set num_warps=4
dump "$V39" matmul-warps-gfx942 b examples/matmul.py -k matmul_kernel -t hip:gfx942 -s "$MMG" --set num_warps=8
dump "$V39" softmax-layout-pin a examples/softmax.py -t cuda:90 -s "*fp32:16, *fp32:16, i32, i32, i32, i32, 1024, 4"
dump "$V39" softmax-layout-pin b examples/softmax.py -t cuda:90 -s "*fp32:16, *fp32:16, i32, i32, i32, i32, 1024, 4" \
  --pin-layout "blocked:sizePerThread=[2]"
dump "$V39" matmul-recipe-variant a examples/matmul.py -k matmul_kernel -s "$MM" -r h100 --variant baseline
dump "$V39" matmul-recipe-variant b examples/matmul.py -k matmul_kernel -s "$MM" -r h100 --variant deep-pipeline
dump "$V39" gluon-pipelined-stages a examples/gluon_persistent_matmul.py -k matmul_pipelined_kernel -t h100 -s "$GL"
dump "$V39" gluon-pipelined-stages b examples/gluon_persistent_matmul.py -k matmul_pipelined_kernel -t h100 -s "$GL3"
dump "$VFB" tlx-ws-stages a examples/tlx_ws_matmul.py -t h100 -s "$TLX"
dump "$VFB" tlx-ws-stages b examples/tlx_ws_matmul.py -t h100 -s "$TLX4"

capture() {  # capture NAME SIDE ARGS...: the first kernel a torch.compile script compiles, one side of a pair
  local name=$1 side=$2; shift 2
  [[ $name == ${ONLY:-*} ]] || return 0
  rm -rf "$OUT/$name/$side"
  "$V39" -m irscope capture "$@" -o "$OUT/$name/$side" --no-cache >/dev/null
  mkdir -p "$HERE/$name"
  local dir; dir=$(dirname "$(find "$OUT/$name/$side" -name manifest.json | sort | head -1)")
  for f in "$dir"/*.{ttgir,llir,ptx,sass}; do
    [ -e "$f" ] || continue
    gzip -9n < "$f" > "$HERE/$name/$side.${f##*.}.gz"
  done
}
# the Inductor forward kernel of RMSNorm at two configs (Inductor's choice, and 8 warps)
capture inductor-rmsnorm-warps a tests/data/layers/rmsnorm_inductor.py -t cuda:90 -k "triton_per_fused_add_mean_mul_pow_rsqrt_0" --set num_warps=4
capture inductor-rmsnorm-warps b tests/data/layers/rmsnorm_inductor.py -t cuda:90 -k "triton_per_fused_add_mean_mul_pow_rsqrt_0" --set num_warps=8
