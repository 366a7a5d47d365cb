#!/usr/bin/env bash
# Issue #32's recordings on the H200: for each case of ncu_record_h200.py, an Nsight Compute report
# (--set full, source counters) exported as CSV pages, irscope's own capture dump of the same run (its
# map.json is the other half of the join), and one Proton PC-sampling profile of vector_add.
# Run on the device from the repo root: bash benchmarks/ncu_record_h200.sh OUTDIR
set -u
out=${1:?OUTDIR}
mkdir -p "$out"
ncu --version | tail -1 > "$out/ncu_version.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version --format=csv >> "$out/ncu_version.txt"
declare -A kernels=([add]=add_kernel [matmul1]=matmul_kernel [matmul3]=matmul_kernel
                    [gluon]=matmul_persistent_ws_kernel [rmsnorm]=rms_norm)
for case in add matmul1 matmul3 gluon rmsnorm; do
    rep="$out/$case"
    timeout 240 ncu --clock-control none --set full --import-source yes -k "regex:${kernels[$case]}" -c 1 \
        -f -o "$rep" python3 benchmarks/ncu_record_h200.py "$case" > "$out/$case.ncu.log" 2>&1
    ncu -i "$rep.ncu-rep" --page source --csv --print-source sass > "$out/${case}_source_sass.csv" 2>&1
    ncu -i "$rep.ncu-rep" --page source --csv --print-source cuda,sass > "$out/${case}_source_cuda_sass.csv" 2>&1
    ncu -i "$rep.ncu-rep" --page source --csv --print-source cuda > "$out/${case}_source_cuda.csv" 2>&1
    ncu -i "$rep.ncu-rep" --page details --csv > "$out/${case}_details.csv" 2>&1
    ncu -i "$rep.ncu-rep" --page raw --csv > "$out/${case}_raw.csv" 2>&1
    timeout 240 python3 -m irscope dump benchmarks/ncu_record_h200.py -o "$out/dump_$case" --json \
        -- "$case" > "$out/dump_$case.json" 2> "$out/dump_$case.err"
done
python3 - "$out" > "$out/proton.log" 2>&1 <<'PY'
import sys, runpy, inspect
import triton.profiler as proton
print("proton.start", inspect.signature(proton.start))
out = sys.argv[1]
for mode in ("pcsampling",):
    try:
        proton.start(f"{out}/proton_add", backend="cupti", mode=mode, hook="triton")
    except TypeError as e:
        print("start failed:", e)
        proton.start(f"{out}/proton_add", backend="cupti_pcsampling", hook="triton")
    sys.argv = ["ncu_record_h200.py", "add"]
    runpy.run_path("benchmarks/ncu_record_h200.py", run_name="__main__")
    proton.finalize()
print("proton done")
PY
ls -la "$out"
