#!/usr/bin/env bash
# This round's GPU checks on the H200 (issue #42), each bounded, outputs under OUTDIR:
#   aoti     tests/gpu/test_capture_aoti.py: AOTInductor captured in a real run, and on the stand-in with the
#            GPU visible and hidden, each kernel's PTX against the plain run's
#   hidden   the capture tests (-m torch) with CUDA_VISIBLE_DEVICES= : the CUDA build of torch (2.11) on a
#            machine whose GPU is not visible, as on a login node
#   gpu      tests/gpu: every GPU test
# Usage: bash benchmarks/h200_session11.sh OUTDIR [aoti] [hidden] [gpu]
set -u
out=${1:?OUTDIR}; shift; mkdir -p "$out"
pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > "$out/pip.txt" 2>&1
export PYTHONPATH=$PWD:/tmp/site
python3 -c "import torch, triton, helion; print('torch', torch.__version__, 'triton', triton.__version__, 'helion', helion.__version__, 'gpu', torch.cuda.get_device_name(0))" > "$out/versions.txt" 2>&1
for what in "$@"; do
    t0=$SECONDS
    case $what in
        aoti) timeout 400 python3 -m pytest -q -p no:cacheprovider -rs tests/gpu/test_capture_aoti.py > "$out/aoti.txt" 2>&1 ;;
        hidden) CUDA_VISIBLE_DEVICES= timeout 420 python3 -m pytest -q -p no:cacheprovider -rs -n 12 -m torch tests > "$out/hidden.txt" 2>&1 ;;
        gpu) timeout 560 python3 -m pytest -q -p no:cacheprovider -rs tests/gpu > "$out/gpu.txt" 2>&1 ;;
    esac
    echo "$what: exit $? in $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
done
