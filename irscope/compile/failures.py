"""A compile failure named by its stage and its reason: what Triton said, where, and what to check.

The frontend's Python errors point at the kernel file's line (CompilationError counts lines from the
def); a stage's exception keeps its type; the compiler's own diagnostics (error:, ptxas) win over a
generic exception text; a descriptor kernel's shape error names the descriptors' blocks beside the
constexprs that size the tiles.
"""

from __future__ import annotations

from irscope import adapter
from irscope.errors import CompileFailure
from irscope.kernel.spec import KernelSpec


def frontend_failure(spec: KernelSpec, e: Exception) -> CompileFailure:
    """A Python error inside the kernel: point at the file and line, say what Triton said."""
    inner: BaseException = e
    while isinstance(cause := getattr(inner, "__cause__", None), adapter.compile_error_types()):
        inner = cause
    node = getattr(inner, "node", None)
    message = getattr(inner, "error_message", None)
    cause = inner.__cause__ or getattr(inner, "__context__", None)
    if not message and cause is not None:
        message = f"{type(cause).__name__}: {cause}"
    if not message:
        message = str(inner).strip().splitlines()[-1] if str(inner).strip() else type(inner).__name__
    where = ""
    if node is not None and hasattr(node, "lineno"):
        where = f"{spec.file}:{absolute_line(spec.fn, inner, node.lineno)}: "
    return CompileFailure("source", f"{where}{message}{descriptor_hint(spec)}")


def absolute_line(fn, err, rel_line: int) -> int:
    """CompilationError line numbers count from the 'def' line of the function's source."""
    src = getattr(err, "src", None)
    start = getattr(fn, "starting_line_number", None)
    raw = getattr(fn, "raw_src", None)
    if start is None or raw is None or (src is not None and src != getattr(fn, "src", src)):
        return rel_line
    def_offset = next((i for i, line in enumerate(raw) if line.lstrip().startswith("def ")), 0)
    return start + def_offset + rel_line - 1


def descriptor_hint(spec: KernelSpec) -> str:
    """Host-side descriptors carry their block shapes in the specialization, apart from the constexprs
    that size the tiles: a variant or --const that changes BLOCK_N leaves `tensordesc<fp16[256, 64]>` as it
    was, and Triton then fails on a shape ('accumulator shape is incompatible'). Name both, so the
    mismatch is seen."""
    descs = [f"{name}: {a.text()}" for name, a in spec.args.items() if a.kind == "tensordesc"]
    if not descs:
        return ""
    sizes = [
        f"{name}={a.text()}"
        for name, a in spec.args.items()
        if a.kind == "constexpr" and name.isupper() and isinstance(a.value, int) and not isinstance(a.value, bool)
    ]
    return (
        f" (the descriptors' blocks are part of the specialization and do not follow the constexprs: "
        f"{'; '.join(descs)}" + (f", with {', '.join(sizes)}" if sizes else "") + ")"
    )


def stage_failure(spec: KernelSpec, stage: str, e: Exception) -> CompileFailure:
    text = str(e).strip() or type(e).__name__
    return CompileFailure(stage, f"{type(e).__name__}: {text}")


def with_diagnostics(reason: str, native: str) -> str:
    """Prefer the compiler's own diagnostic lines (error:/note:) over a generic exception text."""
    diags = [
        line.strip()
        for line in native.splitlines()
        if " error:" in line or line.startswith("error:") or "ptxas fatal" in line or "ptxas error" in line
    ]
    if not diags:
        return reason
    return "; ".join(dict.fromkeys(diags[:4])) + f" ({reason.splitlines()[0]})"
