"""A note on the whole run is said once (issue #38, item 7): Triton 3.9's enable_fp_fusion default was
printed once per kernel; a note only some kernels carry is still said under each of them."""

from __future__ import annotations

import pytest

from tests.helpers import DATA, run_in

FP_FUSION = "enable_fp_fusion: on by this Triton's default"


def _fp_fusion_default_noted() -> bool:
    from irscope import adapter

    return bool(adapter.default_option_notes({}))


needs_note = pytest.mark.skipif(
    not _fp_fusion_default_noted(), reason="this Triton has no enable_fp_fusion default to note (before 3.9)"
)


def test_run_notes_are_the_notes_every_dump_carries():
    from irscope.views.dump import run_notes

    a = {"notes": ["run-wide", "x: only a"]}
    b = {"notes": ["y: only b", "run-wide"]}
    assert run_notes([a, b]) == ["run-wide"]
    assert run_notes([a]) == []  # one dump: its notes stay under it
    assert run_notes([a, b, {"notes": []}]) == []


@pytest.fixture(scope="module")
def two_kernels(tmp_path_factory):
    """`irscope dump` of data/two_kernels.py's two kernels into a cache of its own: (the run, its -o folder)."""
    base = tmp_path_factory.mktemp("two-kernels")
    args = ("dump", str(DATA / "two_kernels.py"), "-k", "scale_kernel", "-k", "shift_kernel")
    args += ("-s", "*fp32:16, i32:16, 256", "-t", "cuda:90", "-o", str(base / "o"))
    return run_in(None, *args, env={"IRSCOPE_CACHE_DIR": str(base / "cache")}), base / "o"


@needs_note
def test_dump_of_two_kernels_says_the_fp_fusion_note_once(two_kernels):
    r, _ = two_kernels
    assert r.code == 0, r.err
    assert r.out.count(FP_FUSION) == 1, r.out
    assert "note (all 2 kernels)" in r.out
    # before the first kernel's summary, not inside it
    assert r.out.index(FP_FUSION) < r.out.index("scale_kernel")


@needs_note
def test_a_note_only_one_kernel_carries_stays_under_it(two_kernels):
    import io
    import json

    from irscope.compile.cache import DumpResult
    from irscope.views.console import console
    from irscope.views.dump import summary

    r, out = two_kernels
    assert r.code == 0, r.err
    results = []
    for manifest in sorted(out.glob("*/*/manifest.json")):
        results.append(DumpResult(manifest.parent, json.loads(manifest.read_text()), cached=False))
    assert len(results) == 2
    results[1].manifest["notes"] = [n for n in results[1].manifest["notes"] if FP_FUSION not in n]
    buf = io.StringIO()
    summary(results, out=console(file=buf))
    text = buf.getvalue()
    assert text.count(FP_FUSION) == 1 and "all 2 kernels" not in text
    # under the first kernel's own header, in its summary
    assert text.index(results[0].manifest["kernel"]) < text.index(FP_FUSION) < text.index(results[1].manifest["kernel"])


@needs_note
@pytest.mark.torch
def test_capture_of_three_kernels_says_the_fp_fusion_note_once(capsys, tmp_path):
    pytest.importorskip("torch")
    r = run_in(
        capsys,
        "capture",
        str(DATA / "capture_autotune.py"),
        "--compile-only",
        "-o",
        str(tmp_path / "out"),
        env={"IRSCOPE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert r.code == 0, r.err
    dumped = r.out.count("  ->  ")  # each dump's summary line (and the header's)
    assert dumped >= 4, r.out  # the header and at least three kernels' dumps
    assert r.out.count(FP_FUSION) == 1, r.out
    assert f"note (all {dumped - 1} kernels)" in r.out
