"""The terminal's colours (irscope/views/lexers.py, views/dump.print_coloured): every stage Triton really prints for
cuda:90 and hip:gfx942 lexes without one Error token, and a SASS line's ANSI spans are what they mean: the offset
one dim comment span, the opcode, the registers, the constant bank and the immediates each coloured as such.
Also --stage's MLIR without loc(...) (views/dump.without_locs)."""

from __future__ import annotations

import io
import re
import sys

import pytest
from pygments.token import Error

from irscope import stages
from irscope.views import console, lexers
from irscope.views import dump as dump_view
from tests.helpers import EXAMPLES, MATMUL, MATMUL_SIG16, compile_example

PLAIN = ((MATMUL, MATMUL_SIG16), (EXAMPLES / "softmax.py", "*fp32, *fp32, i32, i32, i32, i32, 1024, 4"))
TMA_SIG = (
    "tensordesc<fp16[128, 64]>, tensordesc<fp16[256, 64]>, tensordesc<fp16[128, 256]>, "
    "i32:16, i32:16, i32:16, 128, 256, 64, 8, 132, False, True"
)
TMA_SETS = ("num_warps=8", "num_stages=3")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TARGETS = ("cuda:90", "hip:gfx942", "cuda:100")


@pytest.fixture(scope="module")
def outputs() -> dict[tuple[str, str, str], str]:
    """{(example, target, stage): text} of every text stage of matmul and softmax for cuda:90 and hip:gfx942,
    and of the TMA matmul for Hopper (wgmma, TMA) and Blackwell (tcgen05, tensor memory)."""
    found = {}
    compiles = [(path, sig, target, ()) for path, sig in PLAIN for target in ("cuda:90", "hip:gfx942")]
    compiles += [(EXAMPLES / "tma_matmul.py", TMA_SIG, target, TMA_SETS) for target in ("cuda:90", "cuda:100")]
    for path, sig, target, sets in compiles:
        art = compile_example(path, sig, target=target, sets=sets)
        for stage, text in art.stages.items():
            if isinstance(text, str) and stage != "source":
                found[(path.stem, target, stage)] = text
    return found


def _coloured(text: str, stage: str) -> str:
    saved, sys.stdout = sys.stdout, io.StringIO()
    console.configure(color="always")
    try:
        dump_view.print_coloured(text, stage)
        return sys.stdout.getvalue()
    finally:
        console.configure(color="auto")
        sys.stdout = saved


def test_every_stage_of_both_vendors_is_lexed(outputs):
    stages_seen = {(target, stage) for _, target, stage in outputs}
    for stage in ("ttir", "ttgir", "llir", "ptx", "sass"):
        assert ("cuda:90", stage) in stages_seen
    for stage in ("ttir", "ttgir", "llir", "amdgcn"):
        assert ("hip:gfx942", stage) in stages_seen


@pytest.mark.parametrize("target", TARGETS)
def test_no_error_token_on_any_line_of_real_output(outputs, target):
    errors = []
    for (example, tgt, stage), text in outputs.items():
        if tgt != target:
            continue
        lex = lexers.lexer(stages.column("lexer")[stage])
        at = 0
        for token, value in lex.get_tokens(text):
            if token in Error:
                line = text.count("\n", 0, at) + 1
                errors.append(f"{example} {stage}:{line}: {value!r} in {text.splitlines()[line - 1][:100]!r}")
            at += len(value)
    assert not errors, errors[:10]


def test_each_stage_has_its_own_lexer():
    lexer_of = stages.column("lexer")
    assert isinstance(lexers.lexer(lexer_of["sass"]), lexers.SassLexer)
    assert isinstance(lexers.lexer(lexer_of["ptx"]), lexers.PtxLexer)
    assert isinstance(lexers.lexer(lexer_of["amdgcn"]), lexers.AmdgcnLexer)
    assert isinstance(lexers.lexer(lexer_of["llir"]), lexers.LlvmIrLexer)
    for stage in ("frontend", "ttir", "ttgir", "glir"):
        assert isinstance(lexers.lexer(lexer_of[stage]), lexers.MlirLexer)


def _line(rendered: str, marker: str) -> str:
    return next(line for line in rendered.splitlines() if marker in line)


def test_the_ansi_spans_of_a_sass_line(outputs):
    text = outputs[("matmul", "cuda:90", "sass")]
    rendered = _coloured(text, "sass")
    assert ANSI.sub("", rendered) == text  # colour added, not a byte of the text changed (tabs, long lines)
    assert "\x1b[4;31m" not in rendered  # rich's Error style: red underlined
    line = _line(rendered, "/*0000*/")
    plain = ANSI.sub("", line).split()
    assert plain[:2] == ["/*0000*/", "LDC"], plain
    dim, green, red, cyan = "\x1b[2m{}\x1b[0m", "\x1b[92m{}\x1b[0m", "\x1b[91m{}\x1b[0m", "\x1b[96m{}\x1b[0m"
    assert dim.format("/*0000*/") in line  # the offset: one comment span, not error text
    assert green.format("LDC") in line  # the opcode
    assert red.format("R1") in line  # a register
    assert cyan.format("c[0x0][0x28]") in line  # the constant bank
    # an offset with letters in it is one span too (it was half coloured): every offset, every line
    offsets = re.findall(r"/\*[0-9a-f]{4}\*/", text)
    assert any(re.search("[a-f]", o) for o in offsets)
    for offset in offsets:
        assert dim.format(offset) in rendered, offset
    predicated = _line(rendered, "@P0")
    assert "\x1b[94m@P0\x1b[0m" in predicated  # a predicate
    assert "\x1b[94m0x1\x1b[0m" in predicated  # an immediate


def test_hopper_and_blackwell_sass(outputs):
    hopper = _coloured(outputs[("tma_matmul", "cuda:90", "sass")], "sass")
    line = _line(hopper, "HGMMA.")
    assert re.search(r"\x1b\[92mHGMMA\.64x\d+x16\.F32[\w.]*\x1b\[0m", line)  # opcode and modifiers: one span
    assert "\x1b[96mgdesc\x1b[0m" in line
    blackwell = _coloured(outputs[("tma_matmul", "cuda:100", "sass")], "sass")
    line = _line(blackwell, "UTCHMMA")
    for builtin in ("gdesc", "tmem", "idesc"):
        assert f"\x1b[96m{builtin}\x1b[0m" in line, line
    assert re.search(r"\x1b\[91mUR\d+\x1b\[0m", line)  # a uniform register


def test_the_ansi_spans_of_ptx_amdgcn_and_mlir(outputs):
    ptx = _coloured(outputs[("matmul", "cuda:90", "ptx")], "ptx")
    line = _line(ptx, "cp.async.cg")
    assert "\x1b[92mcp.async.cg.shared.global\x1b[0m" in line  # the opcode with its modifiers: one span
    assert re.search(r"\x1b\[91m%rd\d+\x1b\[0m", line) and "\x1b[94m0x10\x1b[0m" in line  # a register, a number
    amdgcn = _coloured(outputs[("matmul", "hip:gfx942", "amdgcn")], "amdgcn")
    line = _line(amdgcn, "v_mfma")
    assert re.search(r"\x1b\[92mv_mfma_\w+\x1b\[0m", line)
    assert re.search(r"\x1b\[91mv\[\d+:\d+\]\x1b\[0m", line)
    ttgir = _coloured(outputs[("matmul", "cuda:90", "ttgir")], "ttgir")
    line = _line(ttgir, "arith.constant")
    assert "\x1b[96marith.constant\x1b[0m" in line and re.search(r"\x1b\[2mloc\(#loc\d*\)\x1b\[0m", line)
    assert "\x1b[4;31m" not in ptx + amdgcn + ttgir


def test_without_locs_drops_every_location_and_nothing_else(outputs):
    text = outputs[("matmul", "cuda:90", "ttgir")]
    shown = dump_view.without_locs(text)
    assert "loc(" in text and "loc(" not in shown and "#loc" not in shown
    kept = [line for line in text.splitlines() if not re.match(r"#loc\d* = loc\(", line)]
    assert len(shown.splitlines()) == len(kept)
    for before, after in zip(kept, shown.splitlines()):
        assert after == re.sub(r" loc\((?:[^()\"]|\"[^\"]*\"|\((?:[^()]|\([^()]*\))*\))*\)", "", before)
    assert "tt.func public @matmul_kernel(%a_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %b_ptr" in shown
    assert dump_view.without_locs('#loc3 = loc("k.py":4:2)\n  tt.return loc(#loc3)\n') == "  tt.return\n"
    assert dump_view.without_locs('  %0 = x loc("a(b"(#l))\n') == "  %0 = x\n"  # a quoted parenthesis
