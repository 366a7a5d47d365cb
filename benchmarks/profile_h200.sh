#!/usr/bin/env bash
# irscope profile live on the H200 (#32): the frontier Gluon WS matmul (8192^3 fp16), liger's RMSNorm forward
# (16384 x 8192 bf16), and examples/matmul.py at num_stages 1 and 3 beside `bench` of the same pair; then the
# no-ncu fallback (Proton) on vector_add and the GPU tests. Every output goes under OUTDIR.
# Run on the device from the repo root: bash benchmarks/profile_h200.sh OUTDIR
set -u
out=${1:?OUTDIR}
mkdir -p "$out"
irs="python3 -m irscope"
ncu --version | tail -1 > "$out/ncu_version.txt" 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv >> "$out/ncu_version.txt"

# the Gluon and RMSNorm launches come from capture spec files (their launch records: shapes, grid), made by
# running the recording script under irscope's capture (set_allocator is the profile child's own)
for case in gluon rmsnorm; do
    timeout 300 python3 -m irscope dump benchmarks/ncu_record_h200.py -o "$out/capture_$case" -- "$case" \
        > "$out/capture_$case.txt" 2>&1
done
spec_gluon=$(ls "$out"/capture_gluon/captures/matmul_persistent_ws_kernel-*.json | head -1)
spec_rms=$(ls "$out"/capture_rmsnorm/captures/_rms_norm_forward_kernel-*.json | head -1)
timeout 600 $irs profile "$spec_gluon" -o "$out/gluon" > "$out/gluon.txt" 2>&1
timeout 600 $irs profile "$spec_rms" -o "$out/rmsnorm" > "$out/rmsnorm.txt" 2>&1

# the settings pair: profile each, and bench them against each other
ARGS="a_ptr=randn(4096, 4096, fp16), b_ptr=randn(4096, 4096, fp16), c_ptr=empty(4096, 4096, fp16), M=4096, N=4096, K=4096, stride_am=4096, stride_ak=1, stride_bk=4096, stride_bn=1, stride_cm=4096, stride_cn=1, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8"
GRID="cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)"
for s in 1 3; do
    timeout 600 $irs profile examples/matmul.py --args "$ARGS" --grid "$GRID" --set num_warps=4 --set num_stages=$s \
        -o "$out/matmul$s" > "$out/matmul$s.txt" 2>&1
done
timeout 300 $irs bench examples/matmul.py --args "$ARGS" --grid "$GRID" --set num_warps=4 --set num_stages=1 \
    --try num_stages=3 --flops "2*M*N*K" --max-seconds "${MAX_SECONDS:-8}" > "$out/bench_matmul.txt" 2>&1

# the fallback: PATH without ncu -> Proton's PC sampling, said on stderr
nocu=$(echo "$PATH" | tr ':' '\n' | while read -r d; do [ -x "$d/ncu" ] || echo "$d"; done | paste -sd:)
ADD="x_ptr=randn(16777216, fp32), y_ptr=randn(16777216, fp32), out_ptr=empty(16777216, fp32), n_elements=16777216, BLOCK_SIZE=1024"
PATH="$nocu" timeout 300 python3 -m irscope profile examples/vector_add.py --args "$ADD" \
    --grid "cdiv(n_elements, BLOCK_SIZE)" -o "$out/add_proton" > "$out/add_proton.txt" 2>&1

# the JSON documents, re-rendered from the folders (no GPU needed for this part)
for d in gluon rmsnorm matmul1 matmul3 add_proton; do
    f=$(ls "$out/$d"/*/*/profile.json 2>/dev/null | head -1)
    [ -n "$f" ] && $irs profile "$(dirname "$f")" --json > "$out/$d.json" 2> "$out/$d.json.err"
done
[ -n "${SKIP_PYTEST:-}" ] || timeout 600 python3 -m pytest -q tests/gpu/test_profile_gpu.py > "$out/pytest_gpu.txt" 2>&1
tail -n 3 "$out"/*.txt
