"""The Options dataclass is the one place an option's default is written (issue 23: "no orchestrator restates an
option or a default"), generated for every registered audit.

Its public keyword functions (in memory: ``audits.checks.NAME.run_NAME_audit``; on Dask, for the audits the Dask
engine runs: ``audits.engine.partitioned.single.run_partitioned_NAME``) give every keyword named after a field of
the audit's Options the sentinel :data:`audits.protocol.params.DEFAULT` as its default (a required keyword may stay
required), and a keyword left out behaves as the field's declared default passed explicitly: in memory, the same
JSON; on Dask, the same options reaching the engine, which are the declared defaults.
"""

from __future__ import annotations

import copy
import inspect
import json
import pickle
from dataclasses import dataclass, fields

import pytest

from audits.engine.partitioned import single
from audits.protocol import registry
from audits.protocol.params import DEFAULT, Interval, OptionError, Options, defaults_from, option

from tests.audits.keyword_functions import keyword_corpora, FUNCTIONS, NAMES, ON_DASK, REQUIRED, in_memory, on_dask




def option_keywords(name, fn) -> dict:
    """``{keyword: Parameter}`` of ``fn``'s keywords named after a field of the audit's Options."""
    declared = {f.name for f in fields(registry.options_of(name))}
    return {k: p for k, p in inspect.signature(fn).parameters.items() if k in declared}


def declared_defaults(name, keywords) -> dict:
    return {f.name: f.default for f in fields(registry.options_of(name)) if f.name in keywords}


@pytest.mark.parametrize(("name", "where", "get"), FUNCTIONS, ids=[f"{n}-{w}" for n, w, _ in FUNCTIONS])
def test_every_option_keyword_defaults_to_the_sentinel(name, where, get):
    fn = get(name)
    keywords = option_keywords(name, fn)
    assert keywords, f"{fn.__qualname__} takes no option of {registry.options_of(name).__name__}"
    written = {k: p.default for k, p in keywords.items() if p.default is not p.empty and p.default is not DEFAULT}
    assert not written, f"{fn.__module__}.{fn.__qualname__} restates defaults of its Options: {written}"
    assert fn.__options__ is registry.options_of(name)
    assert all(p.kind is p.KEYWORD_ONLY for p in keywords.values())
    assert registry.options_of(name).__name__ in fn.__doc__, "the docstring points to the Options class"


@pytest.fixture(scope="module")
def corpora():
    return keyword_corpora(n_problems=5, n_tests=3, n_solutions=6, n_candidates=2, n_pair_problems=6)


def _json(result) -> str:
    return json.dumps(result.to_dict(), sort_keys=True, default=str)


@pytest.mark.parametrize("name", NAMES)
def test_in_memory_a_keyword_left_out_is_its_declared_default(name, corpora):
    fn = in_memory(name)
    corpus = corpora.get(name, corpora["default"])
    required = REQUIRED.get(name, {})
    explicit = {k: v for k, v in declared_defaults(name, option_keywords(name, fn)).items() if k not in required}
    assert explicit
    left_out = fn(corpus, **required)
    assert _json(left_out) == _json(fn(corpus, **required, **explicit))


@pytest.mark.parametrize("name", ON_DASK)
def test_on_dask_a_keyword_left_out_is_its_declared_default(name, monkeypatch):
    """What reaches the Dask engine (the options of ``audit all`` with this audit alone) is the same with the
    keywords left out as with the declared defaults given, and is the declared defaults."""
    seen = []

    def engine(audit, dataset, options, **_):
        seen.append(options)
        return [None]

    monkeypatch.setattr(single, "_one", engine)
    fn = on_dask(name)
    required = REQUIRED.get(name, {})
    keywords = option_keywords(name, fn)
    explicit = {k: v for k, v in declared_defaults(name, keywords).items() if k not in required}
    fn("corpus.dataset", **required)
    fn("corpus.dataset", **required, **explicit)
    left_out, given = seen
    assert left_out == given
    resolved = registry.options_of(name).coerce(left_out).to_dict()
    assert {k: resolved[k] for k in explicit} == explicit


def test_the_sentinel_is_one_object_that_reads_as_the_options_default():
    assert repr(DEFAULT) == "<Options default>"
    assert pickle.loads(pickle.dumps(DEFAULT)) is DEFAULT and copy.deepcopy(DEFAULT) is DEFAULT
    assert type(DEFAULT)() is DEFAULT
    with pytest.raises(TypeError, match="Options default"):
        bool(DEFAULT)  # read before it was resolved: an error, never a silent falsy value


@dataclass(frozen=True)
class _Demo(Options):
    audit = "demo"
    n_boot: int = option(1000, Interval(int, 0, None), help="resamples")
    floor_s: float | None = option(None, help="floor")


def test_defaults_from_resolves_only_what_is_left_out_and_validates_through_the_options():
    @defaults_from(_Demo)
    def run(corpus, *, n_boot=DEFAULT, floor_s=DEFAULT, other=None):
        return n_boot, floor_s, other

    assert run("c") == (1000, None, None)
    assert run("c", n_boot=5, floor_s=0.1) == (5, 0.1, None)
    assert run("c", n_boot=DEFAULT) == (1000, None, None)
    with pytest.raises(OptionError, match=r"demo option n_boot must be an integer >= 0 \(--n-boot\), got -1"):
        run("c", n_boot=-1)  # validated by the Options, not by the function (tests/audits/test_keyword_validation.py)
    assert run("c", other=-1) == (1000, None, -1)  # not an option: the function's own business
    assert inspect.signature(run).parameters["n_boot"].default is DEFAULT


def test_defaults_from_rejects_a_sentinel_keyword_that_is_not_an_option():
    with pytest.raises(TypeError, match="n_bins"):
        @defaults_from(_Demo)
        def run(corpus, *, n_bins=DEFAULT):
            return n_bins
    with pytest.raises(TypeError, match="n_boot"):
        @defaults_from(_Demo)
        def run2(corpus, n_boot=DEFAULT):  # positional: a caller could pass it without its name
            return n_boot
