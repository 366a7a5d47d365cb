"""Recipes: TOML files that name a target and pin options, env knobs, constexprs, loops and layouts.

A recipe is data, never executed: TOML read by tomllib; Gluon layouts in it go
through spec.parse_value, which only builds layout classes from literals. The
format is documented in recipes/README.md. In short:

    [recipe]            target = "h100", purpose = "...", targets = [...] (others it fits)
    [options] [env] [constexprs] [layouts] [loops]          defaults, for every kernel
    [kernel."GLOB"]     the same five tables, for kernels whose name matches GLOB
    [variant.NAME]      purpose + the same five tables + its own [variant.NAME.kernel."GLOB"]

`apply()` layers one recipe (and variant) and the command line onto Settings for
one kernel; everything that compiles (dump, passes, and later diff/bench/sweep)
goes through it. Precedence, lowest first:

    Triton defaults (or a spec file's options) < recipe defaults < recipe kernel
    section(s) < variant defaults < variant kernel section(s) < --set / --pin-*

Settings.sources says where each option (and "env:NAME" knob) came from; pins
carry their own source.
"""

from __future__ import annotations

import fnmatch
import os
import re
import typing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from irscope.core.settings import Settings, parse_bool, settable_options
from irscope.core.targets import Target, parse_target
from irscope.errors import BadInput, did_you_mean
from irscope.steer import pins as pins_mod
from irscope.steer.pins import ConstPin, LayoutPin, LoopPin, Pins

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

SECTIONS = ("options", "env", "constexprs", "layouts", "loops")
TOP_KEYS = ("recipe",) + SECTIONS + ("kernel", "variant")
RECIPE_KEYS = ("target", "purpose", "targets")
VARIANT_KEYS = ("purpose",) + SECTIONS + ("kernel",)
REPO_RECIPES = Path(__file__).resolve().parents[2] / "recipes"


def recipe_dirs() -> list[Path]:
    """$IRSCOPE_RECIPES (os.pathsep-separated folders) first, then the recipes/ folder shipped with irscope."""
    dirs = [Path(p) for p in os.environ.get("IRSCOPE_RECIPES", "").split(os.pathsep) if p]
    return dirs + [REPO_RECIPES]


# ------------------------------------------------------------------ the model


@dataclass
class Layer:
    """One table of a recipe: defaults, a kernel section, a variant, or a variant's kernel section."""

    source: str                      # shown in the summary: 'recipe h100 [variant deep, kernel matmul_kernel]'
    kernel_specific: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    constexprs: dict[str, str] = field(default_factory=dict)   # name -> text spec.parse_value reads
    layouts: list[LayoutPin] = field(default_factory=list)
    loops: list[LoopPin] = field(default_factory=list)


@dataclass
class Variant:
    name: str
    purpose: str
    layer: Layer
    kernels: list[tuple[str, Layer]]


@dataclass
class Recipe:
    name: str
    path: Path
    target: Target
    target_text: str
    targets: list[Target]
    purpose: str
    defaults: Layer
    kernels: list[tuple[str, Layer]]
    variants: dict[str, Variant]

    def accepts(self, target: Target) -> bool:
        return any(t.name == target.name for t in self.targets)

    def layers(self, kernel: str | None, variant: str | None) -> list[Layer]:
        """The layers that apply to `kernel`, lowest precedence first (kernel None: the default tables only)."""
        out = [self.defaults] + [layer for glob, layer in self.kernels
                                 if kernel is not None and fnmatch.fnmatchcase(kernel, glob)]
        if variant is not None:
            v = self.variant(variant)
            out += [v.layer] + [layer for glob, layer in v.kernels
                                if kernel is not None and fnmatch.fnmatchcase(kernel, glob)]
        return out

    def variant(self, name: str) -> Variant:
        if name not in self.variants:
            have = ", ".join(self.variants) or "none"
            starts = [v for v in self.variants if v.startswith(name)]
            hint = did_you_mean(name, self.variants) or (
                " (did you mean " + " or ".join(repr(v) for v in starts) + "?)" if starts else "")
            raise BadInput(f"recipe {self.name} has no variant {name!r}{hint}; variants: {have}")
        return self.variants[name]

    def describe(self, variant: str | None) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "variant": variant, "target": self.target.name}


# ------------------------------------------------------------------ finding recipes


def find(name_or_path: str) -> Path:
    """A recipe by name (a .toml under recipe_dirs()) or by path."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or os.sep in name_or_path or "/" in name_or_path:
        if not p.is_file():
            raise BadInput(f"--recipe {name_or_path}: no such file")
        return p
    for d in recipe_dirs():
        cand = d / f"{name_or_path}.toml"
        if cand.is_file():
            return cand
    names = available()
    raise BadInput(f"--recipe {name_or_path}: no such recipe{did_you_mean(name_or_path, names)}; "
                   f"recipes: {', '.join(names) or 'none'} (or give a path to a .toml file)")


def available() -> list[str]:
    seen: dict[str, Path] = {}
    for d in recipe_dirs():
        for f in sorted(d.glob("*.toml")) if d.is_dir() else []:
            seen.setdefault(f.stem, f)
    return sorted(seen)


def all_paths() -> list[Path]:
    seen: dict[str, Path] = {}
    for d in recipe_dirs():
        for f in sorted(d.glob("*.toml")) if d.is_dir() else []:
            seen.setdefault(f.stem, f)
    return [seen[k] for k in sorted(seen)]


# ------------------------------------------------------------------ line numbers (tomllib has none)


_KEY_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+))\s*')


def _key_path(text: str) -> tuple[list[str], str] | None:
    """'a."b.c".d = 1' -> (['a', 'b.c', 'd'], ' = 1'); None when the text starts with no key."""
    parts, pos = [], 0
    while True:
        m = _KEY_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return None
        parts.append(next(g for g in m.groups() if g is not None))
        pos = m.end()
        if pos < len(text) and text[pos] == ".":
            pos += 1
            continue
        return parts, text[pos:]


class KeyLines:
    """Which line of a TOML text defines a key path, found from table headers + keys."""

    def __init__(self, text: str):
        self.defs: list[tuple[tuple[str, ...], int, str]] = []   # (full path, line, rest of the line)
        header: list[str] = []
        in_multi = None
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if in_multi:
                if in_multi in line:
                    in_multi = None
                continue
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                inner = line.lstrip("[")
                kp = _key_path(inner)
                if kp:
                    header = kp[0]
                    self.defs.append((tuple(header), n, ""))
                continue
            kp = _key_path(line)
            if kp and kp[1].lstrip().startswith("="):
                rest = kp[1].lstrip()[1:]
                self.defs.append((tuple(header + kp[0]), n, rest))
                for q in ('"""', "'''"):
                    if rest.count(q) == 1:
                        in_multi = q

    def line(self, path: tuple[str, ...]) -> int:
        """The line defining `path`, else the line of its longest defined prefix, else 1."""
        best, best_len = 1, -1
        for p, n, rest in self.defs:
            if p == path:
                return n
            if path[:len(p)] == p and len(p) > best_len:
                # an inline table may hold the rest: { num_warps = 4 }
                tail = path[len(p):]
                if tail and re.search(r"(?:^|[{,\s])" + r"\s*\.?\s*".join(re.escape(k) for k in tail) + r"\s*=",
                                      rest):
                    return n
                best, best_len = n, len(p)
        return best


# ------------------------------------------------------------------ loading and validation


class _Checker:
    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = KeyLines(text)
        self.errors: list[str] = []

    def error(self, keys: tuple[str, ...], message: str) -> None:
        where = "[" + ".".join(_quote(k) for k in keys[:-1]) + "] " if len(keys) > 1 else ""
        key = keys[-1] if keys else ""
        self.errors.append(f"{self.path}:{self.lines.line(keys)}: {where}{key}: {message}" if key
                           else f"{self.path}:{self.lines.line(keys)}: {message}")

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
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else f'"{k}"'


def _tname(v: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "a table"}.get(type(v), type(v).__name__)


def load(path: Path | str) -> Recipe:
    """Read and validate a recipe; BadInput with file:line for the first problem (all of them: check())."""
    recipe, errors = _load(Path(path))
    if errors:
        more = f" (and {len(errors) - 1} more; irscope recipes check {path})" if len(errors) > 1 else ""
        raise BadInput(errors[0] + more)
    return recipe


def check(path: Path | str) -> list[str]:
    """Every problem in a recipe file, each 'FILE:LINE: [table] key: what is wrong; valid: ...'."""
    return _load(Path(path))[1]


def _load(path: Path) -> tuple[Recipe | None, list[str]]:
    try:
        text = path.read_text()
    except OSError as e:
        return None, [f"{path}: cannot read: {e.strerror or e}"]
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        return None, [f"{path}:{m.group(1) if m else 1}: not valid TOML: {e}"]
    c = _Checker(path, text)
    c.keys_in(doc, (), TOP_KEYS)
    meta = c.table(doc.get("recipe", {}), ("recipe",)) or {}
    if "recipe" not in doc:
        c.error(("recipe",), "missing: every recipe starts with a [recipe] table naming its target and purpose")
    c.keys_in(meta, ("recipe",), RECIPE_KEYS)
    target = None
    target_text = meta.get("target")
    if target_text is None and "recipe" in doc:
        c.error(("recipe", "target"), "missing: the target this recipe is for, e.g. target = \"h100\"")
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
            c.error(("recipe", "targets"), f"{t!r} is a {tt.backend} target but the recipe's target is "
                                           f"{target.backend}; a recipe holds one backend's options")
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
        c.error(keys, f"expected a target name (e.g. \"h100\", \"cuda:90\", \"gfx942\"), got {_tname(text)}")
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


def _layer(c: _Checker, body: dict, keys: tuple[str, ...], source: str, target: Target,
           kernel_specific: bool) -> Layer:
    layer = Layer(source, kernel_specific)
    valid_options = settable_options(target)
    opts = c.table(body.get("options", {}), keys + ("options",)) or {}
    for k, v in opts.items():
        kk = keys + ("options", k)
        if k not in valid_options:
            from irscope.core import adapter

            c.error(kk, f"not an option of Triton {adapter.triton_version()}'s {target.backend} backend"
                        f"{did_you_mean(k, valid_options)}; valid: {', '.join(sorted(valid_options))}")
            continue
        problem = _type_problem(v, valid_options[k].type)
        if problem:
            c.error(kk, problem)
            continue
        layer.options[k] = tuple(v) if isinstance(v, list) else v
    env = c.table(body.get("env", {}), keys + ("env",)) or {}
    if env:
        from irscope.core import adapter

        knobs = adapter.recipe_env_knobs(target.backend)
        for k, v in env.items():
            kk = keys + ("env", k)
            if k not in knobs:
                c.error(kk, f"not a compile knob of Triton {adapter.triton_version()} for {target.backend}"
                            f"{did_you_mean(k, knobs)}; valid: {', '.join(sorted(knobs))}")
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
            name = pins_mod._alias_name(alias, "layouts", alias)
            if isinstance(v, str):
                layer.layouts.append(LayoutPin(name, pins_mod.layout_value(v, "value"), (), source,
                                               optional=not kernel_specific))
            elif isinstance(v, dict) and v:
                fields_ = []
                for f, fv in v.items():
                    try:
                        fields_.append(pins_mod.layout_field(f, fv, "field"))
                    except BadInput as e:
                        c.error(kk + (f,), str(e).removeprefix("field: "))
                layer.layouts.append(LayoutPin(name, None, tuple(fields_), source, optional=not kernel_specific))
            else:
                c.error(kk, "expected a layout string (\"#ttg.blocked<{...}>\") or a table of fields "
                            "(sizePerThread = [1], ...)")
        except BadInput as e:
            c.error(kk, str(e).removeprefix("value: "))
    loops = c.table(body.get("loops", {}), keys + ("loops",)) or {}
    for where, v in loops.items():
        kk = keys + ("loops", where)
        try:
            file, line = pins_mod.parse_loop_where(where, "loop")
        except BadInput as e:
            c.error(kk, str(e).split(": ", 2)[-1])
            continue
        v = c.table(v, kk)
        if v is None:
            continue
        attrs = []
        for a, av in v.items():
            try:
                attrs.append((a, pins_mod.loop_attr_value(a, av, "attr")))
            except BadInput as e:
                c.error(kk + (a,), str(e).removeprefix("attr: "))
        layer.loops.append(LoopPin(file, line, tuple(attrs), source, optional=not kernel_specific))
    return layer


def _type_problem(value: Any, typ: Any) -> str | None:
    """None when a TOML value fits an options-class field type, else what is wrong."""
    if isinstance(typ, str):  # postponed annotations
        typ = {"int": int, "bool": bool, "str": str, "float": float}.get(typ, Any)
    origin = typing.get_origin(typ)
    args = typing.get_args(typ)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)) and args:
        problems = [_type_problem(value, a) for a in args if a is not type(None)]
        return None if any(p is None for p in problems) else problems[0]
    if typ is bool:
        return None if isinstance(value, bool) else f"expected true or false, got {_tname(value)} {value!r}"
    if typ is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else \
            f"expected an integer, got {_tname(value)} {value!r}"
    if typ is float:
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) else \
            f"expected a number, got {_tname(value)} {value!r}"
    if typ is str:
        return None if isinstance(value, str) else f"expected a string, got {_tname(value)} {value!r}"
    if origin in (tuple, typing.Tuple) or typ is tuple:
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
    from irscope.core.spec import parse_value

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
        raise BadInput("a layout table has one key, the Gluon layout class, e.g. "
                       "{ BlockedLayout = { size_per_thread = [4], threads_per_warp = [32], warps_per_cta = [4], "
                       "order = [0] } }")
    (cls, args), = table.items()
    if not re.fullmatch(r"[A-Za-z_][\w.]*Layout", cls):
        raise BadInput(f"{cls!r} is not a Gluon layout class (BlockedLayout, SliceLayout, NVMMASharedLayout, "
                       f"amd.AMDMFMALayout, ...)")
    if not isinstance(args, dict):
        raise BadInput(f"{cls}: expected a table of its arguments (size_per_thread = [4], ...)")

    def arg(v):
        if isinstance(v, dict):
            return _layout_call(v, where)
        if isinstance(v, list):
            return "[" + ", ".join(arg(x) for x in v) + "]"
        return repr(v)

    return f"gl.{cls}(" + ", ".join(f"{k}={arg(v)}" for k, v in args.items()) + ")"


# ------------------------------------------------------------------ applying a recipe


def resolve(name: str | None, variant: str | None) -> Recipe | None:
    """The recipe named on the command line (checked, its variant too), or None."""
    if variant and not name:
        raise BadInput(f"--variant {variant}: give the recipe it belongs to with --recipe")
    if not name:
        return None
    recipe = load(find(name))
    if variant:
        recipe.variant(variant)
    return recipe


def apply(settings: Settings, recipe: Recipe | None, variant: str | None, kernel: str | None, *,
          params: list[str] | None = None) -> Settings:
    """Settings for one kernel: `settings` < recipe defaults < kernel sections < variant (< the command
    line, which jobs.for_kernel lays on top).

    `params` (the kernel's parameter names) lets a recipe's constexprs be checked:
    a default for a parameter the kernel lacks is skipped, a kernel section's is an error
    (loop and layout pins are checked the same way when compiling: pins.py, `optional`).
    kernel None: the default tables (and the variant's) alone, as `recipes show --variant` lists them.
    """
    pins = Pins(loops=list(settings.pins.loops) if settings.pins else [],
                layouts=list(settings.pins.layouts) if settings.pins else [],
                constexprs=dict(settings.pins.constexprs) if settings.pins else {})
    out = settings
    if recipe is not None:
        if not recipe.accepts(settings.target):
            raise BadInput(f"recipe {recipe.name} is for {', '.join(t.name for t in recipe.targets)}, "
                           f"not {settings.target.name}")
        pins.recipe = recipe.describe(variant)
        for layer in recipe.layers(kernel, variant):
            out = out.overlay(layer.options, layer.source).overlay_env(layer.env, layer.source)
            for k, text in layer.constexprs.items():
                if params is not None and k not in params:
                    if layer.kernel_specific:
                        raise BadInput(f"{recipe.path}: {layer.source}: constexpr {k!r} is not a parameter of "
                                       f"{kernel}{did_you_mean(k, params)}; parameters: {', '.join(params)}")
                    continue
                pins.constexprs[k] = ConstPin(k, text, layer.source)
            pins.layouts.extend(layer.layouts)
            pins.loops.extend(layer.loops)
    return replace(out, pins=pins)


# ------------------------------------------------------------------ views (recipes list / show)


def summary_rows() -> list[tuple[str, str, str, str]]:
    """(name, target, purpose, problem) for every recipe found; problem is '' for a valid recipe."""
    rows = []
    for path in all_paths():
        recipe, errors = _load(path)
        if recipe is None:
            rows.append((path.stem, "?", "", errors[0] if errors else "unreadable"))
            continue
        targets = recipe.target_text + (f" (+{', '.join(t.name for t in recipe.targets[1:])})"
                                        if len(recipe.targets) > 1 else "")
        rows.append((recipe.name, f"{targets} = {recipe.target.name}" if recipe.target_text != recipe.target.name
                     else targets, recipe.purpose, errors[0] if errors else ""))
    return rows


def layer_lines(layer: Layer, over: Layer | None = None) -> list[str]:
    """One line per value; with `over` (a layer that ranks above it, e.g. a variant's defaults above the
    recipe's kernel sections), each value `over` sets again is marked overridden, as a compile reports it."""
    o = over or Layer("")

    def mark(hit: bool) -> str:
        return f"  (overridden by {o.source})" if hit else ""

    out = []
    out += [f"{k} = {v}" + mark(k in o.options) for k, v in layer.options.items()]
    out += [f"env {k} = {v}" + mark(k in o.env) for k, v in layer.env.items()]
    out += [f"constexpr {k} = {v}" + mark(k in o.constexprs) for k, v in layer.constexprs.items()]
    out += [f"loop {p.text()}" + mark(overridden_by(p, o.loops) is not None) for p in layer.loops]
    out += [f"layout {p.text()}" + mark(overridden_by(p, o.layouts) is not None) for p in layer.layouts]
    return out


def overridden_by(pin: LoopPin | LayoutPin, later: list) -> str | None:
    """The source of the last of the `later` pins that sets again what `pin` sets, else None.

    A loop pin is overridden when each of its attributes is set again at its line (or at '*'); a
    layout pin when a later one of its alias sets one of its fields (a whole layout sets every field).
    """
    if isinstance(pin, LoopPin):
        keys = {(p.where, a) for p in later for a, _ in p.attrs}
        if not all({(pin.where, a), ("*", a)} & keys for a, _ in pin.attrs):
            return None
        return next(p.source for p in reversed(later) if {a for a, _ in p.attrs} & {a for a, _ in pin.attrs}
                    and p.where in (pin.where, "*"))
    mine = {k for k, _ in pin.fields}
    return next((q.source for q in reversed(later) if q.alias == pin.alias and (
        pin.value is not None or q.value is not None or mine & {k for k, _ in q.fields})), None)
