"""Pygments lexers for the stages a terminal shows: SASS, PTX, AMDGCN, MLIR (TTIR/TTGIR) and LLVM IR.

Pygments has no SASS or MLIR lexer; its PTX lexer does not know predicates (`@%p1`) or `::` in opcodes,
its LLVM lexer misses newer keywords (`ptx_kernel`, `disjoint`), and its GAS and AMDGPU lexers mark
AMDGCN's YAML metadata (and the AMDGPU one most instructions) as errors. These are line-oriented and
small; tests/test_lexers.py runs them over real output of every stage and finds no Error token.

Token choices (rich's ansi_dark theme colours them): an instruction's opcode is Name.Function, a
register Name.Variable, a predicate Keyword, a directive Keyword.Pseudo, a label Name.Label, an
immediate Number, a SASS constant bank `c[0x0][0x28]` Name.Builtin, SASS's `/*0040*/` offset one Comment.Special, MLIR's `loc(...)` one Comment span.
`lexer(name)` gives the lexer stages.py's `lexer` column names for a stage.
"""

from __future__ import annotations

from pygments.lexer import Lexer, RegexLexer, bygroups, inherit
from pygments.lexers import get_lexer_by_name
from pygments.lexers.asm import LlvmLexer
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
)

_NUMBERS = [
    (r"0[xX][0-9a-fA-F]+", Number.Hex),
    (r"-?\d+\.\d*(?:[eE][-+]?\d+)?", Number.Float),
    (r"-?\d+", Number.Integer),
]


class SassLexer(RegexLexer):
    """NVIDIA SASS as nvdisasm prints it (`/*0040*/  @!P0 IMAD.WIDE R2, R3, 0x4, R4 ;`)."""

    name = "SASS"
    aliases = ["sass-nvidia"]
    filenames = ["*.sass"]

    register = r"(?:R\d+|RZ|UR\d+|URZ|UP\d|UPT|P\d|PT|B\d+|SB\d+|SRZ|SR_\w+)(?:\.\w+)*\b"
    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*[0-9a-fA-F]+\*/", Comment.Special),  # the instruction's offset: one span
            (r"/\*.*?\*/", Comment.Multiline),
            (r"[.\w$]+:", Name.Label),
            (r"\.[\w.]+", Keyword.Pseudo, "directive"),
            (r"@!?U?P(?:\d|T)\b", Keyword),
            (r"[{}]", Punctuation),
            (r"[A-Z][A-Z0-9_]*(?:\.\w+)*", Name.Function, "operands"),  # opcode and modifiers: HGMMA.64x128x16.F32
        ],
        "operands": [
            (r";", Punctuation, "#pop"),
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"/\*.*?\*/", Comment.Multiline),
            (r"`\([^)\n]*\)", Name.Label),  # a branch target: `(.L_x_1)
            (register, Name.Variable),
            (r"c\[0x[0-9a-fA-F]+\]\[0x[0-9a-fA-F]+\]", Name.Builtin),  # a constant bank
            (r"(?:g?desc|idesc|tmem)(?=\[)", Name.Builtin),  # descriptors, tensor memory: desc[UR4], tmem[UR8]
            (r"[-+]?(?:INF|QNAN|NAN)\b", Number.Float),
            *_NUMBERS,
            (r"[-+|!~]", Operator),
            (r"[\[\](),{}]", Punctuation),
            (r"\.?[A-Za-z_][\w.]*", Name),  # other operands and modifiers: gsb0, gdesc[UR4].tnspB
        ],
        "directive": [
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"@?\"[^\"\n]*\"", String),
            (r"@\w+", Name.Attribute),
            *_NUMBERS,
            (r"[.\w$]+", Name),
            (r"[(),+\-]", Punctuation),
        ],
    }


class PtxLexer(RegexLexer):
    """NVIDIA PTX as LLVM's NVPTX backend prints it (`@%p1 ld.global.v4.b32 { %r1, ... }, [ %rd1 + 0 ];`)."""

    name = "PTX (irscope)"
    aliases = ["ptx-irscope"]

    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*(?:.|\n)*?\*/", Comment.Multiline),
            (r"\$?[\w$.]+:(?!:)", Name.Label),
            (r"\.[\w]+", Keyword.Pseudo, "operands"),  # a directive (.reg, .param, .visible, .entry, ...)
            (r"@!?%?\w+", Keyword),  # a predicate: @%p1, @!complete (inline asm)
            (r"[{}()]", Punctuation),
            (r"[a-z][\w]*(?:\.[\w:]+)*", Name.Function, "operands"),
        ],
        "operands": [
            (r";", Punctuation, "#pop"),
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"%\w+(?:\.\w+)?", Name.Variable),  # %r1, %rd2, %tid.x
            (r"\.[\w]+", Keyword.Pseudo),  # .b32, .align, .u64 inside a declaration
            (r"\"[^\"\n]*\"", String),
            (r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}", Number.Float),  # PTX's hex floats
            *_NUMBERS,
            (r"<\d+>", Number.Integer),  # .reg .b32 %r<266>
            (r"\$?[A-Za-z_][\w$]*", Name),  # symbols, labels as operands
            (r"[-+*!|]", Operator),
            (r"[\[\](),{}<>=]", Punctuation),
        ],
    }


class AmdgcnLexer(RegexLexer):
    """AMDGCN assembly as LLVM's AMDGPU backend prints it, with its `.amdgpu_metadata` YAML."""

    name = "AMDGCN"
    aliases = ["amdgcn"]

    register = r"(?:[svat]\[\d+:\d+\]|(?:[svat]\d+|vcc(?:_lo|_hi)?|exec(?:_lo|_hi)?|scc|m0|ttmp\d+|lds_direct)\b)"
    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r";.*?$", Comment.Single),
            (r"//.*?$", Comment.Single),
            (r"^---$", Punctuation, "yaml"),
            (r"[.\w$]+:", Name.Label),
            (r"\.[\w.]+", Keyword.Pseudo, "operands"),
            (r"[a-z_][\w]*", Name.Function, "operands"),
        ],
        "operands": [
            (r"\n", Whitespace, "#pop"),
            (r";.*?$", Comment.Single),
            (r"[ \t]+", Whitespace),
            (r"\"[^\"\n]*\"", String),
            (register, Name.Variable),
            (r"\w+(?=:)", Name.Attribute),  # offset:16, offset1:8
            (r"(lgkmcnt|vmcnt|expcnt)(\()", bygroups(Name.Builtin, Punctuation)),
            *_NUMBERS,
            (r"@\w+", Name.Attribute),
            (r"[.\w$]+", Name),  # symbols, labels, modifiers (offen, glc)
            (r"[-+*|!~]", Operator),
            (r"[\[\](),:{}@]", Punctuation),
        ],
        "yaml": [
            (r"^\.\.\.$", Punctuation, "#pop"),
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r"-(?=[ \t])", Punctuation),
            (r"[.\w$-]+:", Name.Attribute),
            *_NUMBERS,
            (r"'[^'\n]*'|\"[^\"\n]*\"", String),
            (r"[\w.$-]+", Name),
            (r"[\[\],{}]", Punctuation),
        ],
    }


_QUOTED = r'"(?:\\.|[^"\\\n])*"'
_PARENS = r"\((?:[^()\"\n]|" + _QUOTED + r")*\)"
_LOC = r"loc\((?:[^()\"\n]|" + _QUOTED + r"|\((?:[^()\"\n]|" + _QUOTED + "|" + _PARENS + r")*\))*\)"


class MlirLexer(RegexLexer):
    """MLIR as Triton prints TTIR and TTGIR (`%0 = tt.load %ptr : tensor<128x!tt.ptr<f16>, #blocked> loc(#loc3)`)."""

    name = "MLIR"
    aliases = ["mlir"]
    filenames = ["*.mlir", "*.ttir", "*.ttgir"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (_LOC, Comment),  # a location, its nested parentheses and all: one comment span
            (r"loc\(", Comment, "loc"),  # one nested deeper than _LOC reads: a span per part
            (r"\"(?:\\.|[^\"\\\n])*\"", String),
            (r"%[\w$.\-]+(?:#\d+)?", Name.Variable),
            (r"@[\w$.\-]+|@\"[^\"\n]*\"", Name.Function),
            (r"\^[\w$.\-]+", Name.Label),
            (r"#[\w$.\-]+", Name.Constant),  # attribute aliases and dialect attributes: #blocked, #ttg.shared
            (r"![\w$.\-]+", Keyword.Type),  # dialect types: !tt.ptr
            (r"(?:\b|(?<=x))(?:[su]?i\d+|bf16|tf32|f\d+(?:E\d+M\d+\w*)?|index|none)\b", Keyword.Type),  # 64xf16 too
            (r"\b(?:tensor|memref|vector|tuple|complex)(?=<)", Keyword.Type),
            (r"\b[a-z_]\w*(?:\.[\w]+)+\b", Name.Builtin),  # an op or attribute of a dialect: tt.load, scf.for
            (r"\d+(?=x)", Number.Integer),  # a shape: 128x64xf16
            (r"(?<=[\d?])x", Punctuation),
            *_NUMBERS,
            (r"\b(?:true|false|unit)\b", Keyword.Constant),
            (r"[A-Za-z_][\w$]*", Keyword),  # module, attributes, public, dense, iter_args, to, step, ...
            (r"->|[=:<>{}\[\](),?*+\-]", Punctuation),
        ],
        "loc": [
            (r"\(", Comment, "#push"),
            (r"\)", Comment, "#pop"),
            (r"\"(?:\\.|[^\"\\\n])*\"", Comment),
            (r"[^()\"]+", Comment),
        ],
    }


class LlvmIrLexer(LlvmLexer):
    """LLVM IR: Pygments' lexer, with the keywords it has not learnt yet (ptx_kernel, disjoint, ...).

    In LLVM IR every bare word is a keyword or a type (values are %x or @x, metadata !x), so a word
    Pygments' list lacks is a keyword too, not an error."""

    name = "LLVM IR"
    aliases = ["llvm-ir"]

    tokens = {
        "root": [(r"[-+]?(?:inf|nan)\b", Number.Float), inherit, (r"[A-Za-z_][\w.]*", Keyword), (r"\|", Operator)]
    }


BY_NAME: dict[str, type[RegexLexer]] = {
    "sass": SassLexer,
    "ptx": PtxLexer,
    "amdgcn": AmdgcnLexer,
    "mlir": MlirLexer,
    "llvm": LlvmIrLexer,
}


def lexer(name: str) -> Lexer:
    """The lexer named in stages.py's `lexer` column: one of these, else Pygments' own (python)."""
    cls = BY_NAME.get(name)
    return cls() if cls else get_lexer_by_name(name)
