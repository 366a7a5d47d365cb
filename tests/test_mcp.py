"""irscope mcp (#43): an MCP client session of the SDK's, in process, lists the tools and calls each one on the
shipped examples; each result is compared with what the CLI's --json (or its text) says for the same request,
and paths outside the workspace are refused, symlinks and spec files included."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import EXAMPLES, ROOT, run_in

pytest.importorskip("mcp", reason="needs the mcp package (pip install 'irscope[mcp]')")
pytest.importorskip("mcp.server.mcpserver", reason="needs the mcp package 2.x (MCPServer)")

import anyio  # noqa: E402  (the SDK's dependency: only once the SDK is known to be installed)
from mcp import Client  # noqa: E402

from irscope.mcp import paging, server  # noqa: E402

SIG = "*fp32, *fp32, *fp32, i32:16, 1024"
TOOLS = {"dump", "stage", "passes", "lines", "explain", "diff", "capture", "sweep", "profile", "bench"}
LOAD_LINE = 15  # examples/vector_add.py: x = tl.load(x_ptr + offsets, mask=mask)


def session(root: Path, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """One client session over the server of `root`: the results of the calls, in order."""

    async def go() -> list[Any]:
        async with Client(server.build(root)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def call(root: Path, name: str, **args: Any) -> dict[str, Any]:
    [result] = session(root, (name, args))
    assert not result.is_error, result.content[0].text
    return result.structured_content


def error(root: Path, name: str, **args: Any) -> str:
    [result] = session(root, (name, args))
    assert result.is_error, f"{name} should have been refused: {result.structured_content}"
    [content] = result.content
    return content.text


def cli_json(*args: str) -> Any:
    run = run_in(None, args[0], "--json", *args[1:])
    assert run.code == 0, run.err
    return json.loads(run.out)


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    """A workspace with the shipped examples, and two dumps of vector_add (num_warps 4 with passes, and 8)."""
    root = tmp_path_factory.mktemp("workspace")
    shutil.copytree(EXAMPLES, root / "examples", ignore=shutil.ignore_patterns("*.ipynb"))
    call(root, "dump", kernel="examples/vector_add.py", signature=SIG, target="h100", passes=True, out="four")
    call(root, "dump", kernel="examples/vector_add.py", signature=SIG, target="h100", set={"num_warps": 8}, out="eight")
    return root


def folder(root: Path, out: str) -> Path:
    [manifest] = (root / out).glob("**/manifest.json")
    return manifest.parent


def test_the_tools_are_listed_typed_and_say_what_they_cost(ws):
    async def go():
        async with Client(server.build(ws)) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(go)}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert "Cost:" in (t.description or ""), t.name
    dump = tools["dump"].input_schema["properties"]
    for keyword in ("kernel", "name", "signature", "args", "const", "target", "set", "recipe", "variant", "passes"):
        assert keyword in dump, keyword  # named as irscope.dump's keywords
    assert tools["dump"].input_schema["required"] == ["kernel"]
    assert tools["profile"].description and "GPU" in tools["profile"].description
    readers = {name for name, t in tools.items() if t.annotations and t.annotations.read_only_hint}
    assert readers == {"stage", "passes", "lines", "diff"}


def test_dump_equals_the_cli_json(ws, tmp_path):
    got = call(ws, "dump", kernel="examples/vector_add.py", signature=SIG, target="h100", set={"num_warps": 8})
    want = cli_json(
        "dump", str(EXAMPLES / "vector_add.py"), "-s", SIG, "-t", "h100", "--set", "num_warps=8", "-o", str(tmp_path)
    )
    [g], [w] = got["kernels"], want["kernels"]
    for key in ("name", "target", "signature", "triton_version", "options", "stats", "option_sources"):
        assert g[key] == w[key], key
    # an option given as None is one not given (Triton 3.6's manifest may list maxnreg=None on one side)
    assert {k: v for k, v in g["user_options"].items() if v is not None} == {
        k: v for k, v in w["user_options"].items() if v is not None
    }
    assert g["options"]["num_warps"] == 8 and g["target"] == "cuda:90"
    assert set(g["stages"]) == set(w["stages"]) >= {"ttir", "ttgir", "llir", "ptx"}
    assert Path(g["folder"]).is_relative_to(ws / "irscope-out")  # the default out, inside the workspace


def test_stage_pages_add_up_to_the_cli_stage(ws):
    dump = folder(ws, "four")
    want = run_in(
        None,  # the fixture's own request: the CLI is served the same dump from the cache
        "dump",
        str(ws / "examples" / "vector_add.py"),
        "-s",
        SIG,
        "-t",
        "h100",
        "--passes",
        "-o",
        str(ws / "four"),
        "--stage",
        "ttgir",
        "--locs",  # the stage tool gives the file as it is in the dump folder, loc(...) included
    )
    assert want.code == 0, want.err
    pages, offset = [], 0
    while offset is not None:
        page = call(ws, "stage", folder=str(dump), stage="ttgir", offset=offset, limit=7)
        assert page["total_lines"] == len(want.out.splitlines()) and page["total_chars"] == len(want.out)
        assert page["lines"] <= 7
        pages.append(page["text"])
        offset = page["next_offset"]
    assert len(pages) > 1 and "".join(pages) == want.out


def test_stage_around_a_python_line_starts_at_what_it_became(ws):
    dump = folder(ws, "four")
    page = call(ws, "stage", folder=str(dump.relative_to(ws)), stage="ttgir", line=str(LOAD_LINE), limit=40)
    entry = cli_json("lines", str(dump), "--line", str(LOAD_LINE))["line"]
    assert page["at"] == entry["stages"]["ttgir"]["at"] and page["at_total"] == len(page["at"]) > 0
    assert page["offset"] == max(0, page["at"][0] - 1 - 5)
    shown = page["text"].splitlines()
    assert any("tt.load" in shown[n - 1 - page["offset"]] for n in page["at"])


def test_passes_say_what_the_cli_says(ws):
    dump = folder(ws, "four")
    header = run_in(None, "passes", str(dump))
    assert header.code == 0, header.err
    doc = call(ws, "passes", folder=str(dump), limit=500)
    assert f"{doc['total']} MLIR passes, {doc['changed']} changed the IR" in header.out
    rows = doc["passes"]["rows"]
    assert len(rows) == doc["changed"] == doc["passes"]["total"] and all(r["added"] or r["removed"] for r in rows)
    first = call(ws, "passes", folder=str(dump), first="ttg.blocked")["first"]
    said = run_in(None, "passes", str(dump), "--first", "ttg.blocked").out
    assert first["where"] == "pass" and f"after pass {first['pass']['index']} {first['pass']['name']}" in said
    after = call(ws, "passes", folder=str(dump), after=first["pass"]["index"], limit=2000)
    assert "ttg.blocked" in after["ir"]["text"] and after["pass"] == first["pass"]
    assert after["ir"]["text"] in (dump / first["pass"]["file"]).read_text()


def test_lines_equal_the_cli_json(ws):
    dump = folder(ws, "four")
    want = cli_json("lines", str(dump))
    got = call(ws, "lines", folder=str(dump), limit=2)
    assert got["lines"] == want["lines"][:2] and got["total"] == len(want["lines"])
    assert got["next_offset"] == (2 if len(want["lines"]) > 2 else None)
    assert got["no_line"] == want["no_line"] and got["machine"] == want["machine"]
    one = call(ws, "lines", folder=str(dump), line=str(LOAD_LINE), stage="ptx")
    want_one = cli_json("lines", str(dump), "--line", str(LOAD_LINE), "--stage", "ptx")
    assert one["line"] == want_one["line"] and one["ir"] == want_one["ir"]
    assert one["ir"]["ptx"] and one["total"] == len(want_one["ir"]["ptx"])


def test_diff_equals_the_cli_json_and_pages_the_stage(ws):
    a, b = folder(ws, "four"), folder(ws, "eight")
    want = run_in(None, "diff", str(a), str(b), "--json", "--stage", "ttgir")
    assert want.code == 1, want.err  # different
    want_doc = json.loads(want.out)
    got = call(ws, "diff", a=str(a), b=str(b), stage="ttgir", limit=5)
    assert got["inputs"] == want_doc["inputs"] and got["inputs"]["options.num_warps"] == {"a": 4, "b": 8}
    assert got["stats"] == want_doc["stats"] and got["equal"] is False
    for name, s in want_doc["stages"].items():
        assert {k: v for k, v in got["stages"][name].items() if k != "diff"} == {
            k: v for k, v in s.items() if k != "diff"
        }
    text, offset = "", 0
    while offset is not None:
        page = call(ws, "diff", a=str(a), b=str(b), stage="ttgir", offset=offset, limit=50)["stage_diff"]
        text, offset = text + page["text"], page["next_offset"]
    assert text == want_doc["stages"]["ttgir"]["diff"] and '"ttg.num-warps" = 8' in text
    assert got["stage_diff"]["total_chars"] == len(text)


def test_sweep_equals_the_cli_json(ws, tmp_path):
    got = call(
        ws,
        "sweep",
        kernel="examples/vector_add.py",
        signature=SIG,
        target="h100",
        grid={"num_warps": [2, 4]},
        workers=1,
    )
    want = cli_json(
        "sweep",
        str(EXAMPLES / "vector_add.py"),
        "-s",
        SIG,
        "-t",
        "h100",
        "--axis",
        "num_warps=2,4",
        "-j",
        "1",
        "-o",
        str(tmp_path),
    )
    assert got["configs_page"]["total"] == len(want["configs"]) == 2
    for g, w in zip(got["configs"], want["configs"]):
        assert (g["label"], g["status"], g.get("stats")) == (w["label"], w["status"], w.get("stats"))


@pytest.mark.torch
def test_capture_runs_a_workspace_script_as_the_cli_does(ws, tmp_path):
    script = ws / "examples" / "scripts" / "vector_add.py"
    got = call(ws, "capture", script=str(script), script_args=["--size", "4096"], target="h100", out="captured")
    want = cli_json("capture", str(script), "-t", "h100", "-o", str(tmp_path), "--", "--size", "4096")
    assert [k["name"] for k in got["kernels"]] == [k["name"] for k in want["kernels"]] == ["add_kernel"]
    assert [k["signature"] for k in got["kernels"]] == [k["signature"] for k in want["kernels"]]
    assert got["kernels"][0]["stats"] == want["kernels"][0]["stats"]
    assert got["capture"]["mode"] == want["capture"]["mode"] and got["capture"]["exit_status"] == 0
    assert Path(got["kernels"][0]["folder"]).is_relative_to(ws / "captured")


@pytest.mark.parametrize("tool", ["profile", "bench"])
def test_gpu_tools_are_refused_in_one_line_without_a_gpu(ws, tool):
    from irscope.kernel.targets import local_gpu_present

    if local_gpu_present():
        pytest.skip("a GPU is visible: profile and bench would run")
    args = {
        "kernel": "examples/vector_add.py",
        "signature": SIG,
        "launch": "x_ptr=randn(4096, fp32), y_ptr=randn(4096, fp32), out_ptr=empty(4096, fp32), n_elements=4096",
        "grid": "cdiv(n_elements, BLOCK_SIZE)",
    }
    text = error(ws, tool, **args)
    cli = run_in(
        None, tool, str(ws / "examples" / "vector_add.py"), "-s", SIG, "--args", args["launch"], "--grid", args["grid"]
    )
    assert cli.code == 2 and "\n" not in text and text == cli.err.strip()
    assert "GPU" in text


def test_bad_input_is_the_cli_line_as_a_tool_error(ws):
    text = error(ws, "dump", kernel="examples/vector_add.py", signature="*fp32, *fp32", target="h100")
    cli = run_in(
        None, "dump", str(ws / "examples" / "vector_add.py"), "-s", "*fp32, *fp32", "-t", "h100", "-o", str(ws / "cli")
    )
    assert cli.code == 2 and text == cli.err.strip() and text.startswith("irscope: error: ")
    assert "a binary, not text" in error(ws, "stage", folder=str(folder(ws, "four")), stage="cubin")
    assert error(ws, "stage", folder=str(folder(ws, "four")), stage="nope").startswith(
        "irscope: error: stage=nope: not in"
    )


def test_paths_outside_the_workspace_are_refused(ws, tmp_path):
    outside = tmp_path / "outside.py"
    shutil.copy(EXAMPLES / "vector_add.py", outside)
    (ws / "link.py").symlink_to(outside)
    for kernel in (str(outside), "../" + outside.name, "link.py"):
        text = error(ws, "dump", kernel=kernel, signature=SIG, target="h100")
        assert "outside the workspace" in text and "\n" not in text, text
    assert "outside the workspace" in error(
        ws, "dump", kernel="examples/vector_add.py", signature=SIG, out=str(tmp_path)
    )
    assert "outside the workspace" in error(ws, "lines", folder=str(folder(ws, "four")) + "/../../../..")
    assert "outside the workspace" in error(ws, "capture", script=str(outside))
    # a spec file inside names a kernel file outside: data that would run code from outside
    spec = json.loads((folder(ws, "four") / "manifest.json").read_text())
    spec["file"] = str(outside)
    (ws / "spec.json").write_text(json.dumps(spec))
    assert "outside the workspace" in error(ws, "dump", kernel="spec.json")
    assert not list(tmp_path.glob("*/manifest.json"))  # nothing written outside


def test_dump_folders_are_resources(ws, tmp_path):
    dump = folder(ws, "four")
    rel = dump.relative_to(ws).as_posix()

    async def go():
        async with Client(server.build(ws)) as client:
            listed = [str(r.uri) for r in (await client.list_resources()).resources]
            await client.call_tool("dump", {"kernel": "examples/vector_add.py", "signature": SIG, "out": "later"})
            later = [str(r.uri) for r in (await client.list_resources()).resources]
            manifest = await client.read_resource(f"irscope://dump/{rel}")
            ttgir = await client.read_resource(
                f"irscope://dump/{rel}/{json.loads(manifest.contents[0].text)['stages']['ttgir']}"
            )
            return listed, later, manifest, ttgir

    listed, later, manifest, ttgir = anyio.run(go)
    [new] = set(later) - set(listed)  # a folder a tool wrote is listed from then on
    assert new.startswith("irscope://dump/later/add_kernel/")
    assert f"irscope://dump/{rel}" in listed
    assert json.loads(manifest.contents[0].text)["kernel"] == "add_kernel"
    assert "ttg.num-warps" in ttgir.contents[0].text
    outside = tmp_path / "copy"
    shutil.copytree(dump, outside)
    (ws / "escape").symlink_to(outside)  # a link inside the workspace to a dump folder outside it
    refusals = {
        "irscope://dump/../etc/passwd": "Unknown resource",  # the SDK's own check of a template's values
        "irscope://dump/examples/vector_add.py": "not in a dump folder",
        "irscope://dump/escape": "outside the workspace",
    }
    for uri, why in refusals.items():
        assert why in str(anyio.run(_refused_read, ws, uri)), uri


async def _refused_read(root: Path, uri: str) -> Exception:
    async with Client(server.build(root)) as client:
        try:
            await client.read_resource(uri)
        except Exception as e:
            return e
    raise AssertionError(f"{uri} was read")


def test_a_page_is_bounded_and_says_the_whole():
    text = "".join(f"line {i}\n" for i in range(1000))
    page = paging.text_page(text, 10, 20)
    assert page["text"].splitlines()[0] == "line 10" and page["lines"] == 20 and page["next_offset"] == 30
    assert page["total_lines"] == 1000 and page["total_chars"] == len(text)
    huge = "x" * (paging.MAX_CHARS * 2) + "\nshort\n"
    first = paging.text_page(huge, 0, 5)
    assert len(first["text"]) < paging.MAX_CHARS + 100 and first["next_offset"] == 1 and "line cut" in first["text"]
    with pytest.raises(Exception, match="limit=0"):
        paging.text_page(text, 0, 0)


def test_irscope_mcp_serves_on_stdio_and_a_kernel_file_that_prints_cannot_break_it(ws):
    """The server as a client starts it (`irscope mcp --root DIR`, a process of its own, stdio): what a kernel
    file prints while it loads goes to stderr, never into the protocol on stdout."""
    from mcp import StdioServerParameters

    noisy = ws / "noisy.py"
    noisy.write_text('print("hello from the kernel file")\n' + (EXAMPLES / "vector_add.py").read_text())
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env["IRSCOPE_CACHE_DIR"] = os.environ["IRSCOPE_CACHE_DIR"]
    params = StdioServerParameters(command=sys.executable, args=["-m", "irscope", "mcp", "--root", str(ws)], env=env)

    async def go():
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            return names, await client.call_tool("dump", {"kernel": "noisy.py", "signature": SIG, "target": "h100"})

    with open(os.devnull, "w") as quiet, contextlib.redirect_stderr(quiet):
        names, result = anyio.run(go)
    assert names == TOOLS
    assert not result.is_error, result.content[0].text
    [kernel] = result.structured_content["kernels"]
    assert kernel["name"] == "add_kernel" and Path(kernel["file"]) == noisy


def test_irscope_mcp_refuses_a_root_that_is_no_folder(tmp_path):
    run = run_in(None, "mcp", "--root", str(tmp_path / "nowhere"))
    assert run.code == 2 and run.err.strip().startswith("irscope: error: --root ") and run.err.count("\n") == 1


def test_a_kernel_file_that_never_finishes_loading_is_stopped(tmp_path):
    """Requests run on the server's own thread, so the import's time limit (a signal) holds as for the CLI."""
    from irscope import knobs

    (tmp_path / "loops.py").write_text("import time\nwhile True:\n    time.sleep(0.05)\n")
    knobs.LOAD_TIMEOUT.set(1)
    try:
        text = error(tmp_path, "dump", kernel="loops.py", signature="i32")
    finally:
        knobs.LOAD_TIMEOUT.reset()
    assert text.startswith("irscope: error: ") and "took longer than 1 s" in text


def test_a_compile_failure_names_the_stage_as_the_cli_does(ws):
    shutil.copy(ROOT / "tests" / "data" / "frontend_error.py", ws / "frontend_error.py")
    text = error(ws, "dump", kernel="frontend_error.py", signature="*fp32, i32, 64")
    cli = run_in(None, "dump", str(ws / "frontend_error.py"), "-s", "*fp32, i32, 64", "-o", str(ws / "cli"))
    assert cli.code == 1 and text == cli.err.strip()
    assert "compile failed in stage 'source'" in text and "undefined_scale" in text


def test_a_recipe_file_outside_the_workspace_is_refused_and_a_name_is_irscopes_own(ws, tmp_path):
    recipe = tmp_path / "mine.toml"
    recipe.write_text((ROOT / "recipes" / "h100.toml").read_text())
    text = error(ws, "dump", kernel="examples/vector_add.py", signature=SIG, recipe=str(recipe))
    assert "outside the workspace" in text
    [kernel] = call(ws, "dump", kernel="examples/vector_add.py", signature=SIG, recipe="h100")["kernels"]
    assert kernel["recipe"]["name"] == "h100" and kernel["target"] == "cuda:90"


def test_explain_equals_the_cli_json_and_tries_fixes_only_of_workspace_kernels(ws, tmp_path):
    slow = "*fp32, *fp32, *fp32, i32, 1024"  # n_elements not known divisible: the loads are split to 32 bits
    [kernel] = call(ws, "dump", kernel="examples/vector_add.py", signature=slow, target="h100", out="slow")["kernels"]
    got = call(ws, "explain", folder=kernel["folder"])
    want = cli_json("explain", kernel["folder"])["dumps"][0]
    assert got["findings"] == want["findings"] and got["findings_page"]["total"] == len(want["findings"]) > 0
    assert {f["kind"] for f in got["findings"]} == {"narrow-access"}
    assert got["findings"][0]["fix"]["args"] == {"n_elements": "i32:16"}
    tried = call(ws, "explain", folder=kernel["folder"], try_fixes=True, out="tried")["tried"]
    assert tried and all(t["gone"] and Path(t["folder"]).is_relative_to(ws / "tried") for t in tried)
    # a dump folder is data: with try_fixes it would recompile the kernel file it names, here one from outside
    outside = tmp_path / "elsewhere.py"
    shutil.copy(EXAMPLES / "vector_add.py", outside)
    made = run_in(None, "dump", str(outside), "-s", slow, "-t", "h100", "-o", str(ws / "foreign"))
    assert made.code == 0, made.err
    text = error(ws, "explain", folder=str(folder(ws, "foreign")), try_fixes=True)
    assert "outside the workspace" in text
    assert call(ws, "explain", folder=str(folder(ws, "foreign")))["findings"]  # reading it is fine
