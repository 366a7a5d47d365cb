#!/usr/bin/env bash
# Issue #27 item 5 on the H200: torch.compile's RMSNorm against liger-kernel's, timed by irscope bench.
# Both scripts run for real on the GPU under `irscope dump` (capture, gpu mode) at ROWS x COLS fp32;
# each captured kernel is then timed from its capture spec file (the launch it recorded): the forward
# kernels against the same --ref (eager F.rms_norm over the same tensors), the backward kernels alone.
# Run from the repo root with the repo and liger-kernel on PYTHONPATH: bash benchmarks/rmsnorm_frontier_h200.sh OUTDIR
set -u
out=${1:?OUTDIR}; rows=${ROWS:-8192}; cols=${COLS:-4096}
mkdir -p "$out"
python3 -m irscope dump tests/data/layers/rmsnorm_inductor.py -o "$out/inductor" -- "$rows" "$cols" > "$out/inductor.dump.txt" 2>&1
python3 -m irscope dump tests/data/layers/rmsnorm_liger.py -o "$out/liger" -- "$rows" "$cols" > "$out/liger.dump.txt" 2>&1
python3 -m irscope diff "$out/inductor" "$out/liger" > "$out/frontier.txt" 2>&1
bench() {  # SPEC NAME [REF]: the table as printed (the figures docs/walkthrough.md quotes)
    python3 -m irscope bench "$1" ${3:+--ref "$3"} --max-seconds "${MAX_SECONDS:-4}" > "$out/$2.txt" 2>&1
}
for spec in "$out"/inductor/captures/*.json; do
    name=inductor-$(basename "$spec" .json)
    case "$name" in
        *rsqrt*) bench "$spec" "$name" "F.rms_norm(in_ptr0, ($cols,), in_ptr1, 1e-6)" ;;
        *) bench "$spec" "$name" ;;
    esac
done
for spec in "$out"/liger/captures/*.json; do
    name=liger-$(basename "$spec" .json)
    case "$name" in
        *forward*) bench "$spec" "$name" "F.rms_norm(X_ptr, ($cols,), W_ptr, 1e-6)" ;;
        *) bench "$spec" "$name" ;;
    esac
done
ls -la "$out"
