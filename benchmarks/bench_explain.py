"""Precision and recall of `irscope explain` on examples/pitfalls (issue #40).

Each case of examples/pitfalls/findings.toml is compiled as dump does (the cache serves repeats), its
findings compared with the true ones written there, by (kind, line, cause). A finding not written there is a
false alarm (precision); a true one not found is a miss (recall). Prints one row a case and the totals
as a Markdown table (docs/benchmarks.md, "Explain findings (issue #40)").

    PYTHONPATH=$PWD python benchmarks/bench_explain.py [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PITFALLS = ROOT / "examples" / "pitfalls"


def cases() -> list[dict]:
    return tomllib.loads((PITFALLS / "findings.toml").read_text())["case"]


def found_for(case: dict, out: Path) -> set[tuple[str, int, str]]:
    import irscope

    d = irscope.dump(
        str(PITFALLS / case["file"]), signature=case["signature"], target=case["target"], set=case.get("sets"), out=out
    )
    return {(f.kind, f.where.line, f.cause) for f in d.findings}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/irscope-bench-explain", help="dump folder")
    args = ap.parse_args()
    tp = fp = fn = 0
    print("| case | target | true | found | false alarms | missed |")
    print("| --- | --- | ---: | ---: | --- | --- |")
    for case in cases():
        truth = {(k, int(n), c) for k, n, c in case.get("findings", [])}
        got = found_for(case, Path(args.out))
        false, missed = got - truth, truth - got
        tp += len(got & truth)
        fp += len(false)
        fn += len(missed)
        show = lambda s: ", ".join(f"{k}@{n} ({c})" for k, n, c in sorted(s)) or "-"  # noqa: E731
        print(f"| {case['name']} | {case['target']} | {len(truth)} | {len(got)} | {show(false)} | {show(missed)} |")
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(
        f"\n{len(cases())} cases: {tp} true findings found, {fp} false alarms, {fn} missed; "
        f"precision {precision:.1%}, recall {recall:.1%}"
    )
    return 0 if precision == 1.0 and recall >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
