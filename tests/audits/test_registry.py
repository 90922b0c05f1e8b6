"""Checks generated for every registered audit (as scikit-learn's ``parametrize_with_checks`` does for estimators):
each is in ``audit all``, in the report and on the Dask engine (or declares why not), equals its own run inside
the whole audit, and passes the shuffle (rows permuted -> same JSON), n/a (tiny corpus -> n/a findings, no crash)
and Dask-equality checks. A new audit added to the registry gets these tests without editing this file."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from audits.corpus.dataset import save_dataset
from audits.corpus.runs import Run
from audits.corpus.synthetic import synthesize
from audits.engine.whole_audit import resolve_options, run_audits
from audits.protocol import registry
from audits.protocol.audit import Skip
from tests.audits.test_partitioned import _close

NAMES = registry.names()
N_BOOT = 20
PAIR = (Run("quiet", "c0"), Run("quiet", "c1"))
OWN = {"calibration": {"pairs": (PAIR,), "n_boot_rank": N_BOOT}, "simulation": {"n_boot": N_BOOT, "campaign": "c0"},
       "clocks": {"n_boot": N_BOOT},
       # the synthetic corpus has no judge verdict folders: its references against its candidates, by role
       "compare": {"by": "role", "a": "reference", "b": "candidate"}}


def _options():
    return resolve_options(NAMES, shared={"n_boot": N_BOOT}, options=OWN)


def _json(value) -> str:
    return json.dumps(value, sort_keys=True)


@pytest.fixture(scope="module")
def corpus():
    c = synthesize(n_problems=6, n_tests=4, n_correctness_tests=1, n_solutions=8, n_incorrect=1, n_candidates=2,
                   n_repeats=3, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), seed=5).corpus
    # a second clock: CPU time a little below the wall time, with its own noise, so the clocks audit compares two
    rng = np.random.default_rng(11)
    c["cpu_s"] = c["duration_s"] * rng.uniform(0.85, 0.99, len(c))
    return c


@pytest.fixture(scope="module")
def whole(corpus):
    return run_audits(corpus, options=_options())


def test_the_registry_lists_every_audit_once_with_its_declarations():
    assert len(set(NAMES)) == len(NAMES) and {"reliability", "clocks"} <= set(NAMES)
    for name in NAMES:
        audit = registry.get(name)
        assert audit.name == name and registry.options_of(name) is audit.Options
        assert registry.thresholds_of(name) is audit.Thresholds


#: The audits the Dask engine runs: through their partition steps, the same in memory (audits.protocol.partition).
ON_DASK = [n for n in NAMES if registry.get(n).dask is None]


def test_an_audit_has_partition_steps_or_declares_why_not():
    """An audit on the Dask engine defines its own plan, part and combine (the in-memory engine runs the same
    ones: :meth:`Audit.compute` is the protocol's, one partition); any other says why it is not on Dask and
    computes in memory on its own."""
    from audits.protocol.audit import Audit

    assert ON_DASK
    for name in NAMES:
        cls = type(registry.get(name))
        steps = {step: getattr(cls, step) is not getattr(Audit, step) for step in ("plan", "partition_part", "combine")}
        if name in ON_DASK:
            assert all(steps.values()), (name, steps)
            assert cls.compute is Audit.compute, name  # in memory: the same part and combine, one partition
        else:
            assert isinstance(cls.dask, str) and cls.compute is not Audit.compute, name


@pytest.mark.parametrize("name", NAMES)
def test_is_in_audit_all_and_equals_its_own_run(name, corpus, whole):
    audit = registry.get(name)
    assert name in whole.results, whole.skipped
    alone = audit.run(corpus, _options()[name])
    assert _json(whole.to_dict()[name]) == _json(json.loads(json.dumps(audit.to_json(alone))))


@pytest.mark.parametrize("name", NAMES)
def test_is_in_the_report(name):
    from audits.report.results import PARAMETERS

    audit = registry.get(name)
    assert audit.report and set(audit.report) <= set(PARAMETERS), audit.report


@pytest.mark.parametrize("name", NAMES)
def test_rows_permuted_give_the_same_json(name, corpus):
    audit = registry.get(name)
    shuffled = corpus.iloc[np.random.default_rng(3).permutation(len(corpus))].reset_index(drop=True)
    first = audit.to_json(audit.run(corpus, _options()[name]))
    assert _json(json.loads(json.dumps(first))) == _json(json.loads(json.dumps(
        audit.to_json(audit.run(shuffled, _options()[name])))))


@pytest.mark.parametrize("name", NAMES)
def test_a_tiny_corpus_gives_na_findings_not_a_crash(name):
    """One problem, one test, two references, one repeat (no second clock): what cannot be measured is n/a with
    its reason, and a value that is not a number is never a verdict."""
    tiny = synthesize(n_problems=1, n_tests=1, n_correctness_tests=0, n_solutions=2, n_incorrect=0, n_candidates=0,
                      n_repeats=1, seed=3, campaigns=(("c0", 1.0, 0.0), ("c1", 0.6, 0.05))).corpus
    audit = registry.get(name)
    try:
        result = audit.run(tiny, _options()[name])
    except Skip as exc:  # allowed: an audit the corpus cannot support says why
        assert str(exc)
        return
    findings = audit.findings(result)
    assert findings and any(f.level == "n/a" for f in findings), [(f.metric, f.level) for f in findings]
    for f in findings:
        undefined = f.value is None or (isinstance(f.value, float) and math.isnan(f.value))
        if f.level == "n/a":
            assert f.reason
        elif undefined:
            assert f.metric == "verdict", f  # the simulation's per-environment verdict has no value by design


@pytest.fixture(scope="module")
def dask_whole(corpus, client, tmp_path_factory):
    from audits.engine.partitioned import run_partitioned_whole_audit

    dataset = save_dataset(corpus, tmp_path_factory.mktemp("registry") / "d", problems_per_partition=2)
    return json.loads(json.dumps(run_partitioned_whole_audit(dataset, client=client, options=_options()).to_dict()))


@pytest.mark.parametrize("name", NAMES)
def test_on_the_dask_engine_equal_to_memory_or_declares_why_not(name, whole, dask_whole):
    audit = registry.get(name)
    if audit.dask is not None:
        assert isinstance(audit.dask, str) and len(audit.dask) > 20 and name not in dask_whole
        return
    assert name in dask_whole, sorted(dask_whole)
    assert _close(dask_whole[name], json.loads(json.dumps(whole.to_dict()[name]))) == []


def _step_counters(names):
    """``(install, collect)`` to run on every Dask worker (``client.run``): install wraps each named audit's
    ``partition_part`` there (on its class, the object both engines call) to count its calls; collect restores
    them and returns the counts. Nested functions, so that they are pickled by value."""

    def install():
        from audits.protocol import registry as r

        for name in names:
            cls = type(r.get(name))
            if "_counted_original" not in cls.__dict__:
                cls._counted_original = cls.partition_part
            cls._counted_calls = 0

            def counted(self, *args, _cls=cls, **kwargs):
                _cls._counted_calls += 1
                return _cls._counted_original(self, *args, **kwargs)

            cls.partition_part = counted

    def collect():
        from audits.protocol import registry as r

        out = {}
        for name in names:
            cls = type(r.get(name))
            out[name] = cls._counted_calls
            cls.partition_part = cls._counted_original
            del cls._counted_original, cls._counted_calls
        return out

    return install, collect


def _counting(monkeypatch, audit, calls: list):
    """Wrap ``audit``'s partition_part and combine (on its class) in this process, logging each call."""
    cls = type(audit)
    for step in ("partition_part", "combine"):
        real = getattr(cls, step)

        def counted(self, first, *args, _real=real, _step=step, **kwargs):
            calls.append((_step, len(first) if _step == "combine" else type(first).__name__))
            return _real(self, first, *args, **kwargs)

        monkeypatch.setattr(cls, step, counted)


@pytest.mark.parametrize("name", ON_DASK)
def test_both_engines_run_the_same_part_and_combine(name, corpus, client, tmp_path_factory, monkeypatch):
    """The in-memory engine (``audit all``) and the Dask engine call the same partition_part and combine of the
    registered audit: counted on the audit's class in this process and in the Dask workers. In memory: one part
    of the whole corpus and one combine of that one part per piece; on Dask: one part per group of partitions
    and piece (in the workers, none here) and one combine of every group's parts per piece (here)."""
    from audits.engine.partitioned.whole import _groups, run_partitioned_audits
    from audits.protocol.context import AuditContext

    audit = registry.get(name)
    options = _options()[name]
    n_pieces = len(audit.pieces(audit.plan(AuditContext(corpus), options)))
    memory: list = []
    _counting(monkeypatch, audit, memory)
    run_audits(corpus, [name], options={name: options})
    assert sorted(memory) == sorted([("partition_part", "AuditContext"), ("combine", 1)] * n_pieces), memory

    dataset = save_dataset(corpus, tmp_path_factory.mktemp("steps") / "d", problems_per_partition=2)
    groups = len(_groups(dataset, len(client.scheduler_info()["workers"])))
    assert groups >= 2
    install, collect = _step_counters([name])
    client.run(install)
    on_dask: list = []
    try:
        _counting(monkeypatch, audit, on_dask)
        whole = run_partitioned_audits(dataset, [name], options={name: options}, client=client)
    finally:
        counts = client.run(collect)
    assert name in whole.results, whole.skipped
    assert on_dask == [("combine", groups)] * n_pieces, on_dask  # the client combines every group's part
    assert sum(c[name] for c in counts.values()) == groups * n_pieces, counts  # the workers made them
