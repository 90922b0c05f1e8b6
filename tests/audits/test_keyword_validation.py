"""Every public keyword function of an audit validates its options in one place, its audit's Options (issue 23,
deliver item 1: "constraints are data, validated in one place with one error format"), generated for every
registered audit.

For each keyword function (in memory: ``audits.checks.NAME.run_NAME_audit``; on Dask, for the audits the Dask engine
runs: ``audits.engine.partitioned.single.run_partitioned_NAME``) and each of its keywords named after a constrained
field of the audit's Options, values that no constraint of the field allows (generated from the constraints: out
of an interval, not a choice, an empty or repeating list, ...) fail with :class:`audits.protocol.params.OptionError`
in the one message format, naming the audit and the option, before any work is done. A new audit, option or
constraint is covered without editing this file.
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import fields

import numpy as np
import pytest

from audits.engine.partitioned import single
from audits.protocol import registry
from audits.protocol.params import (Boolean, Choices, Instances, Interval, NoneOk, OptionError, Sequence,
                                    StrOptions, Text, defaults_from)

from tests.audits.keyword_functions import keyword_corpora, FUNCTIONS, NAMES, REQUIRED


# --- values a constraint does not allow, generated from the constraint -----------------------------------

class _Other:
    """An object of no declared class (its repr is stable: test ids must not vary between collections)."""

    def __repr__(self) -> str:
        return "<another object>"


_NOT_AN_INSTANCE = _Other()


def _allowed(constraint):
    """One value ``constraint`` allows (to build a list that breaks only its ``unique``)."""
    if isinstance(constraint, Interval):
        return constraint.kind(constraint.left + 1 if constraint.left is not None else 0)
    if isinstance(constraint, StrOptions):
        return constraint.options[0]
    if isinstance(constraint, Choices):
        return next(iter(constraint.load()))
    return "a-name"


def _outside(constraint) -> list:
    """Values just outside ``constraint`` (the caller keeps those no other constraint of the field allows)."""
    if isinstance(constraint, Interval):
        out = ["1", math.nan, math.inf, True]
        if constraint.left is not None:
            out.append(constraint.left - 1)
            if constraint.closed in ("right", "neither"):
                out.append(constraint.left)
        if constraint.right is not None:
            out.append(constraint.right + 1)
            if constraint.closed in ("left", "neither"):
                out.append(constraint.right)
        if constraint.kind is int:
            out.append((constraint.left or 0) + 1.5)
        return out
    if isinstance(constraint, (StrOptions, Choices)):
        return ["no-such-choice", 3]
    if isinstance(constraint, Text):
        return [12345, ("a", "b")]
    if isinstance(constraint, Boolean):
        return ["yes", 1]
    if isinstance(constraint, Instances):
        return [_NOT_AN_INSTANCE]
    if isinstance(constraint, Sequence):
        out = [(), "a,b", [v for v in _outside(constraint.item) if not isinstance(v, (list, tuple))][:1]]
        if constraint.unique:
            out.append((_allowed(constraint.item),) * 2)
        return out
    assert isinstance(constraint, NoneOk), f"no invalid values generated for {constraint!r}: add them here"
    return []


def invalid_values(cls, f) -> list:
    """Values no constraint of field ``f`` of ``cls`` allows, that are no form of the keyword API either (None:
    given for an option that does not allow it, None is its declared default; ``cls.keyword_forms``: e.g. the
    clocks' ``measures=()``, every measure, or compare's ``a=("id", ...)``, a list of solution ids)."""
    constraints = f.metadata.get("constraints", ())
    out = []
    for c in constraints:
        for value in _outside(c):
            if value is None or any(value in other for other in constraints) or value in out:
                continue
            forms = cls.keyword_forms({f.name: value})
            if f.name in forms and forms[f.name] is value:
                out.append(value)
    return out


def cases(name, get) -> list:
    """``(keyword, invalid value)`` of every keyword of the function named after a constrained Options field."""
    fn = get(name)
    keywords = {k for k, p in inspect.signature(fn).parameters.items() if p.kind is p.KEYWORD_ONLY}
    cls = registry.options_of(name)
    return [(f.name, value) for f in fields(cls) if f.name in keywords for value in invalid_values(cls, f)]


CASES = [(name, where, get, keyword, value) for name, where, get in FUNCTIONS for keyword, value in cases(name, get)]


@pytest.fixture(scope="module")
def corpora():
    return keyword_corpora(n_problems=4, n_tests=2, n_solutions=5, n_candidates=1, n_pair_problems=4)


@pytest.fixture
def engine_never_runs(monkeypatch):
    """The Dask functions' engine replaced: what reaches it is recorded, no cluster is started (a value the
    function let through reaches it instead of raising)."""
    seen = []

    def engine(audit, dataset, options, **_):
        seen.append(options)
        return [None]

    monkeypatch.setattr(single, "_one", engine)
    return seen


@pytest.mark.parametrize(("name", "where", "get"), FUNCTIONS, ids=[f"{n}-{w}" for n, w, _ in FUNCTIONS])
def test_every_keyword_function_has_constrained_options_and_is_validated_by_them(name, where, get):
    fn = get(name)
    assert cases(name, get), f"{fn.__qualname__}: no keyword of a constrained {registry.options_of(name).__name__} field"
    assert fn.__options__ is registry.options_of(name)  # defaults_from: the one place keywords are validated


@pytest.mark.parametrize(("name", "where", "get", "keyword", "value"), CASES,
                         ids=[f"{n}-{w}-{k}={v!r}" for n, w, _, k, v in CASES])
def test_an_invalid_option_keyword_fails_with_the_options_message(name, where, get, keyword, value, corpora,
                                                                  engine_never_runs):
    fn = get(name)
    corpus = corpora.get(name, corpora["default"]) if where == "memory" else "corpus.dataset"
    with pytest.raises(OptionError) as error:
        fn(corpus, **{**REQUIRED.get(name, {}), keyword: value})
    assert re.match(rf"{name} option {keyword} must be .+, got ", str(error.value)), str(error.value)
    assert not engine_never_runs, "an invalid option reached the Dask engine"


@pytest.mark.parametrize("name", NAMES)
def test_none_for_an_option_without_none_is_its_declared_default(name):
    """The keyword functions' "not given" (the Dask calibration's documented ``families=None``)."""
    cls = registry.options_of(name)
    no_none = [f for f in fields(cls) if f.metadata.get("constraints") and not any(None in c for c in
                                                                                  f.metadata["constraints"])]
    assert cls.keyword_values({f.name: None for f in no_none}) == {f.name: f.default for f in no_none}


def test_the_keyword_forms_of_today_are_kept(corpora):
    """calibration's robust=True (Huber) and False (none), lists for tuples, measures=[] for every clock, compare's
    sets as lists of solution ids: the same as their declared forms."""
    from audits.checks.calibration import run_calibration_audit
    from audits.checks.clocks import run_clocks_audit
    from audits.checks.compare import run_compare_audit
    from audits.checks.declared.calibration import CalibrationOptions
    from audits.checks.declared.clocks import ClocksOptions

    assert CalibrationOptions.keyword_values({"robust": True, "families": ["affine"], "taus": [10, 30]}) == {
        "robust": "huber", "families": ("affine",), "taus": (10, 30)}
    assert CalibrationOptions.keyword_values({"robust": False}) == {"robust": None}
    assert ClocksOptions.keyword_values({"measures": []}) == {"measures": None}
    assert CalibrationOptions.keyword_values({"n_boot": np.int64(7), "seed": 3.0}) == {"n_boot": 7, "seed": 3}

    corpus = corpora["default"]
    quick = {"n_boot": 0, "n_boot_rank": 0, "families": ["affine"]}
    as_true = run_calibration_audit(corpus, source="c0", target="c1", robust=True, **quick)
    as_name = run_calibration_audit(corpus, source="c0", target="c1", robust="huber", **{**quick, "families": ("affine",)})
    assert "affine_huber" in set(as_true.fits["name"])
    assert as_true.to_dict() == as_name.to_dict()
    assert run_clocks_audit(corpus, measures=[], n_boot=0).measures == run_clocks_audit(corpus, n_boot=0).measures
    pairs = corpora["compare"]
    ids = sorted(pairs.loc[pairs["solution"].astype(str).str.startswith("A/"), "solution"].astype(str).unique())
    others = sorted(set(pairs["solution"].astype(str)) - set(ids))
    listed = run_compare_audit(pairs, a=ids, b=others, n_boot=0)
    assert listed.a == "listed ids" and listed.runs


def test_defaults_from_validates_every_option_keyword_of_the_function():
    from dataclasses import dataclass

    from audits.protocol.params import DEFAULT, Options, option

    @dataclass(frozen=True)
    class Demo(Options):
        audit = "demo"
        n_boot: int = option(10, Interval(int, 0, None), help="resamples")
        a: str = option("x", Text(), help="a set")

    @defaults_from(Demo)
    def run(corpus, *, a, n_boot=DEFAULT):
        return a, n_boot

    assert run("c", a="y", n_boot=np.int64(3)) == ("y", 3)
    with pytest.raises(OptionError, match=r"demo option a must be a name \(--a\), got 5"):
        run("c", a=5)  # a required keyword named after a field is validated too
