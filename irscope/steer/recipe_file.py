"""A recipe file read and validated into the model, every problem as 'FILE:LINE: [table] key: what'.

A recipe is data, never executed: TOML read by tomllib; Gluon layouts in it go through
spec.parse_value, which only builds layout classes from literals. The format is documented in
recipes/README.md. In short:

    [recipe]            target = "h100", purpose = "...", targets = [...] (others it fits)
    [options] [env] [constexprs] [layouts] [loops]          defaults, for every kernel
    [kernel."GLOB"]     the same five tables, for kernels whose name matches GLOB
    [variant.NAME]      purpose + the same five tables + its own [variant.NAME.kernel."GLOB"]

Options are checked against the target's backend in the installed Triton, env knobs against the
knobs it reads, pins against their syntax (pins.py); unknown keys get a did-you-mean and the list
of valid ones. read() gathers every problem (`irscope recipes check` lists them all).
"""

from __future__ import annotations

import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

from irscope import adapter
from irscope.errors import BadInput, did_you_mean
from irscope.kernel.settings import parse_bool, settable_options
from irscope.kernel.spec import parse_value
from irscope.kernel.targets import Target, parse_target
from irscope.steer.pins import (
    LayoutPin,
    LoopPin,
    alias_name,
    layout_field,
    layout_value,
    loop_attr_value,
    parse_loop_where,
    parse_pin_partition,
)
from irscope.steer.recipe_model import Layer, Recipe, Variant
from irscope.steer.toml_lines import KeyLines

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

SECTIONS = ("options", "env", "constexprs", "layouts", "loops", "partitions")
TOP_KEYS = ("recipe",) + SECTIONS + ("kernel", "variant")
RECIPE_KEYS = ("target", "purpose", "targets")
VARIANT_KEYS = ("purpose",) + SECTIONS + ("kernel",)


class _Checker:
    """The problems found so far, each placed at the line of its key."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = KeyLines(text)
        self.errors: list[str] = []

    def error(self, keys: tuple[str, ...], message: str) -> None:
        where = "[" + ".".join(_quote(k) for k in keys[:-1]) + "] " if len(keys) > 1 else ""
        key = _quote(keys[-1]) if keys else ""
        self.errors.append(
            f"{self.path}:{self.lines.line(keys)}: {where}{key}: {message}"
            if key
            else f"{self.path}:{self.lines.line(keys)}: {message}"
        )

    def table(self, value: Any, keys: tuple[str, ...]) -> dict | None:
        if not isinstance(value, dict):
            self.error(keys, f"expected a table, got {_tname(value)} {value!r}")
            return None
        return value

    def keys_in(self, table: dict, keys: tuple[str, ...], valid: tuple[str, ...]) -> None:
        for k in table:
            if k not in valid:
                self.error(keys + (k,), f"unknown key{did_you_mean(k, valid)}; valid here: {', '.join(valid)}")


def _quote(k: str) -> str:
    """A TOML key as the file spells it, on one line (a key holding a newline or a quote comes escaped)."""
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _tname(v: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(v), type(v).__name__)


def read(path: Path) -> tuple[Recipe | None, list[str]]:  # noqa: C901, PLR0915
    """The recipe (None when it cannot be built) and every problem in the file ([] for a valid one)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        return None, [f"{path}: cannot read: {e.strerror or e}"]
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        return None, [
            f"{path}:{line}: not UTF-8 text (byte {e.start}: {e.reason}); a recipe is a TOML file, which is UTF-8"
        ]
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        return None, [f"{path}:{m.group(1) if m else 1}: not valid TOML: {e}"]
    except RecursionError:
        return None, [f"{path}: not valid TOML: nested too deeply"]
    c = _Checker(path, text)
    c.keys_in(doc, (), TOP_KEYS)
    meta = c.table(doc.get("recipe", {}), ("recipe",)) or {}
    if "recipe" not in doc:
        c.error(("recipe",), "missing: every recipe starts with a [recipe] table naming its target and purpose")
    c.keys_in(meta, ("recipe",), RECIPE_KEYS)
    target = None
    target_text = meta.get("target")
    if target_text is None and "recipe" in doc:
        c.error(("recipe", "target"), 'missing: the target this recipe is for, e.g. target = "h100"')
    elif target_text is not None:
        target = _target(c, target_text, ("recipe", "target"))
    targets = [target] if target else []
    extra = meta.get("targets", [])
    if not isinstance(extra, list):
        c.error(("recipe", "targets"), f"expected an array of target names, got {_tname(extra)}")
        extra = []
    for t in extra:
        tt = _target(c, t, ("recipe", "targets"))
        if tt and target and tt.backend != target.backend:
            c.error(
                ("recipe", "targets"),
                f"{t!r} is a {tt.backend} target but the recipe's target is "
                f"{target.backend}; a recipe holds one backend's options",
            )
        elif tt and all(tt.name != x.name for x in targets):
            targets.append(tt)
    purpose = meta.get("purpose", "")
    if not isinstance(purpose, str) or not purpose.strip():
        c.error(("recipe", "purpose"), "missing or empty: one line saying what the recipe is for")
        purpose = str(purpose or "")
    name = path.stem
    if target is None:
        return None, c.errors

    defaults = _layer(c, doc, (), f"recipe {name}", target, kernel_specific=False)
    kernels = _kernel_sections(c, doc.get("kernel", {}), ("kernel",), f"recipe {name}", target)
    variants: dict[str, Variant] = {}
    vtable = c.table(doc.get("variant", {}), ("variant",)) or {}
    for vname, vbody in vtable.items():
        keys = ("variant", vname)
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", vname):
            c.error(keys, "a variant name is letters, digits, '-', '_' or '.'")
        vbody = c.table(vbody, keys)
        if vbody is None:
            continue
        c.keys_in(vbody, keys, VARIANT_KEYS)
        vpurpose = vbody.get("purpose", "")
        if not isinstance(vpurpose, str):
            c.error(keys + ("purpose",), f"expected a string, got {_tname(vpurpose)}")
            vpurpose = ""
        src = f"recipe {name} [variant {vname}]"
        layer = _layer(c, vbody, keys, src, target, kernel_specific=False)
        vkernels = _kernel_sections(c, vbody.get("kernel", {}), keys + ("kernel",), src[:-1], target, variant=True)
        variants[vname] = Variant(vname, vpurpose, layer, vkernels)
    recipe = Recipe(name, path, target, str(target_text), targets, purpose.strip(), defaults, kernels, variants)
    return recipe, c.errors


def _target(c: _Checker, text: Any, keys: tuple[str, ...]) -> Target | None:
    if not isinstance(text, str):
        c.error(keys, f'expected a target name (e.g. "h100", "cuda:90", "gfx942"), got {_tname(text)}')
        return None
    try:
        return parse_target(text)
    except BadInput as e:
        c.error(keys, str(e))
        return None


def _kernel_sections(c, table, keys, source_prefix, target, variant=False) -> list[tuple[str, Layer]]:
    table = c.table(table, keys) or {}
    out = []
    for glob, body in table.items():
        k = keys + (glob,)
        body = c.table(body, k)
        if body is None:
            continue
        c.keys_in(body, k, SECTIONS)
        src = f"{source_prefix}, kernel {glob}]" if variant else f"{source_prefix} [kernel {glob}]"
        out.append((glob, _layer(c, body, k, src, target, kernel_specific=True)))
    return out


def _layer(  # noqa: C901, PLR0915
    c: _Checker,
    body: dict,
    keys: tuple[str, ...],
    source: str,
    target: Target,
    kernel_specific: bool,
) -> Layer:
    layer = Layer(source, kernel_specific)
    valid_options = settable_options(target)
    opts = c.table(body.get("options", {}), keys + ("options",)) or {}
    for k, v in opts.items():
        kk = keys + ("options", k)
        if k not in valid_options:
            c.error(
                kk,
                f"not an option of Triton {adapter.triton_version()}'s {target.backend} backend"
                f"{did_you_mean(k, valid_options)}; valid: {', '.join(sorted(valid_options))}",
            )
            continue
        problem = _type_problem(v, valid_options[k].type) or _value_problem(k, v, target)
        if problem:
            c.error(kk, problem)
            continue
        layer.options[k] = tuple(v) if isinstance(v, list) else v
    env = c.table(body.get("env", {}), keys + ("env",)) or {}
    if env:
        knobs = adapter.recipe_env_knobs(target.backend)
        for k, v in env.items():
            kk = keys + ("env", k)
            if k not in knobs:
                c.error(
                    kk,
                    f"not a compile knob of Triton {adapter.triton_version()} for {target.backend}"
                    f"{did_you_mean(k, knobs)}; valid: {', '.join(sorted(knobs))}",
                )
                continue
            text = _env_text(v, knobs[k])
            if text is None:
                want = "true/false (or 1/0)" if knobs[k] == "bool" else "a string"
                c.error(kk, f"expected {want}, got {_tname(v)} {v!r}")
                continue
            layer.env[k] = text
    consts = c.table(body.get("constexprs", {}), keys + ("constexprs",)) or {}
    for k, v in consts.items():
        kk = keys + ("constexprs", k)
        if not k.isidentifier():
            c.error(kk, "a constexpr is named by its parameter name")
            continue
        try:
            layer.constexprs[k] = constexpr_text(v, f"{kk[-1]}")
        except BadInput as e:
            c.error(kk, str(e))
    lays = c.table(body.get("layouts", {}), keys + ("layouts",)) or {}
    for alias, v in lays.items():
        kk = keys + ("layouts", alias)
        try:
            name = alias_name(alias, "layouts", alias)
            if isinstance(v, str):
                layer.layouts.append(
                    LayoutPin(name, layout_value(v, "value"), (), source, optional=not kernel_specific)
                )
            elif isinstance(v, dict) and v:
                fields_ = []
                for f, fv in v.items():
                    try:
                        fields_.append(layout_field(f, fv, "field"))
                    except BadInput as e:
                        c.error(kk + (f,), str(e).removeprefix("field: "))
                layer.layouts.append(LayoutPin(name, None, tuple(fields_), source, optional=not kernel_specific))
            else:
                c.error(
                    kk,
                    'expected a layout string ("#ttg.blocked<{...}>") or a table of fields (sizePerThread = [1], ...)',
                )
        except BadInput as e:
            c.error(kk, str(e).removeprefix("value: "))
    loops = c.table(body.get("loops", {}), keys + ("loops",)) or {}
    for where, v in loops.items():
        kk = keys + ("loops", where)
        try:
            file, line = parse_loop_where(where, "loop")
        except BadInput as e:
            c.error(kk, str(e).split(": ", 2)[-1])
            continue
        v = c.table(v, kk)
        if v is None:
            continue
        attrs = []
        for a, av in v.items():
            try:
                attrs.append((a, loop_attr_value(a, av, "attr")))
            except BadInput as e:
                c.error(kk + (a,), str(e).removeprefix("attr: "))
        layer.loops.append(LoopPin(file, line, tuple(attrs), source, optional=not kernel_specific))
    parts = c.table(body.get("partitions", {}), keys + ("partitions",)) or {}
    for name, v in parts.items():
        kk = keys + ("partitions", name)
        if not kernel_specific:
            c.error(
                kk,
                "a partition's registers belong in a kernel section ([kernel.NAME.partitions]): "
                "kernels without warp specialization have none",
            )
            continue
        v = c.table(v, kk)
        if v is None:
            continue
        if set(v) != {"registers"}:
            c.error(kk, "expected { registers = R } (e.g. worker0 = { registers = 48 })")
            continue
        regs = v["registers"]
        if not isinstance(regs, int) or isinstance(regs, bool):
            c.error(
                kk + ("registers",),
                f"expected an integer (a multiple of 8 from 24 to 256, e.g. registers = 48), "
                f"got {_tname(regs)} {regs!r}",
            )
            continue
        if not re.fullmatch(r"(?:worker)?\d+", name):
            c.error(
                kk,
                "a partition is named workerN (worker0 is the first worker partition), e.g. "
                "worker0 = { registers = 48 }",
            )
            continue
        try:
            layer.partitions.append(parse_pin_partition(f"{name}:registers={regs}", source))
        except BadInput as e:
            c.error(kk, str(e).split(": ", 1)[-1])
    return layer


MAX_OPTION_INT = 2**31 - 1  # every integer option is a C int in the compiler


def _value_problem(key: str, value: Any, target: Target) -> str | None:
    """What the backend's own parse_options says of this value (num_warps 3: not a power of two), or a
    bound on integers (num_stages = 10**30), else None: checked here, not first at dump time."""
    items = value if isinstance(value, list) else [value]
    for x in items:
        if isinstance(x, int) and not isinstance(x, bool) and not -MAX_OPTION_INT <= x <= MAX_OPTION_INT:
            return f"{x} is out of range; an integer option lies within +-{MAX_OPTION_INT} (2**31 - 1)"
    try:
        adapter.make_backend(target).parse_options({key: tuple(value) if isinstance(value, list) else value})
    except Exception as e:  # AssertionError('num_warps must be a power of 2'), ValueError, ...
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return f"{value!r} is refused by Triton {adapter.triton_version()}'s {target.backend} backend: {why}"
    return None


def _type_problem(value: Any, typ: Any) -> str | None:
    """None when a TOML value fits an options-class field type, else what is wrong."""
    if isinstance(typ, str):  # postponed annotations
        typ = {"int": int, "bool": bool, "str": str, "float": float}.get(typ, Any)
    origin = typing.get_origin(typ)
    args = typing.get_args(typ)
    if origin in (typing.Union, getattr(types, "UnionType", None)) and args:
        problems = [_type_problem(value, a) for a in args if a is not type(None)]
        return None if any(p is None for p in problems) else problems[0]
    if typ is bool:
        return None if isinstance(value, bool) else f"expected true or false, got {_tname(value)} {value!r}"
    if typ is int:
        return (
            None
            if isinstance(value, int) and not isinstance(value, bool)
            else f"expected an integer, got {_tname(value)} {value!r}"
        )
    if typ is float:
        return (
            None
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else f"expected a number, got {_tname(value)} {value!r}"
        )
    if typ is str:
        return None if isinstance(value, str) else f"expected a string, got {_tname(value)} {value!r}"
    if origin in (tuple, tuple) or typ is tuple:
        return None if isinstance(value, list) else f"expected an array, got {_tname(value)} {value!r}"
    if typ is dict or origin is dict:
        return None if isinstance(value, dict) else f"expected a table, got {_tname(value)} {value!r}"
    return None


def _env_text(value: Any, kind: str) -> str | None:
    if kind == "bool":
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, int) and value in (0, 1):
            return str(value)
        if isinstance(value, str) and parse_bool(value) is not None:
            return "1" if parse_bool(value) else "0"
        return None
    if kind == "int":
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else None
    return value if isinstance(value, str) else None


def constexpr_text(value: Any, where: str) -> str:
    """A TOML constexpr value as text spec.parse_value reads: 128, true, "tl.float16",
    "gl.BlockedLayout([4], [64], [4], [0])", or a layout table { BlockedLayout = { size_per_thread = [4], ... } }.
    Checked by parsing it now (data only: layout classes from literals, nothing executed).
    """
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    elif isinstance(value, dict):
        text = _layout_call(value, where)
    else:
        raise BadInput(f"expected a number, boolean, string or layout table, got {_tname(value)}")
    try:
        parse_value(text, where)
    except BadInput as e:
        raise BadInput(str(e).removeprefix("signature ")) from None
    return text


def _layout_call(table: dict, where: str) -> str:
    """{ BlockedLayout = { size_per_thread = [4], ... } } -> 'gl.BlockedLayout(size_per_thread=[4], ...)'."""
    if len(table) != 1:
        raise BadInput(
            "a layout table has one key, the Gluon layout class, e.g. "
            "{ BlockedLayout = { size_per_thread = [4], threads_per_warp = [32], warps_per_cta = [4], "
            "order = [0] } }"
        )
    ((cls, args),) = table.items()
    if not re.fullmatch(r"[A-Za-z_][\w.]*Layout", cls):
        raise BadInput(
            f"{cls!r} is not a Gluon layout class (BlockedLayout, SliceLayout, NVMMASharedLayout, "
            f"amd.AMDMFMALayout, ...)"
        )
    if not isinstance(args, dict):
        raise BadInput(f"{cls}: expected a table of its arguments (size_per_thread = [4], ...)")

    def arg(v):
        if isinstance(v, dict):
            return _layout_call(v, where)
        if isinstance(v, list):
            return "[" + ", ".join(arg(x) for x in v) + "]"
        return repr(v)

    return f"gl.{cls}(" + ", ".join(f"{k}={arg(v)}" for k, v in args.items()) + ")"
