#!/usr/bin/env bash
# One H200 call for this round's GPU checks, most important first, each bounded, every output under
# OUTDIR (tarred by the caller): #32 profile live, #27's frontier timed, and the stand-in's GPU agreements.
set -u
out=${1:?OUTDIR}; mkdir -p "$out"
SKIP_PYTEST=1 MAX_SECONDS=5 bash benchmarks/profile_h200.sh "$out/profile" > "$out/profile.log" 2>&1
MAX_SECONDS=3 timeout 200 bash benchmarks/rmsnorm_frontier_h200.sh "$out/frontier" > "$out/frontier.log" 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_standin_devices_gpu.py \
    tests/gpu/test_standin_agrees_gpu.py > "$out/pytest_standin.txt" 2>&1
