#!/usr/bin/env bash
# The thirteenth session's GPU checks on the H200 (issue #42 item 2), each bounded, outputs under OUTDIR:
#   gpu      tests/gpu: every GPU test
#   devices  tests/gpu/test_standin_devices_gpu.py alone (the memory_allocated device case among them)
#   fid2     benchmarks/fidelity_layers.py --hide-gpu on Helion with two configs (last session its plain
#            run exited 1 and the log stayed on the machine: its tail is printed now)
#   fidauto  the same on Helion's autotuner (autotune_effort="quick"; its plain run outlasted 100 s)
#   floor    the corpus' dump-dominated scripts run plainly on the GPU (issue #42 item 5): each with a cold
#            Triton cache, then again with the warm one; the difference is what Triton's JIT spends compiling
#            the kernels a capture dumps, the CPU work a GPU run pays too (walls and PTX counts in floor.txt)
# Usage: bash benchmarks/h200_session13.sh OUTDIR [gpu] [devices] [fid2] [fidauto] [floor]
#   (floor: FLOOR="script stems" picks the corpus scripts, FLOOR_S each run's limit, default 240)
set -u
out=${1:?OUTDIR}; shift; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$out/pip.txt" 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
for what in "$@"; do
    t0=$SECONDS
    case $what in
        devices) timeout 200 python3 -m pytest -q -p no:cacheprovider -rfs tests/gpu/test_standin_devices_gpu.py > "$out/devices.txt" 2>&1 ;;
        gpu) timeout 450 python3 -m pytest -q -p no:cacheprovider -rfs tests/gpu > "$out/gpu.txt" 2>&1 ;;
        fid2) timeout 170 python3 benchmarks/fidelity_layers.py --hide-gpu --out /tmp/fid2 --timeout 80 --scripts \
                  helion_two_configs.py > "$out/fid2.txt" 2>&1
              cp /tmp/fid2/fidelity_layers.json "$out/fid2.json" 2>/dev/null
              cp /tmp/fid2/helion_two_configs/*.log "$out/" 2>/dev/null ;;
        fidauto) timeout 400 python3 benchmarks/fidelity_layers.py --hide-gpu --out /tmp/fida --timeout 170 --scripts \
                  helion_autotune.py > "$out/fidauto.txt" 2>&1
              cp /tmp/fida/fidelity_layers.json "$out/fidauto.json" 2>/dev/null
              for f in /tmp/fida/helion_autotune/*.log; do cp "$f" "$out/auto-$(basename "$f")"; done 2>/dev/null ;;
        floor) python3 -c "import matplotlib, pandas" 2>/dev/null || export PYTHONPATH=$PYTHONPATH:$PWD/tests/data/plotstubs
               for name in ${FLOOR:-triton_03_matrix_multiplication triton_06_fused_attention ninetoothed_matmul helion_add}; do
                   for pass in cold warm; do
                       [ $pass = cold ] && rm -rf /tmp/floor-cache
                       t1=$(date +%s.%N)
                       TRITON_CACHE_DIR=/tmp/floor-cache TORCHINDUCTOR_CACHE_DIR=/tmp/floor-ind HELION_CACHE_DIR=/tmp/floor-hel \
                           timeout ${FLOOR_S:-240} python3 benchmarks/corpus/$name.py > "$out/floor-$name-$pass.log" 2>&1
                       rc=$?
                       t2=$(date +%s.%N)
                       echo "$name $pass: exit $rc, wall $(python3 -c "print(round($t2-$t1,1))") s, $(find /tmp/floor-cache -name '*.ptx' | wc -l) PTX in the cache" | tee -a "$out/floor.txt"
                   done
               done ;;
    esac
    echo "$what: exit $? in $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
done
