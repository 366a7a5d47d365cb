"""Brackets of a signature: an unclosed '(' or 'tensordesc<' is said as such (not as a wrong element
count), and nesting is bounded before any parser recurses into it (ast.literal_eval, the element
grammar)."""

from __future__ import annotations

from irscope.errors import BadInput

MAX_DEPTH = 32  # brackets nested deeper than this in one signature are refused (no kernel needs 8)
_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def check_brackets(text: str, what: str = "signature") -> None:
    """BadInput for a bracket that is never closed, one closed by the wrong bracket, or nesting past
    MAX_DEPTH (a parser's recursion would fail on it); quotes are skipped."""
    stack: list[tuple[str, int]] = []
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in _PAIRS:
            stack.append((ch, i))
            if len(stack) > MAX_DEPTH:
                raise BadInput(f"{what}: brackets nested more than {MAX_DEPTH} deep (at column {i + 1})")
        elif ch in _PAIRS.values():
            if ch == ">" and text[i - 1 : i] == "-":  # '->' is no bracket
                continue
            if not stack or _PAIRS[stack[-1][0]] != ch:
                want = (
                    f"expected {_PAIRS[stack[-1][0]]!r} to close {stack[-1][0]!r} at column {stack[-1][1] + 1}"
                    if stack
                    else "nothing is open"
                )
                raise BadInput(f"{what}: {ch!r} at column {i + 1} closes no bracket ({want})")
            stack.pop()
    if quote:
        raise BadInput(f"{what}: a {quote} quote is never closed")
    if stack:
        ch, i = stack[-1]
        start = text.rfind(",", 0, i) + 1
        raise BadInput(
            f"{what}: {ch!r} at column {i + 1} is never closed (in {text[start : i + 1].strip() + '...'!r}); "
            f"close it with {_PAIRS[ch]!r}"
        )
