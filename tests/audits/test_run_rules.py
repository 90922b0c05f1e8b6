"""Every audit's JSON names the rule that chose its runs (``run_rule``, a key of audits.corpus.runs.RULES; issue 23
item 3): on a corpus of three environments and two campaigns, every registered audit once with nothing named and
once with an environment named, in memory; the calibration's also names each pair's own rule."""

from __future__ import annotations

import pytest

from audits.corpus.runs import RULES, Covered, covered_runs, runs_of
from audits.corpus.synthetic import synthesize
from audits.protocol import registry

N_BOOT = 10


@pytest.fixture(scope="module")
def corpus():
    rows = synthesize(n_problems=5, n_tests=2, n_solutions=5, n_repeats=3, n_incorrect=0, n_candidates=2,
                      environments=("quiet", "lab"), busy=True, campaigns=(("old", 1.0, 0.0), ("new", 0.8, 0.01)),
                      seed=4).corpus
    rows["timestamp"] = rows["campaign"].astype(str).map({"old": "2026-01-01", "new": "2026-02-01"})
    return rows.astype({"timestamp": object})


def _options(name: str, **named) -> dict:
    fields = registry.options_of(name).__dataclass_fields__
    out = {k: v for k, v in {"n_boot": N_BOOT, "n_boot_rank": N_BOOT}.items() if k in fields}
    if name == "compare":
        out.update(by="role", a="reference", b="candidate")
    if name == "simulation":  # one run: the environment must be named on a corpus of several
        out.update(environment="quiet")
    return {**out, **{k: v for k, v in named.items() if k in fields}}


def _rules(name: str, json) -> list[str]:
    return [one["run_rule"] for one in json] if name == "calibration" else [json["run_rule"]]


EXPECTED = {"simulation": ("one run", "one run"), "calibration": ("default pairs", "named pairs")}


@pytest.mark.parametrize("name", registry.names())
def test_every_audit_s_json_names_the_rule_that_chose_its_runs(corpus, name):
    audit = registry.get(name)
    unnamed, named = EXPECTED.get(name, ("every run", "named runs"))
    json = audit.to_json(audit.run(corpus, _options(name)))
    assert set(_rules(name, json)) == {unnamed}
    if name == "calibration":
        assert len(json) == 7  # 3 stored -> fresh + 2 campaigns x 2 environments against the quietest
        assert {one["pair_rule"] for one in json} == {"stored->fresh", "vs-quietest"}
        again = _options(name, pairs=((("lab", "old"), ("busy", "old")),))
    else:
        again = _options(name, environment="lab", campaign="new")
    json = audit.to_json(audit.run(corpus, again))
    assert set(_rules(name, json)) == {named} and named in RULES


def test_covered_runs_names_its_rule_and_keeps_it_when_pickled(corpus):
    import pickle

    runs = runs_of(corpus)
    every, some = covered_runs(runs), covered_runs(runs, campaign="old")
    assert (every.rule, some.rule, covered_runs(runs, explicit=[("lab", "old")]).rule) == (
        "every run", "named runs", "named runs")
    assert len(every) == 6 and len(some) == 3 and isinstance(some, tuple)
    back = pickle.loads(pickle.dumps(some))
    assert isinstance(back, Covered) and back.rule == "named runs" and back == some
