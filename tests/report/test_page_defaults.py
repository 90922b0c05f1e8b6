"""A report page's parameters do not write an audit's default again: left at None, a parameter is the audit's own
default (its Options field), so `speedaudit report` computes what `speedaudit audit ...` computes.

Before, the pages declared n_boot = 1000, group_sizes = [2, 4, 8, 16, 32] and the comparison's four options
themselves, so the report's simulation drew 1000 resamples over groups up to 32 while `audit all` drew 200 over
groups up to 16 (its declared defaults), and `report --results` of a saved `audit all` showed the latter.
"""

from __future__ import annotations

import ast
import dataclasses

import pytest

from audits.corpus.synthetic import synthesize
from audits.protocol import registry
from audits.protocol.context import audit_context
from audits.protocol.params import NoneOk
from audits.report import results as report_results
from audits.report.catalog import REPORTS
from audits.report.render import template_parameters, template_path


#: Parameters a page uses for itself too, so it declares a value: ``seed`` also seeds the rows its figures
#: sample (``narrative.show_plot(..., seed=seed)``), which must not be random when left out.
PAGE_OWN = {"seed"}


def _declared_defaults() -> dict[str, dict[str, object]]:
    """Every page's parameters and their values as the page declares them."""
    return {name: {k: ast.literal_eval(v["default"]) for k, v in template_parameters(template_path(name)).items()}
            for name in REPORTS}


def _option_fields(audit: str) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(registry.options_of(audit))}


def test_an_option_that_takes_none_defaults_to_none():
    """What makes "a parameter left at None is the audit's default" exact (audits.report.results._given)."""
    for audit in registry.names():
        for name, f in _option_fields(audit).items():
            if any(isinstance(c, NoneOk) for c in f.metadata.get("constraints", ())):
                assert f.default is None, f"{audit}.{name} takes None but defaults to {f.default!r}"


def test_no_page_parameter_restates_its_options_default():
    pages = _declared_defaults()
    checked = 0
    for _result, (audit, mapping) in report_results._OPTIONS.items():
        options = _option_fields(audit)
        for option, parameter in mapping.items():
            default = options[option].default
            for page, declared in pages.items():
                if parameter in declared and default is not None and parameter not in PAGE_OWN:
                    checked += 1
                    value = declared[parameter]
                    value = tuple(value) if isinstance(value, list) else value
                    assert value != default, (f"notebooks/{page}.py declares {parameter} = {value!r}, the default of "
                                              f"{audit}'s {option} again: leave it None")
    assert checked >= 10  # the test reads something: n_boot on every page, group sizes, the comparison's options


def _corpus():
    """A small planted corpus whose solution ids carry the comparison's default sets as their prefix."""
    corpus = synthesize(n_problems=4, n_repeats=3, seed=3).corpus
    solution = corpus["solution"].astype(str)
    prefix = solution.str.startswith("ref-").map({True: "accepted/", False: "time_limit_exceeded/"})
    return corpus.assign(solution=prefix + solution)


@pytest.mark.parametrize("page", ["simulation", "compare", "clocks"])
def test_a_page_left_at_its_defaults_computes_the_audits_default(page):
    """The result a page computes with its declared parameters equals the registered audit run with no option
    given (but the run and reward environments the page chooses), figure for figure (its JSON)."""
    ctx = audit_context(_corpus())
    parameters = {**_declared_defaults()["overview"], **_declared_defaults()[page]}
    from_page = report_results._compute(page, ctx, parameters)
    assert not isinstance(from_page, str), f"the page's result is n/a: {from_page}"
    audit_name, mapping = report_results._OPTIONS[page]
    audit = registry.get(audit_name)
    chosen = {option: parameters[parameter] for option, parameter in mapping.items()
              if option in ("environment", "campaign") and parameters[parameter] is not None}
    if page == "simulation":
        chosen["reward_environments"] = report_results._reward_environments_of(parameters)
    direct = audit.run(ctx, audit.options(chosen), audit.thresholds({}, profile=parameters.get("profile")))
    assert audit.to_json(from_page) == audit.to_json(direct)
    assert from_page.to_dict()  # a result with figures, not an empty one
