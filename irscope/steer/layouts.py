"""The TTGIR layout rewrite: layout pins replace or edit the layout a TTGIR alias names.

A pin names an alias of the module (#blocked, #mma, ...); its new layout must obey the rules
checked here before the MLIR parser/verifier sees it (check_layout_rules: same kind of layout,
ranks, powers of two, warp size, num_warps, order; NVIDIA MMA shapes), so the user reads what is
wrong in plain words. The later stages then compile from the edited TTGIR; the contiguity hints
derived from the old layouts are dropped, since the lowering would trust them.
"""

from __future__ import annotations

import math
import re

from irscope.errors import BadInput, did_you_mean
from irscope.steer.mlir import (
    Layout,
    layout_aliases,
    module_int_attr,
    parse_layout,
    tensor_ranks,
)
from irscope.steer.pins import LayoutPin

_LIST_FIELDS = ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order")


def apply_layout_pins(ttgir: str, pins: list[LayoutPin], warp_size: int) -> tuple[str, list[dict]]:
    """Replace or edit the pinned aliases' layouts; checks the rules (the parser check is the caller's).

    Each record is {"pin", "alias", "before", "after"} (layout texts), or {"pin", "alias", "skipped"}
    for an optional pin that does not fit; a pin that is not optional and does not fit is BadInput.
    """
    aliases = layout_aliases(ttgir)
    current = dict(aliases)
    done = []
    for pin in pins:
        misfit = _layout_misfit(pin, current)
        if misfit and pin.optional:
            done.append({"pin": pin, "alias": pin.alias, "skipped": misfit})
            continue
        if misfit:
            raise BadInput(f"{pin.source} {pin.text()}: {misfit}")
        old = parse_layout(current[pin.alias])
        if pin.value is not None:
            new = parse_layout(pin.value)
            if new is None:
                raise BadInput(f"{pin.source} {pin.text()}: not a layout attribute")
        else:
            if old is None:
                raise BadInput(
                    f"{pin.source} {pin.text()}: #{pin.alias}'s layout cannot be edited field by field; "
                    f"give the whole layout"
                )
            new = Layout(old.dialect, old.kind, dict(old.fields), old.braced)
            new.fields.update(pin.fields)
        if old is not None:
            try:
                check_layout_rules(pin.alias, old, new, ttgir, warp_size)
            except BadInput as e:
                raise BadInput(f"{pin.source} {pin.text()}: illegal layout: {e}") from None
        text = new.text() if pin.value is None else pin.value
        before, current[pin.alias] = current[pin.alias], text
        done.append({"pin": pin, "alias": pin.alias, "before": before, "after": text})
    out = ttgir
    for alias, text in current.items():
        if text != aliases[alias]:
            line = f"#{alias} = {text}"  # a function as the replacement: the text's backslashes stay as written
            out = re.sub(r"^#" + re.escape(alias) + r" = .*$", lambda _m: line, out, count=1, flags=re.M)  # noqa: B023
    if out != ttgir:
        out = drop_layout_hints(out)
    return out, done


def _layout_misfit(pin: LayoutPin, current: dict[str, str]) -> str | None:
    """Why the pin does not fit this kernel's TTGIR (no such alias, or no such field), else None."""
    if pin.alias not in current:
        return (
            f"the TTGIR has no layout #{pin.alias}{did_you_mean(pin.alias, current)}; its layouts: "
            f"{', '.join('#' + a for a in current) or 'none'}"
        )
    if pin.value is not None:
        return None
    old = parse_layout(current[pin.alias])
    if old is None or not old.fields:
        return f"#{pin.alias} = {current[pin.alias]} has no fields to edit; replace it whole with {pin.alias}=#..."
    for k, _ in pin.fields:
        if k not in old.fields:
            return (
                f"#{pin.alias} ({old.kind}) has no field {k!r}{did_you_mean(k, old.fields)}; "
                f"its fields: {', '.join(old.fields)}"
            )
    return None


def check_layout_rules(alias: str, old: Layout, new: Layout, ttgir: str, warp_size: int) -> None:
    """The rules a layout must obey, checked before the MLIR parser sees it (plain words, exit 2)."""
    name = f"#{alias}"
    if old.shared != new.shared:
        what = "a shared-memory layout" if old.shared else "a register (distributed) layout"
        raise BadInput(f"{name} is {what}; it cannot become #{new.dialect}.{new.kind}")
    num_warps = module_int_attr(ttgir, "ttg.num-warps")
    warp_size = module_int_attr(ttgir, "ttg.threads-per-warp") or warp_size
    lists = {k: new.value(k) for k in _LIST_FIELDS if isinstance(new.value(k), list)}
    for k in _LIST_FIELDS + ("instrShape",):
        v = new.value(k)
        if k in new.fields and not (isinstance(v, list) and all(isinstance(x, int) for x in v)):
            raise BadInput(f"{k} must be a list of integers, e.g. [1, 8]; got {new.fields[k]}")
    if len({len(v) for v in lists.values()}) > 1:
        got = ", ".join(f"{k} has {len(v)}" for k, v in lists.items())
        raise BadInput(f"{', '.join(lists)} must all have the same rank ({got})")
    rank = len(next(iter(lists.values()))) if lists else None
    old_rank = next((len(old.value(k)) for k in _LIST_FIELDS if isinstance(old.value(k), list)), None)
    used = tensor_ranks(ttgir, alias)
    want = next(iter(used)) if len(used) == 1 else old_rank
    if rank is not None and want is not None and rank != want and not new.shared:
        raise BadInput(
            f"rank {rank} does not match the rank-{want} tensors that use {name} (give {want} entries per field)"
        )
    for k in ("sizePerThread", "threadsPerWarp", "warpsPerCTA"):
        v = lists.get(k)
        if v is not None and any(x < 1 or x & (x - 1) for x in v):
            raise BadInput(f"every entry of {k} must be a power of two (1, 2, 4, ...); got {v}")
    tpw = lists.get("threadsPerWarp")
    if tpw is not None and math.prod(tpw) != warp_size:
        raise BadInput(
            f"threadsPerWarp {tpw} multiplies to {math.prod(tpw)}, but the product "
            f"must equal the warp size, {warp_size} threads on this target"
        )
    wpc = new.value("warpsPerCTA")
    if isinstance(wpc, list) and num_warps is not None and math.prod(wpc) != num_warps:
        raise BadInput(
            f"warpsPerCTA {wpc} multiplies to {math.prod(wpc)}, but the product "
            f"must equal num_warps, {num_warps} for this compile (ttg.num-warps)"
        )
    order = lists.get("order")
    if order is not None and sorted(order) != list(range(len(order))):
        raise BadInput(
            f"order {order} must be a permutation of 0..{len(order) - 1} (each dimension once, fastest-varying first)"
        )
    _check_mma_rules(old, new)


def _check_mma_rules(old: Layout, new: Layout) -> None:
    """NVIDIA MMA layouts: what the hardware instruction fixes (Triton only asserts these, and an
    assertion in its native code aborts the process: e.g. instrShape [16, 7, 16] dies in nvidiaMmaTile).

    v2 (mma.sync, sm80+): instrShape [16, 8] ([1, 16, 8] batched). v3 (wgmma, sm90): the 4 warps of a
    warpgroup stack along M, so warpsPerCTA[0] is a multiple of 4; instrShape [M, N, K] with M = 16,
    N a power of two from 8 to 256
    (the instruction takes multiples of 8, Triton's linear layouts assert powers of two), K = 256 / the operands' bit width (8 tf32, 16 fp16/bf16, 32 fp8/i8),
    which the operands fix: K stays what the compiler chose.
    """
    if new.kind != "nvidia_mma":
        return
    major = new.value("versionMajor")
    if major not in (2, 3) and major != old.value("versionMajor"):
        raise BadInput(f"versionMajor must be 2 (mma.sync) or 3 (wgmma), not {major}")
    shape, wpc = new.value("instrShape"), new.value("warpsPerCTA")
    if major == 2 and isinstance(shape, list) and shape not in ([16, 8], [1, 16, 8]):
        raise BadInput(f"an mma.sync layout (versionMajor = 2) has instrShape [16, 8], not {shape}")
    if major == 3:
        if isinstance(wpc, list) and wpc and wpc[0] % 4:
            raise BadInput(
                f"a wgmma layout (versionMajor = 3) stacks the 4 warps of a warpgroup along M: "
                f"warpsPerCTA[0] must be a multiple of 4, not {wpc}"
            )
        if not isinstance(shape, list):
            return
        if len(shape) != 3:
            raise BadInput(f"a wgmma layout (versionMajor = 3) has instrShape [M, N, K] (3 entries), not {shape}")
        m, n, k = shape
        if m != 16:
            raise BadInput(f"a wgmma layout (versionMajor = 3) has instrShape M = 16, not {shape}")
        if not (8 <= n <= 256 and n & (n - 1) == 0):
            raise BadInput(
                f"a wgmma layout (versionMajor = 3) has instrShape N a power of two from 8 to 256 "
                f"(wgmma takes multiples of 8; Triton's layouts need powers of two), not {n} in {shape}"
            )
        old_shape = old.value("instrShape")
        old_k = (
            old_shape[2]
            if old.value("versionMajor") == 3 and isinstance(old_shape, list) and len(old_shape) == 3
            else None
        )
        if old_k is not None and k != old_k:
            raise BadInput(f"instrShape K is fixed by the operands' bit width (256 / bits): {old_k} here, not {k}")
        if old_k is None and k not in (8, 16, 32):
            raise BadInput(
                f"a wgmma layout (versionMajor = 3) has instrShape K = 256 / the operands' bit width "
                f"(8, 16 or 32), not {k}"
            )


CONTIGUITY_HINT = re.compile(r" \{contiguity = \d+ : i32\}|contiguity = \d+ : i32, |, contiguity = \d+ : i32")


def drop_layout_hints(ttgir: str) -> str:
    """Remove the `contiguity` hints the TTGIR passes derived from the layouts before the pin.

    Loads and async copies carry them (ttg.async_copy_global_to_local in 3.6+, amdg.buffer_load in
    3.9) and the lowering trusts them: a layout pinned to fewer elements per thread would still be
    lowered to the old vector width, reading elements the new layout does not give the thread (seen
    on gfx942 with 3.9: buffer_load_dwordx4 under sizePerThread = [1]). Without the hint the lowering
    recomputes contiguity from the IR, which gives the same code where nothing was pinned (checked:
    the matmul's cp.async sizes and counts on sm80, 3.6 and 3.9).
    """
    return CONTIGUITY_HINT.sub("", ttgir)
