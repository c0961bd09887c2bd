"""One declaration of each simulation's parameters: type, range, default and help, from which the command line
(:func:`add_arguments`), the REST API's serializers and the browser's form (``twin.runs.params``) are all built, and
one validation (:meth:`ParamSet.validate`) that every one of them calls. A parameter is therefore refused for the
same reason, with the same words, wherever it comes from.

>>> from sim.fabric.params import COLLECTIVE
>>> COLLECTIVE.validate({"gpus": "128", "sizes": "1M:4M", "collective": "All-Gather"})["collective"]
'allgather'
>>> COLLECTIVE.validate({"qps": 0})
Traceback (most recent call last):
...
sim.core.errors.ParamError: qps: must be at least 1
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from sim.core.errors import ParamError, UsageError
from sim.core.units import parse_size, parse_sizes

TYPES = ("int", "float", "bool", "choice", "text", "size", "sizes", "int_list")
MAX_SEED = 2**32 - 1              # numpy's legacy seeding range; every seed the engine takes fits it
MAX_GPUS = 1 << 20                # more ranks than any cluster the twin models (roadmap: 600k GPUs)


@dataclass(frozen=True)
class Param:
    """One parameter. ``type`` is one of :data:`TYPES`; ``min``/``max`` bound numbers (inclusive) and the length of
    lists; ``choices`` the accepted values of a ``choice`` (``normalize`` may map aliases onto them); ``nullable``
    lets ``None`` mean "the engine's default" (said in ``help``), and blank text with it unless ``blank_is_null``
    is False (a file's text, where blank is a mistake and is refused); ``flag``/``short`` name the CLI option
    (default ``--name`` with dashes). ``fits``: the default is a GPU count (or one per GPU) that a smaller cluster
    cannot hold: on a cluster of fewer usable GPUs it becomes the largest power of two within them
    (:meth:`default_for`), so a form's defaults run on every cluster. ``shown``: what null stands for, as a form
    shows it (e.g. ``64``), when ``help`` says it is one value."""

    name: str
    type: str
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple | None = None
    normalize: Callable[[str], str] | None = None
    nullable: bool = False
    flag: str | None = None
    short: str | None = None
    metavar: str | None = None
    blank_is_null: bool = True
    fits: bool = False
    shown: str | None = None

    def __post_init__(self):
        assert self.type in TYPES, self.type
        assert not self.fits or self.type == "int" and isinstance(self.default, int), self.name

    def default_for(self, usable: int | None = None):
        """The default on a cluster of ``usable`` GPUs (``None``: the declared default): a ``fits`` default above
        them is the largest power of two within them."""
        if not self.fits or usable is None or usable < 1 or self.default <= usable:
            return self.default
        return max(1 << (int(usable).bit_length() - 1), int(self.min or 1))

    @property
    def option(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def parse(self, value):
        """``value`` (from JSON, a form or the command line, so strings are accepted for numbers) converted and
        checked; raises :class:`ParamError` naming this parameter."""
        if isinstance(value, str) and not self.blank_is_null and not value.strip():
            raise ParamError(self.name, "is empty (or blank lines only): give its text, or null to leave it out")
        if value is None or (isinstance(value, str) and self.nullable and self._names_null(value)):
            if self.nullable:
                return None
            raise ParamError(self.name, "may not be null")
        try:
            return getattr(self, "_parse_" + self.type)(value)
        except (ValueError, TypeError, OverflowError, UsageError) as e:      # CollectiveError is a ValueError
            if isinstance(e, ParamError):
                raise
            raise ParamError(self.name, str(e)) from None

    def _names_null(self, text: str) -> bool:
        """Whether ``text`` means null: empty, ``null``, or ``none`` unless ``none`` is one of the choices (a
        checkpoint's ``redundancy`` may be ``none``: no redundancy, not the store's default)."""
        word = text.strip().lower()
        return word in ("", "null") or (word == "none" and "none" not in (self.choices or ()))

    def _bounds(self, v, what: str = ""):
        if self.min is not None and v < self.min:
            raise ParamError(self.name, f"{what}must be at least {_num(self.min)}")
        if self.max is not None and v > self.max:
            raise ParamError(self.name, f"{what}must be at most {_num(self.max)}")
        return v

    def _parse_int(self, value) -> int:
        if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
            raise ParamError(self.name, f"must be a whole number, got {value!r}")
        if isinstance(value, str):
            text = value.strip()
            if not text.lstrip("+-").isdigit() or len(text) > 40:
                raise ParamError(self.name, f"must be a whole number, got {value!r}")
            value = int(text)
        if not isinstance(value, (int, float)):
            raise ParamError(self.name, f"must be a whole number, got {type(value).__name__}")
        return self._bounds(int(value))

    def _parse_float(self, value) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ParamError(self.name, f"must be a number, got {value!r}")
        if isinstance(value, str) and len(value) > 40:
            raise ParamError(self.name, "must be a number")
        v = float(value)
        if not math.isfinite(v):
            raise ParamError(self.name, f"must be a finite number, got {value!r}")
        return self._bounds(v)

    def _parse_bool(self, value) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise ParamError(self.name, f"must be true or false, got {value!r}")

    def _parse_choice(self, value) -> str:
        if not isinstance(value, str):
            raise ParamError(self.name, f"must be one of {', '.join(self.choices)}")
        v = self.normalize(value) if self.normalize else value
        if v not in self.choices:
            raise ParamError(self.name, f"unknown value {value!r}: choose one of {', '.join(self.choices)}")
        return v

    def _parse_text(self, value) -> str:
        if not isinstance(value, str):
            raise ParamError(self.name, "must be text")
        if self.max is not None and len(value) > self.max:
            raise ParamError(self.name, f"must be at most {_num(self.max)} characters, got {len(value):,}")
        return value

    def _parse_size(self, value) -> int:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ParamError(self.name, f"must be a size such as 4G, got {value!r}")
        return self._bounds(parse_size(value if isinstance(value, str) else str(int(value))))

    def _parse_sizes(self, value) -> str:
        if not isinstance(value, str) or len(value) > 1000:
            raise ParamError(self.name, "must be sizes as text, e.g. 1M:1G or 8M,64M")
        parse_sizes(value)
        return value.strip()

    def _parse_int_list(self, value) -> list[int]:
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)) or not value:
            raise ParamError(self.name, "must be a non-empty list of whole numbers, e.g. 512,1024")
        item = Param(self.name, "int", None, "", min=self.min, max=self.max)
        out = sorted({item.parse(v) for v in value})
        if self.choices is None and len(out) > MAX_LIST:
            raise ParamError(self.name, f"at most {MAX_LIST} values")
        return out


MAX_LIST = 16                     # values an int_list parameter may hold


def _num(x) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class ParamSet:
    """The parameters of one simulation kind, and the rules that tie several of them (``check(values)`` raises
    :class:`ParamError`)."""

    name: str
    params: tuple[Param, ...]
    check: Callable[[dict], None] | None = None
    doc: str = ""
    by_name: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "by_name", {p.name: p for p in self.params})

    def __iter__(self):
        return iter(self.params)

    def defaults(self, usable: int | None = None) -> dict:
        """The defaults, on a cluster of ``usable`` GPUs when given (:meth:`Param.default_for`)."""
        return {p.name: p.default_for(usable) for p in self.params}

    def validate(self, values: dict | None, usable: int | None = None) -> dict:
        """``values`` with every parameter parsed and checked and the defaults filled in (those of a cluster of
        ``usable`` GPUs when given). Raises :class:`ParamError` with every bad field (unknown names included) and
        the reason for each."""
        if values is None:
            values = {}
        if not isinstance(values, dict):
            raise ParamError("params", "expected an object of parameters")
        errors: dict[str, list[str]] = {}
        for name in sorted(set(values) - set(self.by_name)):
            errors[str(name)[:64]] = [f"unknown parameter of {self.name}"]
        out = {}
        for p in self.params:
            try:
                out[p.name] = p.parse(values[p.name] if p.name in values else p.default_for(usable))
            except ParamError as e:
                for k, v in e.errors.items():
                    errors.setdefault(k, []).extend(v)
        if errors:
            raise ParamError(errors)
        if self.check is not None:
            self.check(out)
        return out


# ------------------------------------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser, params: ParamSet, skip: tuple[str, ...] = ()) -> None:
    """One option per parameter of ``params`` (all taken as text: :meth:`ParamSet.validate` converts them, so the
    command line refuses exactly what the API refuses). Booleans get ``--name/--no-name``."""
    for p in params:
        if p.name in skip:
            continue
        names = [p.option] + ([p.short] if p.short else [])
        help_text = f"{p.help} (default {_default_text(p)})"
        if p.type == "bool":
            parser.add_argument(*names, dest=p.name, action=argparse.BooleanOptionalAction, default=None,
                                help=help_text)
        else:
            parser.add_argument(*names, dest=p.name, default=None, metavar=p.metavar or _metavar(p), help=help_text)


def values_from_args(args: argparse.Namespace, params: ParamSet) -> dict:
    """The parameters given on the command line (those left out take their defaults in ``validate``)."""
    return {p.name: getattr(args, p.name) for p in params if getattr(args, p.name, None) is not None}


def _metavar(p: Param) -> str:
    if p.choices:
        return "{" + ",".join(p.choices) + "}"
    return {"int": "N", "float": "X", "size": "SIZE", "sizes": "SIZES", "int_list": "N,N,..."}.get(p.type, "TEXT")


def _default_text(p: Param) -> str:
    if p.default is None:
        return "see above" if p.nullable else "none"
    if isinstance(p.default, bool):
        return "on" if p.default else "off"
    if isinstance(p.default, list):
        return ",".join(map(str, p.default))
    return str(p.default)


