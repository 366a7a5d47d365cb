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
    source_map = {
        "irscope_map": 1,
        "kernel_file": "k.py",
        "machine": "sass",
        "no_line": no_line,
        "lines": [{"file": "k.py", "line": 3, "text": "x = 1", "stages": {"sass": {"n": 2}}}],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "map.json").write_text(json.dumps(source_map))
    return Side(name, name, folder, manifest)


def test_by_line_reads_a_map_whose_no_line_is_null(tmp_path):
    """map.json "no_line": null (records.SourceMap allows it): no units without a line, not an
    AttributeError on None.get; the other side's units without a line still count as a change."""
    a = _folder(tmp_path, "a", None)
    b = _folder(tmp_path, "b", {"sass": {"n": 5}})
    deltas = by_line(a, b)
    assert [(d.file, d.line) for d in deltas] == [("", 0)]  # line 3 is the same on both sides
    assert ("instructions", 0, 5) in deltas[0].changes
    assert by_line(a, a) == []


def test_resource_lines_of_a_manifest_whose_stats_are_null():
    """manifest.json "stats": null (records.Manifest allows it): the resources line with unknowns, not an
    AttributeError on None.get."""
    lines = dump_view.resource_lines({"irscope": 1, "kernel": "k", "target": "cuda:90", "stages": {}, "stats": None})
    assert lines and lines[0].startswith("resources  ? registers")
    with_stats = dump_view.resource_lines(
        {"irscope": 1, "kernel": "k", "target": "cuda:90", "stages": {}, "stats": {"registers": 40}}
    )
    assert with_stats[0].startswith("resources  40 registers")


def test_by_line_and_its_summary_read_a_line_with_null_or_no_text(tmp_path, capsys):
    """A map line's "text" may be null or absent (records.MapEntry): by_line keeps None (the JSON's null),
    not a KeyError, and the terminal summary prints the line without text, not a TypeError on None[:60]."""
    from types import SimpleNamespace

    from irscope.views import diff as diff_view

    a = _folder(tmp_path, "a", {})
    b = _folder(tmp_path, "b", {})
    for side, text, n in ((a, None, 2), (b, "absent", 7)):
        doc = json.loads((side.folder / "map.json").read_text())
        if text is None:
            doc["lines"][0]["text"] = None
        else:
            del doc["lines"][0]["text"]
        doc["lines"][0]["stages"]["sass"]["n"] = n
        (side.folder / "map.json").write_text(json.dumps(doc))
    deltas = by_line(a, b)
    assert [(d.file, d.line, d.text) for d in deltas] == [("k.py", 3, None)]
    assert ("instructions", 2, 7) in deltas[0].changes
    deltas_ba = by_line(b, a)
    assert [(d.line, d.text) for d in deltas_ba] == [(3, None)]  # b's line has no "text" key at all
    diff_view.by_line_summary(SimpleNamespace(by_line=deltas, sources_differ=False))
    out = capsys.readouterr().out
    assert "1 source lines changed" in out and "k.py:3" in out
