#!/usr/bin/env bash
# The twelfth session's GPU checks on the H200 (issue #42), each bounded, outputs under OUTDIR:
#   diag     what AOTInductor's C++ build needs on this machine (g++, nvcc, CUDA_HOME), and the AOTI
#            script run plainly (its full stderr tail): the GPU AOTI test skipped because that run failed
#   fid      benchmarks/fidelity_layers.py --hide-gpu on the embedding/dropout script (two kernels differed,
#            unexplained) and Helion with several configs and autotuned; the diffs are printed
#   gpu      tests/gpu: every GPU test
#   hidden   the capture tests (-m torch, not the envs ones: no package index there) with CUDA_VISIBLE_DEVICES=
# Usage: bash benchmarks/h200_session12.sh OUTDIR [diag] [fid] [gpu] [hidden]
set -u
out=${1:?OUTDIR}; shift; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > "$out/pip.txt" 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
for what in "$@"; do
    t0=$SECONDS
    case $what in
        diag)
            { which g++ gcc nvcc; echo "CUDA_HOME=${CUDA_HOME:-}"; ls -d /usr/local/cuda*;
              python3 -c "import torch.utils.cpp_extension as c; print('torch CUDA_HOME', c.CUDA_HOME)";
              timeout 150 python3 tests/data/aoti_block.py /tmp/aoti-plain.pt2; echo "aoti plain rc $?"; } > "$out/diag.txt" 2>&1 ;;
        fid) timeout 420 python3 benchmarks/fidelity_layers.py --hide-gpu --out /tmp/fid --timeout 100 --scripts \
                 inductor_dropout_embedding.py helion_two_configs.py helion_autotune.py > "$out/fid.txt" 2>&1
             cp /tmp/fid/fidelity_layers.json "$out/fid.json" 2>/dev/null ;;
        gpu) timeout 420 python3 -m pytest -q -p no:cacheprovider -rfs tests/gpu > "$out/gpu.txt" 2>&1 ;;
        hidden) CUDA_VISIBLE_DEVICES= timeout 300 python3 -m pytest -q -p no:cacheprovider -rfs -n 12 \
                    -m "torch and not envs" tests > "$out/hidden.txt" 2>&1 ;;
    esac
    echo "$what: exit $? in $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
done
