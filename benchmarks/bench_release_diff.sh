#!/usr/bin/env bash
# A repeat two-release diff of one kernel against the two dumps alone (docs/benchmarks.md, issue #28).
# Run once `irscope diff ... --a-triton 3.6.0` first, so that the 3.6.0 env exists.
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD" IRSCOPE_CACHE_DIR="${IRSCOPE_CACHE_DIR:-$HOME/.cache/irscope}"
PY="${PYTHON:-python3}"
E36="$IRSCOPE_CACHE_DIR/envs/triton-3.6.0/bin/python"
MM="*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
DUMP36="from pathlib import Path; from irscope import jobs; from irscope.compile import dump; j=jobs.resolve_one(jobs.Request(Path('examples/matmul.py'),('matmul_kernel',),'$MM',target='cuda:90'),'x'); print(dump.dump(j.spec,j.settings,Path('/tmp/irscope-bench-b36')).cached)"
t() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(echo "$(date +%s.%N) - $s" | bc)"; }
# warm everything once
$PY -m irscope dump examples/matmul.py --kernel matmul_kernel -s "$MM" --target cuda:90 -o /tmp/irscope-bench-b39 >/dev/null 2>&1
$E36 -c "$DUMP36" >/dev/null 2>&1
$PY -m irscope diff examples/matmul.py --kernel matmul_kernel -s "$MM" --target cuda:90 --a-triton 3.6.0 --b-triton 3.9.0 -o /tmp/irscope-bench-bd >/dev/null 2>&1
for i in 1 2 3 4 5 6 7 8; do
 a=$(t $PY -m irscope dump examples/matmul.py --kernel matmul_kernel -s "$MM" --target cuda:90 -o /tmp/irscope-bench-b39)
 b=$(t $E36 -c "$DUMP36")
 c=$(t $PY -m irscope diff examples/matmul.py --kernel matmul_kernel -s "$MM" --target cuda:90 --a-triton 3.6.0 --b-triton 3.9.0 -o /tmp/irscope-bench-bd)
 echo "run $i dump39 $a dump36 $b diff $c"
done
