"""The n/a level of a finding: what a corpus cannot measure is never a pass, and never the worst."""

from __future__ import annotations

import json

import pytest

from audits.cli._common import exit_status
from audits.protocol.findings import NA, Finding, findings_table, level_counts, worst_level


def _f(level, metric="m", **kw):
    return Finding(level, metric, 1.0, "warn >= 1", "msg", **kw)


def test_na_is_ignored_by_the_worst_level_and_counted_apart():
    na = Finding.not_available("icc", "one repeat per cell", environment="host/x", campaign="a:b")
    assert na.level == NA and na.reason == "one repeat per cell" and na.value is None
    assert worst_level([na, _f("pass")]) == "pass"
    assert worst_level([na, _f("warn"), _f("pass")]) == "warn"
    assert worst_level([na]) == NA  # nothing judged: not a pass
    assert worst_level([]) == "pass"
    assert level_counts([na, na, _f("fail")]) == {"pass": 0, "warn": 0, "fail": 1, NA: 2}


def test_na_needs_a_reason_and_shows_as_na():
    with pytest.raises(ValueError, match="reason"):
        Finding(NA, "icc", None, None, "no reason given")
    with pytest.raises(ValueError, match="level must be one of"):
        Finding("skip", "icc", None, None, "x")
    na = Finding.not_available("icc", "one repeat per cell", environment="host/x", campaign="a:b")
    line = findings_table([na])
    assert line.startswith("n/a   [host/x · a:b] icc: not measured: one repeat per cell")
    data = json.loads(json.dumps(na.to_dict()))
    assert data["level"] == "n/a" and data["reason"] == "one repeat per cell" and data["campaign"] == "a:b"


def test_strict_exit_status_fails_only_on_fail():
    class Audit:
        def __init__(self, findings):
            self.findings = findings

    class Args:
        strict = True

    assert exit_status(Audit([Finding.not_available("x", "why")]), Args()) == 0
    assert exit_status(Audit([Finding.not_available("x", "why"), _f("fail")]), Args()) == 1
