"""Recipes: the shipped ones check and compile the examples; typos are refused with file:line; precedence."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import tomllib
from test_pins import irscope

from irscope import jobs
from irscope.compile import compiler
from irscope.errors import BadInput
from irscope.kernel.settings import Settings
from irscope.kernel.targets import parse_target
from irscope.steer import layering, recipes
from irscope.steer.toml_lines import KeyLines
from tests.helpers import EXAMPLES, FB_GLUON_LOAD, FBTRITON, ROOT, VECTOR_ADD

SHIPPED = ["a100", "h100", "h200", "b200", "mi300x", "mi355x"]
TARGETS = {
    "a100": "cuda:80",
    "h100": "cuda:90",
    "h200": "cuda:90",
    "b200": "cuda:100",
    "mi300x": "hip:gfx942",
    "mi355x": "hip:gfx950",
}
# runtime arguments only: the recipes give the constexprs
EXAMPLE_SIGS = {
    "matmul.py": "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1",
    "softmax.py": "*fp32, *fp32, i32, i32, i32, i32",
    "vector_add.py": "*fp32, *fp32, *fp32, i32:16",
    "gluon_add.py": "*fp32, *fp32, *fp32, i32:16",
}
ADD4 = EXAMPLE_SIGS["vector_add.py"]


def write(tmp_path: Path, text: str, name: str = "t.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


# ------------------------------------------------------------------ shipped recipes


def test_shipped_recipes_pass_check_and_are_listed():
    assert recipes.available() == sorted(SHIPPED)
    r = irscope("recipes", "check")
    assert r.code == 0, r.err
    assert r.out.count(": ok") == len(SHIPPED)
    listing = irscope("recipes", "list")
    for name in SHIPPED:
        line = next(row for row in listing.out.splitlines() if row.startswith(name + " "))
        assert TARGETS[name] in line and "invalid" not in line


def resolve(file, signature, target=None, recipe=None, variant=None):
    """[(spec, settings)] per kernel, built as the CLI builds them (jobs.resolve)."""
    request = jobs.Request(Path(file), signature=signature, target=target, recipe=recipe, variant=variant)
    return [(j.spec, j.settings) for j in jobs.resolve(request)]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_recipe_compiles_the_examples_for_its_target(name):
    recipe = recipes.load(recipes.find(name))
    assert recipe.target.name == TARGETS[name]
    assert recipe.variants and recipe.purpose
    for example, sig in EXAMPLE_SIGS.items():
        if FBTRITON and example == "gluon_add.py":
            continue  # FB_GLUON_LOAD
        ((spec, settings),) = resolve(EXAMPLES / example, sig, recipe=name)
        assert settings.target.name == TARGETS[name] and settings.target_reason == f"recipe {name}"
        art = compiler.compile_spec(spec, settings, with_sass=False)  # what is read here is not the SASS
        statuses = {(p["kind"], p["name"]): p["status"] for p in art.pins}
        assert "changed" not in statuses.values(), art.pins
        assert art.recipe["name"] == name
        if example == "gluon_add.py":  # the layout constexpr (warp size 32 or 64) is what the TTGIR holds
            assert statuses[("constexpr", "layout")] == "ok"
            assert f"threadsPerWarp = [{parse_target(name).warp_size}]" in art.stages["ttgir"]
        if example == "matmul.py":
            assert statuses[("option", "num_stages")] == "ok"


def test_variants_resolve_for_every_shipped_recipe():
    for name in SHIPPED:
        recipe = recipes.load(recipes.find(name))
        for variant in recipe.variants:
            for kernel in ("matmul_kernel", "softmax_kernel", "add_kernel", "gluon_add_kernel"):
                s = layering.apply(Settings(recipe.target), recipe, variant, kernel)
                assert all(src.startswith(f"recipe {name}") for src in s.sources.values())


def test_deep_pipeline_variant_pins_the_matmul_loop():
    ((spec, settings),) = resolve(
        EXAMPLES / "matmul.py", EXAMPLE_SIGS["matmul.py"], recipe="h100", variant="deep-pipeline"
    )
    art = compiler.compile_spec(spec, settings)
    assert "{tt.num_stages = 4 : i32}" in art.stages["ttir"]
    loop = next(p for p in art.pins if p["kind"] == "loop")
    assert loop["status"] == "ok" and loop["source"] == "recipe h100 [variant deep-pipeline, kernel matmul_kernel]"
    assert "4x128x64xf16" in loop["detail"]


# ------------------------------------------------------------------ refusing bad recipes


def test_typo_and_wrong_type_are_refused_with_file_line_key_and_choices(tmp_path):
    path = write(
        tmp_path,
        """
        [recipe]
        target = "h100"
        purpose = "test"

        [options]
        num_warp = 8

        [kernel.add_kernel]
        options = { num_stages = "3" }

        [variant.x.env]
        TRITON_HIP_USE_ASYNC_COPY = true

        [variant.y]
        purpos = "typo"
        """,
    )
    errors = recipes.check(path)
    assert errors[0].startswith(f"{path}:{line_of(path, 'num_warp =')}: [options] num_warp: ")
    assert "did you mean 'num_warps'" in errors[0] and "valid: " in errors[0] and "maxnreg" in errors[0]
    assert errors[1].startswith(f"{path}:{line_of(path, 'num_stages')}: [kernel.add_kernel.options] num_stages: ")
    assert "expected an integer, got a string '3'" in errors[1]
    assert errors[2].startswith(f"{path}:{line_of(path, 'TRITON_HIP')}: [variant.x.env] TRITON_HIP_USE_ASYNC_COPY")
    assert "not a compile knob" in errors[2] and "for cuda" in errors[2]
    assert errors[3].startswith(f"{path}:{line_of(path, 'purpos =')}: [variant.y] purpos: unknown key")
    assert "did you mean 'purpose'" in errors[3]

    r = irscope("recipes", "check", str(path), str(ROOT / "recipes" / "h100.toml"))
    assert r.code == 2
    assert r.err.count("irscope: error:") == 4 and "h100.toml: ok" in r.out

    out = tmp_path / "out"
    r = irscope("dump", str(VECTOR_ADD), "--recipe", str(path), "-s", ADD4, "-o", str(out))
    assert r.code == 2 and f"{path}:{line_of(path, 'num_warp =')}: [options] num_warp" in r.err
    assert "(and 3 more; irscope recipes check" in r.err
    assert not out.exists()


@pytest.mark.parametrize(
    "body, needle, words",
    [
        (
            "[optons]\nnum_warps = 4\n",
            "[optons]",
            ["unknown key", "did you mean 'options'", "valid here: recipe, options"],
        ),
        ("[options]\nwaves_per_eu = 2\n", "waves_per_eu", ["not an option of Triton", "cuda backend"]),
        ("[options]\nnum_warps = true\n", "num_warps", ["expected an integer, got a boolean"]),
        ('[constexprs]\nlayout = "gl.Blocked([4])"\n', "layout", ["not a Gluon layout class"]),
        ("[constexprs]\nlayout = { Bogus = {} }\n", "layout", ["not a Gluon layout class"]),
        ("[loops.33]\nnum_stage = 2\n", "num_stage", ["did you mean 'num_stages'"]),
        ("[loops.x33]\nnum_stages = 2\n", "[loops.x33]", ["expected a line number"]),
        ("[layouts.blocked]\nsizePerThred = [1]\n", "sizePerThred", ["not a field of a TTGIR layout"]),
        ('[layouts]\nblocked = "blocked<{}>"\n', "blocked =", ["not a layout attribute"]),
    ],
)
def test_bad_recipe_entries(tmp_path, body, needle, words):
    path = write(tmp_path, '[recipe]\ntarget = "h100"\npurpose = "t"\n\n' + body)
    errors = recipes.check(path)
    assert errors, body
    assert errors[0].startswith(f"{path}:{line_of(path, needle)}:"), errors
    for w in words:
        assert w in errors[0]


def test_recipe_errors_for_target_and_toml(tmp_path):
    assert "did you mean 'h100'" in recipes.check(write(tmp_path, '[recipe]\ntarget = "h10"\npurpose = "t"\n'))[0]
    assert "missing" in recipes.check(write(tmp_path, "[options]\nnum_warps = 4\n"))[0]
    bad = recipes.check(write(tmp_path, '[recipe]\ntarget = "h100"\npurpose = "t"\nx = = 1\n'))
    assert bad[0].startswith(f"{tmp_path / 't.toml'}:4: not valid TOML")
    with pytest.raises(BadInput, match="--recipe h10: no such recipe \\(did you mean 'h100'"):
        recipes.find("h10")
    with pytest.raises(BadInput, match="has no variant 'deep' \\(did you mean 'deep-pipeline'"):
        recipes.resolve("h100", "deep")
    with pytest.raises(BadInput, match="--variant x: give the recipe"):
        recipes.resolve(None, "x")


# ------------------------------------------------------------------ applying: target, precedence, sources

PRECEDENCE = """
    [recipe]
    target = "h100"
    purpose = "precedence"

    [options]
    num_warps = 2
    maxnreg = 96
    enable_fp_fusion = false

    [constexprs]
    BLOCK_SIZE = 256

    [kernel."add_*"]
    options = { num_warps = 4, maxnreg = 128 }
    constexprs = { BLOCK_SIZE = 512 }

    [variant.v]
    purpose = "variant"
    options = { num_warps = 8 }
    [variant.v.kernel.add_kernel]
    constexprs = { BLOCK_SIZE = 1024 }
    layouts.blocked = { sizePerThread = [2] }
    """


def test_precedence_defaults_kernel_variant_set(tmp_path):
    path = write(tmp_path, PRECEDENCE)
    recipe = recipes.load(path)
    base = Settings(parse_target("h100"))

    s = layering.apply(base, recipe, None, "other_kernel")
    assert s.options == {"num_warps": 2, "maxnreg": 96, "enable_fp_fusion": False}
    assert set(s.sources.values()) == {"recipe t"}

    s = layering.apply(base, recipe, None, "add_kernel")
    assert s.options["num_warps"] == 4 and s.sources["num_warps"] == "recipe t [kernel add_*]"
    assert s.sources["enable_fp_fusion"] == "recipe t" and s.pins.constexprs["BLOCK_SIZE"].text == "512"

    s = layering.apply(base, recipe, "v", "add_kernel").overlay({"maxnreg": 160}, "--set")
    assert s.options == {"num_warps": 8, "maxnreg": 160, "enable_fp_fusion": False}
    assert s.sources == {"num_warps": "recipe t [variant v]", "maxnreg": "--set", "enable_fp_fusion": "recipe t"}
    assert s.pins.constexprs["BLOCK_SIZE"].source == "recipe t [variant v, kernel add_kernel]"
    assert s.pins.constexprs["BLOCK_SIZE"].text == "1024"

    # the whole path: a dump shows where each value came from, and checks it in the output
    r = irscope(
        "dump",
        str(VECTOR_ADD),
        "--recipe",
        str(path),
        "--variant",
        "v",
        "--set",
        "num_warps=4",
        "-s",
        ADD4,
        "-o",
        str(tmp_path / "out"),
        "--pin-layout",
        "blocked:sizePerThread=[1]",
        "--json",
    )
    assert r.code == 0, r.err
    k = json.loads(r.out)["kernels"][0]
    assert k["target"] == "cuda:90" and k["options"]["num_warps"] == 4
    assert k["option_sources"]["num_warps"] == "--set" and k["option_sources"]["maxnreg"] == "recipe t [kernel add_*]"
    assert k["recipe"] == {"name": "t", "path": str(path), "variant": "v", "target": "cuda:90"}
    pins = {(p["kind"], p["name"]): p for p in k["pins"]}
    assert pins[("constexpr", "BLOCK_SIZE")]["value"] == "1024" and k["signature"].endswith(", 1024")
    assert pins[("option", "maxnreg")]["status"] == "ok"
    # the variant's layout edit, then the command line's on top: the command line wins
    lay = [p for p in k["pins"] if p["kind"] == "layout"]
    assert [p["source"] for p in lay] == ["recipe t [variant v, kernel add_kernel]", "--pin-layout"]
    assert "sizePerThread = [1]" in Path(k["stages"]["ttgir"]).read_text()

    summary = irscope(
        "dump",
        str(VECTOR_ADD),
        "--recipe",
        str(path),
        "--variant",
        "v",
        "--set",
        "num_warps=4",
        "-s",
        ADD4,
        "-o",
        str(tmp_path / "out"),
    )
    assert "num_warps=4 (--set)" in summary.out and "maxnreg=128 (recipe t [kernel add_*])" in summary.out
    assert "recipe     t, variant v" in summary.out and "pins" in summary.out


def test_recipe_selects_the_target_and_refuses_another(tmp_path):
    r = irscope("dump", str(VECTOR_ADD), "--recipe", "mi300x", "-s", ADD4, "-o", str(tmp_path), "--json")
    assert r.code == 0, r.err
    k = json.loads(r.out)["kernels"][0]
    assert k["target"] == "hip:gfx942" and "amdgcn" in k["stages"]
    manifest = json.loads((Path(k["folder"]) / "manifest.json").read_text())
    assert manifest["target_reason"] == "recipe mi300x"
    r = irscope("dump", str(VECTOR_ADD), "--recipe", "mi300x", "--target", "h100", "-s", ADD4, "-o", str(tmp_path))
    assert r.code == 2 and "does not fit recipe mi300x, which is for hip:gfx942" in r.err
    # h100's recipe fits an h200 (same sm_90)
    s = resolve(VECTOR_ADD, ADD4, target="h200", recipe="h100")[0][1]
    assert s.target.name == "cuda:90" and s.target_reason == "requested"


def test_command_line_constexprs_win_and_are_reported(tmp_path):
    ((spec, settings),) = resolve(VECTOR_ADD, ADD4 + ", 4096", recipe="h100")
    assert spec.args["BLOCK_SIZE"].value == 4096
    assert settings.pins.overridden == {"BLOCK_SIZE": "4096"}
    art = compiler.compile_spec(spec, settings)
    rec = next(p for p in art.pins if p["kind"] == "constexpr")
    assert rec["status"] == "overridden" and "4096" in rec["detail"]


def test_kernel_section_constexpr_must_be_a_parameter(tmp_path):
    path = write(
        tmp_path,
        """
        [recipe]
        target = "h100"
        purpose = "t"
        [kernel.add_kernel.constexprs]
        BLOK_SIZE = 8
        """,
    )
    with pytest.raises(
        BadInput, match="constexpr 'BLOK_SIZE' is not a parameter of add_kernel .did you mean 'BLOCK_SIZE'"
    ):
        resolve(str(VECTOR_ADD), ADD4, target=None, recipe=str(path))


def test_key_lines_follow_headers_dotted_keys_and_inline_tables():
    text = textwrap.dedent("""
        [recipe]
        target = "h100"
        [kernel."matmul*".options]
        num_warps = 4
        [variant.v]
        options.num_stages = 3
        env = { A = 1, B = 2 }
        s = '''
        x = 1
        '''
        """)
    lines = KeyLines(text)
    assert lines.line(("recipe", "target")) == 3
    assert lines.line(("kernel", "matmul*", "options", "num_warps")) == 5
    assert lines.line(("variant", "v", "options", "num_stages")) == 7
    assert lines.line(("variant", "v", "env", "B")) == 8
    assert lines.line(("variant", "v", "nothing")) == 6


# ------------------------------------------------------------------ recipes show --variant, pins that do not fit

FIT = """
    [recipe]
    target = "h100"
    purpose = "fit"

    [constexprs]
    BLOCK_SIZE = 256
    [loops.33]
    num_stages = 3
    [layouts.blocked1]
    sizePerThread = [1, 8]

    [kernel."add_*"]
    options = { num_warps = 4 }

    [variant.v]
    purpose = "deeper"
    options = { num_warps = 8 }
    loops.33 = { num_stages = 4 }
    [variant.v.kernel.add_kernel]
    constexprs = { BLOCK_SIZE = 1024 }
    """


def test_show_variant_without_kernel_applies_the_variant(tmp_path):
    path = write(tmp_path, FIT)
    plain = irscope("recipes", "show", str(path))
    r = irscope("recipes", "show", str(path), "--variant", "v")
    assert r.code == 0, r.err
    assert r.out != plain.out
    assert "variant   v  deeper" in r.out and "defaults, with variant v" in r.out
    assert "num_warps = 8  (recipe t [variant v])" in r.out
    assert "loop 33:num_stages=3  (recipe t)  overridden by recipe t [variant v]" in r.out
    assert "num_warps = 4  (overridden by recipe t [variant v])" in r.out  # the kernel section's
    assert "variant v, kernel add_kernel" in r.out and "constexpr BLOCK_SIZE = 1024" in r.out
    bad = irscope("recipes", "show", str(path), "--variant", "w")
    assert bad.code == 2 and "has no variant 'w'" in bad.err


def test_default_pins_that_do_not_fit_a_kernel_are_not_applicable(tmp_path):
    path = write(tmp_path, FIT)
    ((spec, settings),) = resolve(str(VECTOR_ADD), ADD4, target=None, recipe=str(path))
    art = compiler.compile_spec(spec, settings)
    recs = {p["kind"]: p for p in art.pins if p["kind"] in ("loop", "layout")}
    assert recs["loop"]["status"] == "not applicable" and "no loop of add_kernel" in recs["loop"]["detail"]
    assert recs["layout"]["status"] == "not applicable" and "no layout #blocked1" in recs["layout"]["detail"]
    r = irscope("dump", str(VECTOR_ADD), "--recipe", str(path), "-s", ADD4, "-o", str(tmp_path / "out"))
    assert r.code == 0, r.err
    assert "not applicable loop 33:num_stages=3  (recipe t)" in r.out
    # the same pins in a kernel section are still refused
    section = write(
        tmp_path, FIT.replace('[kernel."add_*"]', '[kernel."add_*"]\n    loops.33 = { num_stages = 3 }'), "k.toml"
    )
    ((spec, settings),) = resolve(str(VECTOR_ADD), ADD4, target=None, recipe=str(section))
    with pytest.raises(BadInput, match=r"recipe k \[kernel add_\*\] 33:num_stages=3: no loop of add_kernel"):
        compiler.compile_spec(spec, settings)


def test_a_pin_set_again_later_is_overridden_not_changed(tmp_path):
    path = write(tmp_path, FIT)
    sig = EXAMPLE_SIGS["matmul.py"] + ", 128, 128, 64, 8"
    r = irscope(
        "dump",
        str(EXAMPLES / "matmul.py"),
        "-k",
        "matmul_kernel",
        "--recipe",
        str(path),
        "--variant",
        "v",
        "-s",
        sig,
        "--pin-loop",
        "33:num_stages=2",
        "--pin-layout",
        "blocked1:sizePerThread=[1, 4]",
        "-o",
        str(tmp_path / "out"),
        "--json",
    )
    assert r.code == 0, r.err
    pins = [
        (p["kind"], p["source"], p["status"], p["detail"])
        for p in json.loads(r.out)["kernels"][0]["pins"]
        if p["kind"] in ("loop", "layout")
    ]
    assert [p[:3] for p in pins] == [
        ("loop", "recipe t", "overridden"),
        ("loop", "recipe t [variant v]", "overridden"),
        ("loop", "--pin-loop", "ok"),
        ("layout", "recipe t", "overridden"),
        ("layout", "--pin-layout", "ok"),
    ]
    assert pins[0][3] == pins[1][3] == "--pin-loop gives 33:num_stages=2, which wins"
    assert pins[3][3] == "--pin-layout gives blocked1:sizePerThread=[1, 4], which wins"


def test_option_values_are_checked_by_the_backend_at_check_time(tmp_path):
    path = tmp_path / "vals.toml"
    path.write_text(
        '[recipe]\ntarget = "h100"\npurpose = "x"\n\n[options]\nnum_warps = 3\n'
        "num_stages = 1000000000000000000000000000000\n\n[variant.v.options]\nnum_warps = 8\n"
    )
    problems = recipes.check(path)
    assert len(problems) == 2
    assert problems[0].startswith(f"{path}:6:") and "num_warps" in problems[0] and "power of 2" in problems[0]
    assert problems[1].startswith(f"{path}:7:") and "out of range" in problems[1]


def test_a_recipe_that_is_not_utf8_is_one_problem_and_listed_as_invalid(tmp_path, monkeypatch):
    (tmp_path / "latin.toml").write_bytes(b'[recipe]\ntarget = "h100"\npurpose = "caf\xe9"\n')
    problems = recipes.check(tmp_path / "latin.toml")
    assert problems == [
        (
            f"{tmp_path / 'latin.toml'}:3: not UTF-8 text (byte 39: invalid continuation byte); "
            f"a recipe is a TOML file, which is UTF-8"
        )
    ]
    monkeypatch.setenv("IRSCOPE_RECIPES", str(tmp_path))
    rows = {r[0]: r for r in recipes.summary_rows()}
    assert "not UTF-8" in rows["latin"][3] and rows["h100"][3] == ""


def test_a_block_of_more_than_1024_threads_fails_in_the_resources_stage():
    from irscope.errors import CompileFailure

    job = jobs.resolve_one(
        jobs.Request(VECTOR_ADD, (), "*fp32, *fp32, *fp32, i32:16, 1024", target="h100").with_sets(
            ("num_warps=64",), "--set"
        ),
        "a test compiles",
    )
    with pytest.raises(CompileFailure) as e:
        compiler.compile_spec(job.spec, job.settings)
    assert e.value.stage == "resources"
    assert "2048 threads per block" in e.value.reason and "allows 1024" in e.value.reason


# One specialization per example kernel the recipes name (the recipe gives the constexprs).
_P16 = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16"
_EXAMPLE_SIGNATURES = {
    "matmul_kernel": ("matmul.py", _P16 + ", i32:16, i32:1, i32:16, i32:1, i32:16, i32:1"),
    "softmax_kernel": ("softmax.py", "*fp32:16, *fp32:16, i32:16, i32:16, i32, i32"),
    "add_kernel": ("vector_add.py", "*fp32:16, *fp32:16, *fp32:16, i32:16"),
    "gluon_add_kernel": ("gluon_add.py", "*fp32:16, *fp32:16, *fp32:16, i32:16"),
    "matmul_persistent": ("persistent_matmul.py", _P16),
    "matmul_persistent_ws_kernel": ("gluon_persistent_matmul.py", _P16),
    "matmul_pipelined_kernel": ("gluon_persistent_matmul.py", _P16),
    "matmul_ws_kernel": (
        "gluon_ws_matmul.py",
        ("tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, i32:16, i32:16"),
    ),
}


def _shipped_variants():
    for path in sorted((ROOT / "recipes").glob("*.toml")):
        doc = tomllib.loads(path.read_text())
        touched = {name: set(body.get("kernel") or {}) for name, body in (doc.get("variant") or {}).items()}
        touched["baseline"] = touched.get("baseline", set()) | set(doc.get("kernel") or {})  # the recipe's own
        for variant, kernels in touched.items():
            for kernel in sorted(kernels & set(_EXAMPLE_SIGNATURES)):
                yield pytest.param(path.stem, variant, kernel, id=f"{path.stem}-{variant}-{kernel}")


@pytest.mark.parametrize("recipe, variant, kernel", list(_shipped_variants()))
def test_every_shipped_variant_compiles_its_examples_without_spills(recipe, variant, kernel):
    """A recipe is only as good as what it compiles: every variant, for every example kernel it names, with
    the installed Triton (tma_matmul's variants: tests/test_frontier.py)."""
    if FBTRITON and kernel == "gluon_add_kernel":
        pytest.skip(FB_GLUON_LOAD)
    if FBTRITON and recipe == "b200" and kernel == "matmul_persistent":
        pytest.skip(
            "fbtriton 3.7.4 fails Blackwell warp specialization of this loop in TTGIR ('arith.andi' op "
            "does not have expected attribute ttg.partition)"
        )
    file, sig = _EXAMPLE_SIGNATURES[kernel]
    job = jobs.resolve_one(jobs.Request(EXAMPLES / file, (kernel,), sig, recipe=recipe, variant=variant), "a test")
    # spills are ptxas' report (-v), read as a sweep reads it: without the SASS disassembly (nvdisasm)
    art = compiler.compile_spec(job.spec, job.settings, with_sass=False)
    assert art.stats["spills"] == 0
