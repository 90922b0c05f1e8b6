"""Options whose constraints are data: declared once, validated in one place, turned into command-line flags.

In the spirit of scikit-learn's ``utils/_param_validation`` (``validate_params`` with ``Interval`` /
``StrOptions``): each audit's options are a frozen dataclass deriving from :class:`Options`, each field
declared with :func:`option` (its default, the constraints it must meet, its help text). Constructing the
dataclass validates every field (:meth:`Options.__post_init__`), so a bad value fails with one message
format wherever it comes from (a library call, the command line, a report parameter)::

    reliability option target_reliability must be a number in (0, 1) (--target-reliability), got 1.5

:func:`add_options` generates the argparse flags and their ``--help`` from the same fields and
:func:`read_options` builds the dataclass from the parsed flags: the command line declares no option by
hand. This module imports neither numpy nor pandas (``speedaudit --help`` imports it).

The public keyword functions (``run_reliability_audit(corpus, n_boot=...)``, ``run_partitioned_reliability``, ...)
do not write a default again: each option keyword defaults to :data:`DEFAULT` (shown as ``<Options default>``
in a signature) and :func:`defaults_from` gives a keyword left out the field's declared default and validates
every option keyword through the Options (:meth:`Options.keyword_values`), so the in-memory and the Dask
functions read the same declaration and check no option by hand. A dedicated object rather than ``None``, which is
a real value of several options (``floor_s=None``: from the floor rows; ``names=None``: every aggregator).

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo(Options):
...     audit = "demo"
...     n_boot: int = option(1000, Interval(int, 0, None), help="resamples")
...     method: str = option("iqr", StrOptions("iqr", "mad"), help="robust CV variant")
>>> Demo(method="mad").method
'mad'
>>> Demo(n_boot=-1)
Traceback (most recent call last):
...
audits.protocol.params.OptionError: demo option n_boot must be an integer >= 0 (--n-boot), got -1
"""

from __future__ import annotations

import argparse
import functools
import inspect
import math
import numbers
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, ClassVar

from audits.errors import UserError

__all__ = ["Options", "Interval", "StrOptions", "Text", "Sequence", "NoneOk", "Boolean", "Choices", "Instances",
           "RunPairs", "option", "n_boot_option", "seed_option", "add_options", "read_options", "DEFAULT", "defaults_from"]


class OptionError(UserError, ValueError):
    """An option value that its declared constraints do not allow (the message names option, value, allowed)."""


# --- constraints ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """A number of ``kind`` (``int`` or ``float``) between ``left`` and ``right`` (``None``: unbounded).

    ``closed``: ``"both"``, ``"left"``, ``"right"`` or ``"neither"`` (which ends belong to the interval).

    >>> str(Interval(float, 0, 1, closed="neither")), 1 in Interval(float, 0, 1, closed="neither")
    ('a number in (0, 1)', False)
    """

    kind: type
    left: float | None
    right: float | None
    closed: str = "both"

    def __contains__(self, value) -> bool:
        # numbers.Real: Python's and numpy's numbers alike (np.int64 is no int); never a bool, NaN or infinity
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if not isinstance(value, numbers.Integral) and not math.isfinite(value):
            return False
        if self.kind is int and not (isinstance(value, numbers.Integral) or float(value).is_integer()):
            return False
        lo_in = self.closed in ("both", "left")
        hi_in = self.closed in ("both", "right")
        if self.left is not None and (value < self.left or (value == self.left and not lo_in)):
            return False
        return not (self.right is not None and (value > self.right or (value == self.right and not hi_in)))

    def convert(self, text: str):
        return int(text) if self.kind is int else float(text)

    def normalize(self, value):
        """An allowed value as stored: an integer option's as a Python int (``1000.0``, ``np.int64(1000)``)."""
        return int(value) if self.kind is int and type(value) is not int else value

    def __str__(self) -> str:
        what = "an integer" if self.kind is int else "a number"
        lo_in = self.closed in ("both", "left")
        hi_in = self.closed in ("both", "right")
        if self.right is None and self.left is not None:
            return f"{what} {'>=' if lo_in else '>'} {self.left:g}"
        if self.left is None and self.right is not None:
            return f"{what} {'<=' if hi_in else '<'} {self.right:g}"
        if self.left is None and self.right is None:
            return what
        return f"{what} in {'[' if lo_in else '('}{self.left:g}, {self.right:g}{']' if hi_in else ')'}"


@dataclass(frozen=True)
class StrOptions:
    """One of a fixed set of strings.

    >>> str(StrOptions("iqr", "mad"))
    "one of 'iqr', 'mad'"
    """

    options: tuple[str, ...]

    def __init__(self, *options: str):
        object.__setattr__(self, "options", tuple(options))

    def __contains__(self, value) -> bool:
        return isinstance(value, str) and value in self.options

    def convert(self, text: str):
        return text

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)


@dataclass(frozen=True)
class Text:
    """Any string (a name taken as it is: an environment, a campaign, a column)."""

    def __contains__(self, value) -> bool:
        return isinstance(value, str)

    def convert(self, text: str):
        return text

    def __str__(self) -> str:
        return "a name"


@dataclass(frozen=True)
class Choices:
    """One of a set of strings known only where the option is validated (``load``: a function returning
    them, e.g. the registered aggregators), so that declaring the option imports nothing heavy."""

    load: Callable[[], Iterable[str]]
    what: str

    def __contains__(self, value) -> bool:
        return isinstance(value, str) and value in tuple(self.load())

    def convert(self, text: str):
        return text

    def __str__(self) -> str:  # not loaded for --help: that would import what the option defers
        return f"one of {self.what}"


@dataclass(frozen=True)
class Instances:
    """An object of a class known only where the option is validated (``load``: a function returning the class),
    so that declaring the option imports nothing heavy; not a command-line value (``what`` names the class)."""

    load: Callable[[], type]
    what: str

    def __contains__(self, value) -> bool:
        return isinstance(value, self.load())

    def __str__(self) -> str:
        return self.what


@dataclass(frozen=True)
class Boolean:
    """True or False (a flag on the command line)."""

    def __contains__(self, value) -> bool:
        return isinstance(value, bool)

    def __str__(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class NoneOk:
    """``None`` (the option's documented automatic choice) is allowed."""

    def __contains__(self, value) -> bool:
        return value is None

    def __str__(self) -> str:
        return "None"


@dataclass(frozen=True)
class Sequence:
    """A non-empty sequence (stored as a tuple) whose every item meets ``item`` (no duplicates with ``unique``).

    On the command line: comma-separated (``2,4,8,16``) or repeated values.

    >>> str(Sequence(Interval(int, 1, None)))
    'a non-empty list of an integer >= 1'
    """

    item: Any
    unique: bool = False

    def __contains__(self, value) -> bool:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
            return False
        if self.unique and len(set(value)) != len(value):
            return False
        return all(v in self.item for v in value)

    def convert(self, text: str):
        return tuple(self.item.convert(t.strip()) for t in text.split(",") if t.strip())

    def normalize(self, value):
        """An allowed value as stored: a tuple of its items as stored."""
        normalize = getattr(self.item, "normalize", None)
        return tuple(value) if normalize is None else tuple(normalize(v) for v in value)

    def __str__(self) -> str:
        return f"a non-empty list{' without repeats' if self.unique else ''} of {self.item}"


@dataclass(frozen=True)
class RunPairs:
    """A list, possibly empty, of (source, target) pairs of runs: each run ``[environment, campaign]`` (two names,
    a mapping ``{environment: ..., campaign: ...}`` or an :class:`audits.corpus.runs.Run`), or both sides names
    of one column (a calibration's ``--source``/``--target`` with ``key``). Names are data, never split.

    On the command line: the flag repeated, each time four names ``SOURCE_ENV SOURCE_CAMPAIGN TARGET_ENV
    TARGET_CAMPAIGN`` (:attr:`nargs`); in a report parameter, YAML: ``[[[quiet, c0], [busy, c0]]]``.

    >>> [[["quiet", "c0"], ["busy", "c0"]]] in RunPairs(), [[["quiet"], ["busy", "c0"]]] in RunPairs(), () in RunPairs()
    (True, False, True)
    >>> RunPairs().from_words(["quiet", "c0", "busy", "c0"])
    (('quiet', 'c0'), ('busy', 'c0'))
    """

    #: Words per pair on the command line (the flag takes four each time it is given).
    nargs: ClassVar[int] = 4

    @staticmethod
    def _side(value) -> bool:
        if isinstance(value, str):
            return True
        if isinstance(value, Mapping):
            return set(value) == {"environment", "campaign"} and all(isinstance(v, str) for v in value.values())
        if isinstance(value, (list, tuple)):
            return len(value) == 2 and all(isinstance(v, str) for v in value)
        return isinstance(getattr(value, "environment", None), str) and isinstance(getattr(value, "campaign", None),
                                                                                   str)

    def __contains__(self, value) -> bool:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
            return False
        return all(isinstance(p, (list, tuple)) and len(p) == 2 and all(self._side(s) for s in p) for p in value)

    def from_words(self, words) -> tuple:
        """One pair from the flag's four words."""
        source_env, source_campaign, target_env, target_campaign = words
        return (source_env, source_campaign), (target_env, target_campaign)

    def normalize(self, value) -> tuple:
        """The pairs as stored: a tuple of (source, target) tuples, a run given as a list stored as a tuple."""
        def side(s):
            if isinstance(s, list):
                return tuple(s)
            if isinstance(s, Mapping):
                return (s["environment"], s["campaign"])
            return s

        return tuple((side(s), side(t)) for s, t in value)

    def __str__(self) -> str:
        return "a list of (source, target) pairs of runs, each run [environment, campaign]"


def _allowed(constraints) -> str:
    return " or ".join(str(c) for c in constraints)


def _message(audit: str, f, value) -> str:
    """The one error format: the option, what it allows, its flag, the value given."""
    return f"{audit} option {f.name} must be {_allowed(f.metadata['constraints'])} ({flag_of(f)}), got {value!r}"


def _allows_none(f) -> bool:
    """Whether field ``f`` allows None (it declares no constraint, or one that allows None)."""
    constraints = f.metadata.get("constraints", ())
    return not constraints or any(None in c for c in constraints)


# --- declaring options ------------------------------------------------------------------------------------

def option(default, *constraints, help: str, flag: str | None = None, metavar: str | None = None,
           cli: bool = True, shared: bool = True, deprecated: Mapping[str, tuple[str, Callable]] | None = None):
    """A field of an :class:`Options` dataclass: its default, its constraints (any one allows a value) and help.

    Parameters
    ----------
    default
        The value when the option is not given (a tuple for sequences).
    *constraints
        :class:`Interval`, :class:`StrOptions`, :class:`Choices`, :class:`Sequence`, :class:`Boolean`,
        :class:`NoneOk`: the value must meet one of them.
    help : str
        The ``--help`` text (the default and what is allowed are appended).
    flag : str, optional
        The command-line flag (default ``--`` + the name with ``-`` for ``_``).
    cli : bool
        False: not a command-line flag (set by the command from other flags, e.g. calibration pairs).
    shared : bool
        In ``speedaudit audit all``, whether the flag is shared with the other audits that declare it
        (``--n-boot``) or namespaced with the audit's name (``--simulation-n-boot``).
    deprecated : mapping, optional
        ``{"--old-flag": (note, convert)}``: an old flag still read (``convert`` maps its value), with a
        deprecation note on stderr.
    """
    meta = {"constraints": tuple(constraints), "help": help, "flag": flag, "metavar": metavar, "cli": cli,
            "shared": shared, "deprecated": dict(deprecated or {})}
    if isinstance(default, (list, dict, set)):
        raise TypeError("an option's default must be immutable (a tuple, not a list)")
    return field(default=default, metadata=meta)


def n_boot_option(default: int, *, shared: bool = True, what: str = "over problems"):
    """The one declaration of ``n_boot`` (bootstrap resamples; 0: no intervals, every estimate computed)."""
    return option(default, Interval(int, 0, None), shared=shared, metavar="N",
                  help=f"bootstrap resamples {what} (0: no intervals)")


def seed_option():
    """The one declaration of ``seed`` (of every resampling and sampling of an audit)."""
    return option(0, Interval(int, 0, None), help="seed of the bootstrap and of every sample", metavar="SEED")


def flag_of(f) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


@dataclass(frozen=True)
class Options:
    """Base of every audit's options: a frozen dataclass of :func:`option` fields, validated on construction."""

    #: The audit's name, in messages.
    audit: ClassVar[str] = "audit"

    def __post_init__(self):
        for f in fields(self):
            constraints = f.metadata.get("constraints", ())
            value = getattr(self, f.name)
            if isinstance(value, list):  # a list given where a tuple is declared: store the tuple
                value = tuple(value)
                object.__setattr__(self, f.name, value)
            if not constraints:
                continue
            allowing = next((c for c in constraints if value in c), None)
            if allowing is None:
                raise OptionError(_message(self.audit, f, value))
            normalize = getattr(allowing, "normalize", None)
            if normalize is not None:
                object.__setattr__(self, f.name, normalize(value))

    @classmethod
    def coerce(cls, value=None, **changes) -> Options:
        """``value`` (an instance, a mapping of field values, or None: the defaults) with ``changes`` applied;
        an unknown name fails with the names this audit takes."""
        if isinstance(value, cls):
            base = value
            items = dict(changes)
        else:
            base = None
            items = {**dict(value or {}), **changes}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(items) - known)
        if unknown:
            raise OptionError(f"unknown {cls.audit} option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                              f"it takes: {', '.join(sorted(known))}")
        return replace(base, **items) if base is not None else cls(**items)

    @classmethod
    def keyword_forms(cls, values: dict) -> dict:
        """The values of a public keyword function's option keywords in the forms the Options declare: an audit
        whose keyword function accepts forms of its own (calibration's ``robust=True`` for ``"huber"``) maps them
        here. A name this leaves out of the result is not an option value (compare's ``a`` as a list of solution
        ids): the function gets it as given. Default: ``values`` unchanged."""
        return values

    @classmethod
    def keyword_values(cls, values: Mapping) -> dict:
        """``values`` (a public keyword function's option keywords, by name) validated by this class, as
        :func:`defaults_from` passes them on: :meth:`keyword_forms` first, then None given for an option that
        does not allow None is its declared default (the keyword functions' "not given"), then the dataclass
        (its constraints raise :class:`OptionError`: one place, one message format); a list is stored as a
        tuple, an integer option's value as an int.

        >>> @dataclass(frozen=True)
        ... class Demo(Options):
        ...     n_boot: int = option(1000, Interval(int, 0, None), help="resamples")
        ...     seed: int = option(0, Interval(int, 0, None), help="seed")
        >>> Demo.keyword_values({"n_boot": 200.0, "seed": None})
        {'n_boot': 200, 'seed': 0}
        """
        values = cls.keyword_forms(dict(values))
        for f in fields(cls):
            if f.name in values and values[f.name] is None and not _allows_none(f):
                values[f.name] = f.default
        checked = cls.coerce(values)
        return {name: getattr(checked, name) for name in values}

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def changed(self) -> dict:
        """The fields whose value differs from the default."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}


# --- the keyword functions' defaults ---------------------------------------------------------------------

class _OptionsDefault:
    """The type of :data:`DEFAULT`: one instance, copied and pickled as itself."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<Options default>"

    def __reduce__(self):
        return "DEFAULT"  # pickled by name: unpickles as this module's DEFAULT

    def __bool__(self):
        raise TypeError("<Options default> stands for an option's declared default; it is read only after "
                        "defaults_from resolved it")


#: The default of every option keyword of a public keyword function (its repr: ``<Options default>``): the
#: keyword left out, :func:`defaults_from` gives it the declared default of the audit's :class:`Options` field of
#: the same name. Not ``None``: ``None`` is a real value of several options. Typed ``Any`` so that a keyword
#: annotated ``n_boot: int = DEFAULT`` type-checks.
DEFAULT: Any = _OptionsDefault()


def defaults_from(options: type[Options]):
    """Decorate a public keyword function whose option keywords default to :data:`DEFAULT`: a keyword left out
    (or given as :data:`DEFAULT`) takes the declared default of the field of ``options`` of that name before
    the function runs, so that the field is the only place the default is written.

    Then every keyword-only keyword named after a field of ``options`` (given or resolved) is validated by
    ``options`` (:meth:`Options.keyword_values`): a bad value fails with :class:`OptionError` in the one message
    format before the function runs, which gets the values as the dataclass stores them (a tuple for a list)
    and checks none of them again. Checked when decorating: every keyword defaulting to :data:`DEFAULT` is
    keyword-only and a field of ``options``. The function keeps its signature (``inspect.signature`` shows
    ``<Options default>``) and docstring; ``__options__`` names ``options``.

    >>> @dataclass(frozen=True)
    ... class Demo(Options):
    ...     n_boot: int = option(1000, Interval(int, 0, None), help="resamples")
    >>> @defaults_from(Demo)
    ... def run(corpus, *, n_boot=DEFAULT):
    ...     return n_boot
    >>> run("c"), run("c", n_boot=5), inspect.signature(run)
    (1000, 5, <Signature (corpus, *, n_boot=<Options default>)>)
    >>> run("c", n_boot=-1)
    Traceback (most recent call last):
    ...
    audits.protocol.params.OptionError: audit option n_boot must be an integer >= 0 (--n-boot), got -1
    """

    def decorate(func):
        declared = {f.name: f.default for f in fields(options)}
        names = []
        validated = []
        for p in inspect.signature(func).parameters.values():
            if p.name in declared and p.kind is p.KEYWORD_ONLY:
                validated.append(p.name)
            if p.default is not DEFAULT:
                continue
            if p.name not in declared or p.kind is not p.KEYWORD_ONLY:
                raise TypeError(f"{func.__qualname__}: keyword {p.name} defaults to <Options default> but is not a "
                                f"keyword-only parameter named after a field of {options.__name__}")
            names.append(p.name)
        names = tuple(names)
        validated = tuple(validated)

        @functools.wraps(func)
        def with_defaults(*args, **kwargs):
            for name in names:
                if kwargs.get(name, DEFAULT) is DEFAULT:
                    kwargs[name] = declared[name]
            kwargs.update(options.keyword_values({name: kwargs[name] for name in validated if name in kwargs}))
            return func(*args, **kwargs)

        with_defaults.__options__ = options
        return with_defaults

    return decorate


# --- the command line -------------------------------------------------------------------------------------

def _default_text(value) -> str:
    if value is None:
        return "automatic"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value) if value else "none"
    return str(value)


def add_options(parser, options: type[Options], *, prefix: str = "", skip: Iterable[str] = (),
                only: Iterable[str] | None = None, only_shared: bool | None = None, title: str | None = None,
                shared_unprefixed: bool = False) -> None:
    """Add a flag per command-line field of ``options`` to ``parser`` (help generated from the declaration).

    ``prefix`` (``"simulation-"``) namespaces the flags (with ``shared_unprefixed``, only the fields not
    declared ``shared``: ``speedaudit audit all``'s ``--n-boot`` and ``--simulation-n-boot``); ``skip`` leaves fields
    out, ``only`` keeps just these; ``only_shared`` True / False adds only the shared / the non-shared fields.
    Flags default to ``None`` (not given): :func:`read_options` then keeps the declared default.
    """
    skip = set(skip)
    target = parser.add_argument_group(title) if title else parser
    for f in fields(options):
        meta = f.metadata
        if not meta.get("cli", False) or f.name in skip or (only is not None and f.name not in only):
            continue
        if only_shared is not None and bool(meta.get("shared", True)) != only_shared:
            continue
        own = "" if shared_unprefixed and meta.get("shared", True) else prefix
        flag = "--" + own + flag_of(f)[2:]
        dest = _dest(options, f, own)
        if any(a.dest == dest for a in parser._actions):  # already added (a flag shared by several audits)
            continue
        constraints = meta["constraints"]
        allowed = _allowed(constraints)
        help_text = f"{meta['help']} (default: {_default_text(f.default)}; {allowed})".replace("%", "%%")
        if any(isinstance(c, Boolean) for c in constraints):
            target.add_argument(flag, dest=dest, action="store_const", const=True, default=None, help=help_text)
        elif (words := next((c for c in constraints if hasattr(c, "nargs")), None)) is not None:
            target.add_argument(flag, dest=dest, default=None, action="append", nargs=words.nargs,
                                metavar=meta.get("metavar") or f.name.upper(), help=help_text)
        else:
            choices = next((c.options for c in constraints if isinstance(c, StrOptions)), None)
            many = any(isinstance(c, Sequence) for c in constraints)
            target.add_argument(flag, dest=dest, default=None, nargs="+" if many else None,
                                metavar=meta.get("metavar") or ("{" + ",".join(choices) + "}" if choices
                                                                else f.name.upper()), help=help_text)
        for old, (note, _convert) in meta.get("deprecated", {}).items():
            target.add_argument("--" + own + old[2:], dest=dest + "__" + old[2:].replace("-", "_"),
                                default=None, metavar=f.name.upper(), help=f"deprecated: {note}".replace("%", "%%"))


def _dest(options: type[Options], f, prefix: str) -> str:
    return "opt_" + (prefix.replace("-", "_") if prefix else "") + f.name


def _convert(options: type[Options], f, text):
    words = next((c for c in f.metadata["constraints"] if hasattr(c, "nargs")), None)
    if words is not None and isinstance(text, list):  # a repeated flag of several words each: one value per flag
        value = tuple(words.from_words(w) for w in text)
        if value in words:
            return value
        raise OptionError(_message(options.audit, f, text))
    if isinstance(text, list):  # nargs="+": "--tau 10 30" as "--tau 10,30"
        text = ",".join(text)
    if not isinstance(text, str):
        return text
    if text.strip().lower() in ("none", "auto") and any(isinstance(c, NoneOk) for c in f.metadata["constraints"]):
        return None
    errors = []
    for c in f.metadata["constraints"]:
        convert = getattr(c, "convert", None)
        if convert is None:
            continue
        try:
            value = convert(text)
        except ValueError as exc:
            errors.append(exc)
            continue
        if value in c:
            return value
    raise OptionError(_message(options.audit, f, text))


def read_options(args: argparse.Namespace, options: type[Options], *, prefix: str = "", shared_unprefixed: bool = False,
                 **fixed) -> Options:
    """The ``options`` dataclass from the flags :func:`add_options` added (values not given keep their
    defaults; ``fixed``: values the command sets itself). Deprecated flags are converted with a note."""
    values = dict(fixed)
    for f in fields(options):
        meta = f.metadata
        if not meta.get("cli", False) or f.name in values:
            continue
        dest = _dest(options, f, "" if shared_unprefixed and meta.get("shared", True) else prefix)
        text = getattr(args, dest, None)
        for old, (note, convert) in meta.get("deprecated", {}).items():
            old_text = getattr(args, dest + "__" + old[2:].replace("-", "_"), None)
            if old_text is None:
                continue
            if text is not None:
                raise OptionError(f"give {flag_of(f)} or {old}, not both")
            print(f"speedaudit: warning: {old} is deprecated: {note}", file=sys.stderr)
            text = convert(_convert(options, f, old_text))
        if text is not None:
            values[f.name] = _convert(options, f, text)
    return options.coerce(values)


def field_default(options: type[Options], name: str):
    """The declared default of field ``name`` of ``options``."""
    for f in fields(options):
        if f.name == name:
            return f.default if f.default is not MISSING else None
    raise KeyError(name)
