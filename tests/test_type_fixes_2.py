"""Faults mypy found once records.py typed the JSON records: fields a file may hold as null (the record says
`X | None`, the schema accepts it) that a reader used as a dict. Each held fixed here."""

from __future__ import annotations

import json

from irscope.compare.bylines import by_line
from irscope.compare.sides import Side
from irscope.views import dump as dump_view


def _folder(tmp_path, name, no_line):
    folder = tmp_path / name
    folder.mkdir()
    manifest = {"irscope": 1, "kernel": "k", "target": "cuda:90", "stages": {}, "map": "map.json"}
    source_map = {"irscope_map": 1, "kernel_file": "k.py", "machine": "sass", "no_line": no_line,
                  "lines": [{"file": "k.py", "line": 3, "text": "x = 1", "stages": {"sass": {"n": 2}}}]}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "map.json").write_text(json.dumps(source_map))
    return Side(name, name, folder, manifest)


def test_by_line_reads_a_map_whose_no_line_is_null(tmp_path):
    """map.json "no_line": null (records.SourceMap allows it): no units without a line, not an
    AttributeError on None.get; the other side's units without a line still count as a change."""
    a = _folder(tmp_path, "a", None)
    b = _folder(tmp_path, "b", {"sass": {"n": 5}})
    deltas = by_line(a, b)
    assert [(d.file, d.line) for d in deltas] == [("", 0)]            # line 3 is the same on both sides
    assert ("instructions", 0, 5) in deltas[0].changes
    assert by_line(a, a) == []


def test_resource_lines_of_a_manifest_whose_stats_are_null():
    """manifest.json "stats": null (records.Manifest allows it): the resources line with unknowns, not an
    AttributeError on None.get."""
    lines = dump_view.resource_lines({"irscope": 1, "kernel": "k", "target": "cuda:90", "stages": {},
                                      "stats": None})
    assert lines and lines[0].startswith("resources  ? registers")
    with_stats = dump_view.resource_lines({"irscope": 1, "kernel": "k", "target": "cuda:90", "stages": {},
                                           "stats": {"registers": 40}})
    assert with_stats[0].startswith("resources  40 registers")
