"""The typed records (irscope/records.py): every JSON file irscope writes, made for real, validates against the
schema derived from its record (both the readers' checker, kernel/jsonfile.of, and the JSON Schema,
records.json_schema, checked with the jsonschema package where it is installed), and writes no key its record
does not declare; a record with a wrong type or a missing required key fails both.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from irscope import records
from irscope.errors import BadInput
from irscope.kernel import jsonfile
from tests.helpers import (
    DATA,
    MATMUL,
    MATMUL_SIG,
    PROFILES,
    VECTOR_ADD,
    run_in,
    write_profile,
)

ADD_SIG = "*fp32, *fp32, *fp32, i32:16, 1024"
MATMUL_LOOP = 33  # examples/matmul.py: `for k in range(0, tl.cdiv(K, BLOCK_K)):`


def _only(folder: Path, pattern: str) -> Path:
    (found,) = folder.glob(pattern)
    return found


@pytest.fixture(scope="module")
def add_dump(tmp_path_factory) -> Path:
    """examples/vector_add.py for cuda:90 with --passes: manifest.json, passes/index.json, map.json."""
    out = tmp_path_factory.mktemp("add")
    r = run_in(None, "dump", str(VECTOR_ADD), "-s", ADD_SIG, "-t", "cuda:90", "--passes", "-o", str(out))
    assert r.code == 0, r.err
    return _only(out, "*/*/manifest.json").parent


@pytest.fixture(scope="module")
def pinned_dump(tmp_path_factory) -> Path:
    """examples/matmul.py with a loop pin and an option: manifest.json's pins hold a check of each."""
    out = tmp_path_factory.mktemp("pinned")
    r = run_in(
        None,
        "dump",
        str(MATMUL),
        "-s",
        MATMUL_SIG,
        "-t",
        "cuda:90",
        "--pin-loop",
        f"{MATMUL_LOOP}:num_stages=2",
        "--set",
        "num_warps=8",
        "-o",
        str(out),
    )
    assert r.code == 0, r.err
    return _only(out, "*/*/manifest.json").parent


@pytest.fixture(scope="module")
def capture_out(tmp_path_factory) -> Path:
    """A compile-only capture of tests/data/capture_identity.py: captures/*.json (spec files with their launch
    record) and a dump of each kernel."""
    pytest.importorskip("torch", reason="a capture runs the script, which imports torch")
    out = tmp_path_factory.mktemp("capture") / "out"
    r = run_in(None, "dump", str(DATA / "capture_identity.py"), "--compile-only", "--target", "cuda:90", "-o", str(out))
    assert r.code == 0, r.err
    return out


def _load(path: Path) -> Any:
    return json.loads(path.read_text())


def _validate(doc: Any, record: Any) -> None:
    """Both derived schemas: the readers' checker (BadInput) and, where jsonschema is installed, the JSON Schema."""
    jsonfile.check(doc, jsonfile.of(record))
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.validate(doc, records.json_schema(record), cls=jsonschema.Draft202012Validator)


def _fails(doc: Any, record: Any) -> None:
    """Neither derived schema takes `doc`."""
    with pytest.raises(BadInput):
        jsonfile.check(doc, jsonfile.of(record))
    try:
        import jsonschema
    except ImportError:
        return
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, records.json_schema(record), cls=jsonschema.Draft202012Validator)


def _undeclared(doc: Any, hint: Any, where: str = "") -> list[str]:
    """The keys of `doc` (at any depth) that its record does not declare: a writer writes what its type says."""
    if doc is None:
        return []
    members = records.union_members(hint)
    if members is not None:
        for m in members:
            if m is type(None):
                continue
            try:
                jsonfile.check(doc, jsonfile.of(m))
            except BadInput:
                continue
            return _undeclared(doc, m, where)
        return [f"{where}: no member of {hint} takes it"]
    if records.is_record(hint):
        fields = records.fields(hint)
        out = [f"{where}.{k}" for k in doc if k not in fields]
        for k, (t, _) in fields.items():
            if k in doc:
                out += _undeclared(doc[k], t, f"{where}.{k}")
        return out
    origin = getattr(hint, "__origin__", None)
    args = getattr(hint, "__args__", ())
    if origin is list and args:
        return [u for i, v in enumerate(doc) for u in _undeclared(v, args[0], f"{where}[{i}]")]
    if origin is dict and args:
        return [u for k, v in doc.items() for u in _undeclared(v, args[1], f"{where}.{k}")]
    return []


# ---------------------------------------------------------------- every record, made for real


def test_a_dumps_manifest_validates_and_declares_every_key_it_writes(add_dump):
    manifest = _load(add_dump / "manifest.json")
    _validate(manifest, records.Manifest)
    assert not _undeclared(manifest, records.Manifest)
    # the writer writes every key of the record but the one a capture adds
    assert set(manifest) == set(records.fields(records.Manifest)) - {"generated_by"}
    assert manifest["stats"]["occupancy"]["limited_by"] and manifest["stats"]["sass"]["instructions"] > 0
    assert manifest["passes"] and manifest["map"] == "map.json"


def test_an_amd_dumps_manifest_and_map_validate_and_declare_every_key(tmp_path):
    """AMD's figures (stats.amdgcn, VGPRs, waves per SIMD) are records too."""
    r = run_in(None, "dump", str(VECTOR_ADD), "-s", ADD_SIG, "-t", "hip:gfx942", "-o", str(tmp_path))
    assert r.code == 0, r.err
    folder = _only(tmp_path, "*/*/manifest.json").parent
    manifest, source_map = _load(folder / "manifest.json"), _load(folder / "map.json")
    _validate(manifest, records.Manifest)
    _validate(source_map, records.SourceMap)
    assert not _undeclared(manifest, records.Manifest) and not _undeclared(source_map, records.SourceMap)
    assert manifest["stats"]["amdgcn"]["instructions"] > 0 and "waves_per_simd" in manifest["stats"]["occupancy"]


def test_a_passes_index_holds_the_manifests_pass_records(add_dump):
    index = _load(add_dump / "passes" / "index.json")
    for entry in index:
        _validate(entry, records.PassEntry)
    assert index == _load(add_dump / "manifest.json")["passes"]
    assert set(index[0]) == set(records.fields(records.PassEntry))


def test_a_source_map_validates_and_declares_every_key_it_writes(add_dump):
    source_map = _load(add_dump / "map.json")
    _validate(source_map, records.SourceMap)
    assert not _undeclared(source_map, records.SourceMap)
    stages = {s for line in source_map["lines"] for s in line["stages"]}
    assert {"ttgir", "ptx", "sass"} <= stages


def test_pin_checks_validate(pinned_dump):
    manifest = _load(pinned_dump / "manifest.json")
    _validate(manifest, records.Manifest)
    assert not _undeclared(manifest, records.Manifest)
    pins = manifest["pins"]
    assert {(p["kind"], p["name"]) for p in pins} >= {("option", "num_warps"), ("loop", f"{MATMUL_LOOP}:num_stages")}
    for pin in pins:
        _validate(pin, records.PinCheck)
        assert set(pin) == set(records.fields(records.PinCheck))


def test_a_captures_spec_files_and_launch_records_validate(capture_out):
    from irscope.kernel.specfile import read_spec_document

    specs = sorted((capture_out / "captures").glob("*.json"))
    assert specs
    for path in specs:
        doc = _load(path)
        _validate(doc, records.SpecFile)
        assert not _undeclared(doc, records.SpecFile), path
        launch = doc["launch"]
        assert launch["mode"] == "compile-only" and launch["script"].endswith("capture_identity.py")
        assert any("dtype" in a for a in launch["args"].values())  # a tensor's record
        back = read_spec_document(path)
        _validate(back, records.SpecFile)
        assert back["kernel"] == doc["kernel"]
    for manifest in capture_out.glob("*/*/manifest.json"):
        _validate(_load(manifest), records.Manifest)
        assert not _undeclared(_load(manifest), records.Manifest)


def test_profile_documents_validate(pinned_dump, tmp_path):
    from irscope.artifacts import profiled

    for path in sorted(PROFILES.glob("*.json")):
        doc = _load(path)
        _validate(doc, records.Profile)
        assert not _undeclared(doc, records.Profile), path
    written = write_profile(pinned_dump, 1)
    _validate(_load(written), records.Profile)
    assert profiled.read(pinned_dump) == _load(written)


# ---------------------------------------------------------------- the schemas can fail


def _docs(add_dump, pinned_dump) -> dict[str, tuple[Any, Any]]:
    manifest = _load(add_dump / "manifest.json")
    return {
        "manifest": (manifest, records.Manifest),
        "map": (_load(add_dump / "map.json"), records.SourceMap),
        "pin": (_load(pinned_dump / "manifest.json")["pins"][0], records.PinCheck),
        "pass": (manifest["passes"][0], records.PassEntry),
        "spec": (
            {
                "irscope_spec": 1,
                "file": str(VECTOR_ADD),
                "kernel": "add_kernel",
                "args": {"n": "i32:16", "BLOCK": 1024},
                "target": "cuda:90",
                "launch": {"grid": [4, 1, 1], "args": {"x": {"dtype": "float32", "shape": [8]}}},
            },
            records.SpecFile,
        ),
        "profile": (_load(PROFILES / "matmul_ns1.json"), records.Profile),
    }


@pytest.mark.parametrize("name", ["manifest", "map", "pin", "pass", "spec", "profile"])
def test_a_missing_required_key_fails(name, add_dump, pinned_dump):
    doc, record = _docs(add_dump, pinned_dump)[name]
    _validate(doc, record)
    assert record.__required_keys__
    for key in record.__required_keys__:
        broken = copy.deepcopy(doc)
        del broken[key]
        _fails(broken, record)


WRONG = {  # (record, path to a value, a value of the wrong type)
    "manifest": [
        (["kernel"], 7),
        (["stages"], ["add_kernel.ptx"]),
        (["stats", "registers"], "26"),
        (["stats", "occupancy", "occupancy"], "high"),
        (["passes", 0, "index"], "1"),
        (["notes"], {"a": 1}),
    ],
    "map": [(["lines", 0, "line"], "11"), (["lines", 0, "stages", "ptx", "at", 0], "29"), (["machine"], 5)],
    "pin": [(["status"], 1), (["detail"], None)],
    "pass": [(["added"], True), (["file"], None)],
    "spec": [(["args", "BLOCK"], True), (["launch", "grid"], "4"), (["launch", "args", "x", "shape"], [8.5])],
    "profile": [(["totals", "samples"], "many"), (["lines", 0, "share"], None), (["lines", 0, "stalls", "wait"], "3")],
}


@pytest.mark.parametrize("name", list(WRONG))
def test_a_value_of_the_wrong_type_fails(name, add_dump, pinned_dump):
    doc, record = _docs(add_dump, pinned_dump)[name]
    for path, value in WRONG[name]:
        broken = copy.deepcopy(doc)
        at = broken
        for k in path[:-1]:
            at = at[k]
        at[path[-1]] = value
        _fails(broken, record)


def test_the_json_schema_is_derived_from_the_annotations():
    js = records.json_schema(records.Manifest)
    assert js["type"] == "object" and js["title"] == "Manifest"
    assert (
        sorted(js["required"])
        == sorted(records.Manifest.__required_keys__)
        == ["irscope", "kernel", "stages", "target"]
    )
    assert set(js["properties"]) == set(records.fields(records.Manifest))
    assert js["properties"]["stats"]["anyOf"][1] == {"type": "null"}
    occupancy = js["properties"]["stats"]["anyOf"][0]["properties"]["occupancy"]["anyOf"][0]
    assert occupancy["properties"]["occupancy"] == {"type": "number"} and occupancy["required"] == [
        "occupancy",
        "limited_by",
    ]
    assert js["properties"]["stages"] == {"type": "object", "additionalProperties": {"type": "string"}}
    pin = records.json_schema(records.PinCheck)
    assert pin["properties"]["status"]["enum"][:3] == ["ok", "no effect", "changed"]
    assert pin["properties"]["value"] == {}
    jsonschema = pytest.importorskip("jsonschema")
    for record in records.RECORDS.values():
        jsonschema.Draft202012Validator.check_schema(records.json_schema(record))


def test_the_readers_checker_is_derived_from_the_same_record():
    from irscope.artifacts import schema
    from irscope.kernel import specfile

    assert schema.MANIFEST == jsonfile.of(records.Manifest)
    assert schema.MAP == jsonfile.of(records.SourceMap) and schema.PROFILE == jsonfile.of(records.Profile)
    assert specfile.manifest_as_spec_schema()["kernel"] == jsonfile.of(records.Manifest)["kernel"]
    # a new status in a newer irscope's manifest still reads (the checker takes a Literal's type)...
    jsonfile.check(
        {"kind": "loop", "name": "n", "value": 1, "source": "s", "status": "newer", "detail": ""},
        jsonfile.of(records.PinCheck),
    )
    # ...and an extra field too, though the JSON Schema states the values this irscope writes
    jsonfile.check({"irscope": 1, "kernel": "k", "target": "t", "stages": {}, "new_field": object()}, schema.MANIFEST)


def test_a_map_with_null_files_and_no_line_reads(add_dump):
    """map.json's `files` and `no_line` may be null (records.SourceMap): the readers take null as none, where
    they raised TypeError."""
    from irscope.artifacts import sourcemap

    source_map = _load(add_dump / "map.json")
    source_map.update(files=None, no_line=None)
    _validate(source_map, records.SourceMap)
    line = source_map["lines"][0]["line"]
    assert sourcemap.find_line(source_map, str(line))["line"] == line
    with pytest.raises(BadInput, match="no code came from a file named"):
        sourcemap.find_line(source_map, f"elsewhere.py:{line}")
    assert sourcemap.no_line_row(source_map)["instructions"] == 0
