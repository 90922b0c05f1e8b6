"""What a corpus cannot measure is said once, without placeholder dashes.

On the overview of a real archive's report (oj-lab/problem-packages, one reference per problem): the worst
finding of an audit with only n/a findings read "calibration_pair = - - not measured: ...", and the "Not measured
on this corpus" paragraph repeated one 180-character reason for each of the seven reward environments.
"""

from __future__ import annotations

from audits.protocol.findings import Finding
from audits.report.narrative.common import finding_text, verdict_sentence
from audits.report.narrative.overview import describe_not_measured

REASON = "no rollout was scored: a problem needs >= 2 correct references"


def test_an_n_a_finding_reads_metric_colon_reason():
    f = Finding.not_available("calibration_pair", "no pair of runs was named", environment="e", campaign="c")
    assert finding_text(f) == "[e · c] calibration_pair: not measured: no pair of runs was named"
    assert "= -" not in verdict_sentence([f])
    judged = Finding("warn", "icc", 0.8, "warn <= 0.9", "one repeat does not order them", environment="e")
    assert finding_text(judged) == "[e] icc = 0.8 - one repeat does not order them"


def test_places_with_the_same_reason_and_metrics_share_one_entry():
    findings = [Finding.not_available(metric, REASON, environment="e", campaign="c", subject=subject)
                for subject in ("top30", "uniform", "ranked") for metric in ("auc", "curve_noise")]
    findings.append(Finding.not_available("auc", REASON, environment="f", campaign="c", subject="top30"))
    text = describe_not_measured({"reward simulation": findings})
    assert text.count(REASON) == 2, text  # the three places' two metrics once, the other place's one metric once
    assert "auc, curve_noise (e · c · top30; e · c · uniform; e · c · ranked): " + REASON in text, text
    assert "auc (f · c · top30): " + REASON in text, text
