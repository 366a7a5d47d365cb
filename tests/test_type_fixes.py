"""Faults mypy found when it was set up over irscope/ (pyproject.toml's [tool.mypy]), each held fixed here."""

from __future__ import annotations

import subprocess
import sys

from irscope.artifacts import lineinfo
from tests.helpers import ROOT, VECTOR_ADD


def test_dump_stage_of_a_binary_stage_writes_its_bytes(tmp_path):
    """dump --stage cubin, piped: the cubin's bytes (print_stage wrote them as str: TypeError)."""
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "irscope",
            "dump",
            str(VECTOR_ADD),
            "-s",
            "*fp32, *fp32, *fp32, i32:16, 1024",
            "-t",
            "h100",
            "--stage",
            "cubin",
            "-o",
            str(tmp_path / "out"),
        ],
        cwd=ROOT,
        capture_output=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    cubins = list((tmp_path / "out").rglob("*.cubin"))
    assert len(cubins) == 1 and p.stdout == cubins[0].read_bytes()
    assert p.stdout.startswith(b"\x7fELF")


def test_a_location_without_line_and_column_is_no_line_not_a_crash():
    """'"file":x' where :line:col belongs: the parser's ValueError (no line), not an AttributeError."""
    parser = lineinfo._LocParser({})
    assert parser.parse('"k.py":x') == ()
    assert parser.parse('"k.py":7:3') == (("k.py", 7),)  # the form it reads
