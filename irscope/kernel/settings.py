"""Settings: the target plus compile options, typed and checked against the installed backend.

`--set KEY=VALUE` accepts any field of the backend's options class (CUDAOptions /
HIPOptions of the installed Triton), converts VALUE to the field's type and lets
the backend's own parse_options reject what it rejects. Fields that Triton derives
from the target (arch, backend_name) cannot be set.
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from irscope import adapter
from irscope.errors import BadInput, did_you_mean
from irscope.kernel.targets import Target

DERIVED_FIELDS = {"arch", "backend_name"}


@dataclass
class Settings:
    target: Target
    target_reason: str = "requested"
    options: dict[str, Any] = field(default_factory=dict)  # what the user set, typed
    env: dict[str, str] = field(default_factory=dict)  # Triton env knobs for this compile
    sources: dict[str, str] = field(default_factory=dict)  # option (env knob: "env:NAME") -> where it came from
    pins: Any = None  # steer.pins.Pins (a PinSet): loop/layout/constexpr pins and the recipe applied, or None

    def canonical(self) -> dict[str, Any]:
        return {
            "target": self.target.name,
            "options": _jsonable(self.options),
            "env": dict(sorted(self.env.items())),
            "pins": self.pins.canonical() if self.pins else None,
        }

    def overlay(self, values: dict[str, Any], source: str) -> Settings:
        """These options on top, each recorded as coming from `source`: the one way options are merged.

        Lists become tuples: Triton's options are hashed and compared (fbtriton's ctas_per_cga must equal
        cluster_dims), and a spec file or capture read back from JSON has lists where launches had tuples.
        """
        values = {k: _tuples(v) for k, v in values.items()}
        return replace(
            self, options={**self.options, **values}, sources={**self.sources, **{k: source for k in values}}
        )

    def overlay_env(self, values: dict[str, str], source: str) -> Settings:
        """Triton env knobs on top (recorded as 'env:NAME' in sources)."""
        return replace(
            self, env={**self.env, **values}, sources={**self.sources, **{f"env:{k}": source for k in values}}
        )


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, (list, tuple)) else v


class PinSet(Protocol):
    """What the compile pipeline needs of Settings.pins (steer.pins.Pins implements it).

    Declared here so that kernel/ and compile/ never import steer: the pins bring their own stage edits
    and the checks of the output.
    """

    def canonical(self) -> dict[str, Any]: ...

    def plan(self, spec: Any, settings: Settings) -> Any: ...


def settable_options(target: Target) -> dict[str, Any]:
    return {k: f for k, f in adapter.options_fields(target).items() if k not in DERIVED_FIELDS}


def parse_assignments(items: list[str], target: Target, source: str = "--set") -> dict[str, Any]:
    """['num_warps=8', 'maxnreg=128'] -> {'num_warps': 8, 'maxnreg': 128}, typed."""
    fields_ = settable_options(target)
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise BadInput(f"{source} {item!r}: expected KEY=VALUE, e.g. num_warps=8")
        if key not in fields_:
            raise BadInput(
                f"{source} {key}: not an option of Triton {adapter.triton_version()}'s {target.backend} backend"
                f"{did_you_mean(key, fields_)}; valid: {', '.join(sorted(fields_))}"
            )
        out[key] = convert(key, raw.strip(), fields_[key].type, source)
    return out


def check_typed(key: str, value: Any, typ: Any, source: str) -> None:
    """A value from a JSON file (a spec file's options) against the option field's declared type: BadInput
    naming the field for a list where an int belongs, a string where a bool does. Types this does not
    know (tuples, dicts, whose JSON forms vary) are left to Triton."""
    args = [a for a in typing.get_args(typ) if a is not type(None)]
    optional = type(None) in typing.get_args(typ)
    if optional and len(args) == 1:
        if value is None:
            return
        typ = args[0]
    names = {int: "an integer", bool: "true or false", str: "a string", float: "a number"}
    if typ not in names:
        return
    if typ is bool:
        ok = isinstance(value, (bool, int))  # Triton declares some int-valued options bool
    elif typ is int:
        ok = value is None or isinstance(value, int) and not isinstance(value, bool)
    elif typ is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = value is None or isinstance(value, str)
    if not ok:
        shown = json.dumps(value, default=str)
        raise BadInput(f"{source} options.{key} is {shown[:40]}, expected {names[typ]}")


TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def parse_bool(text: str) -> bool | None:
    """true/false, 1/0, yes/no, on/off (any case); None for anything else."""
    low = text.strip().lower()
    return True if low in TRUE_WORDS else False if low in FALSE_WORDS else None


def _convert_union(key: str, raw: str, args: list[Any], source: str) -> Any:
    """The first of the union's types that takes the text; else the first one's complaint."""
    errors = []
    for a in args:
        try:
            return convert(key, raw, a, source)
        except BadInput as e:
            errors.append(str(e))
    raise BadInput(errors[0])


def convert(key: str, raw: str, typ: Any, source: str = "--set") -> Any:
    """Convert text to the option field's declared type (int, bool, str, Optional, tuple)."""
    origin = typing.get_origin(typ)
    args = [a for a in typing.get_args(typ) if a is not type(None)]
    if raw.lower() in ("none", "null") and (type(None) in typing.get_args(typ) or typ in (int, str)):
        return None
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)) and args:
        return _convert_union(key, raw, args, source)
    if typ is bool:
        value = parse_bool(raw)
        if value is None:
            raise BadInput(f"{source} {key}={raw}: expected a boolean (true/false)")
        return value
    if typ is int:
        try:
            return int(raw, 0)
        except ValueError:
            raise BadInput(f"{source} {key}={raw}: expected an integer") from None
    if typ is float:
        try:
            return float(raw)
        except ValueError:
            raise BadInput(f"{source} {key}={raw}: expected a number") from None
    if typ is str:
        return raw
    if origin in (tuple, tuple) or typ is tuple:
        return tuple(p.strip() for p in raw.split(",") if p.strip())
    if typ is dict or origin is dict:
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as e:
            raise BadInput(f"{source} {key}: expected a JSON object: {e}") from None
        if not isinstance(value, dict):
            raise BadInput(f"{source} {key}: expected a JSON object")
        return value
    return raw


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)


jsonable = _jsonable
