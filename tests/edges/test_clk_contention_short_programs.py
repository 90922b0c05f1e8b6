"""Contention on programs shorter than CONTENTION_MIN_CPU_S: n/a with the reason and the right advice.

The wall/CPU ratio is read from executions of >= 0.1 s of CPU only: every execution pays a fixed start-up cost in
wall time (exec, the sandbox, page faults), a cost of the process, not a share of the program's time, so the limit
is in seconds and a corpus of nanosecond programs gets contention n/a (audits.checks.declared.clocks). The reason
of that n/a told a corpus that has its CPU times to "record CPU time beside the wall time", advice that cannot
help; it now says why the limit is absolute and to time executions of >= 0.1 s. Planted: every program waits 1.5
times its CPU time (wall/CPU 2.5, fail); at ten seconds the verdict is fail, at nanoseconds n/a, and a corpus
without cpu_s keeps its advice to record it.
"""

from __future__ import annotations

import pytest

from audits.checks.clocks import CONTENTION_MIN_CPU_S
from audits.checks.reliability import run_reliability_audit
from audits.corpus.synthetic import synthesize
from audits.report.narrative import describe_contention


def _audit(scale: float, cpu: bool = True):
    corpus = synthesize(n_problems=3, n_tests=2, n_solutions=4, n_repeats=2, base_seconds=(0.5, 1.0), seed=0).corpus
    corpus["duration_s"] = corpus["duration_s"] * scale
    if cpu:
        corpus["cpu_s"] = corpus["duration_s"]
        corpus["duration_s"] = corpus["duration_s"] * 2.5
    audit = run_reliability_audit(corpus, n_boot=0)
    return audit, next(f for f in audit.findings if f.metric == "contention")


def test_ten_second_programs_are_judged():
    _, found = _audit(10.0)
    assert found.level == "fail" and found.value == pytest.approx(2.5)


@pytest.mark.parametrize("scale", [1e-7, 1e-3])
def test_short_programs_with_cpu_times_are_na_with_advice_that_can_help(scale):
    audit, found = _audit(scale)
    assert found.level == "n/a"
    assert f"at least {CONTENTION_MIN_CPU_S:g} s of CPU" in found.reason
    assert "record CPU time" not in found.reason  # the corpus has it
    assert f"time executions of >= {CONTENTION_MIN_CPU_S:g} s of CPU" in found.reason
    assert "start-up cost" in found.reason and "not a share of the program's time" in found.reason
    assert "record CPU time" not in describe_contention(audit)


def test_a_corpus_without_cpu_times_is_told_to_record_them():
    _, found = _audit(1.0, cpu=False)
    assert found.level == "n/a" and "no cpu_s column" in found.reason and "record CPU time" in found.reason
