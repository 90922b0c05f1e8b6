"""The reliability page states the absolute repeat sd and the sandbox floor in the unit that reads best.

In ms with three significant digits, a corpus of microsecond benchmarks (every duration times 1e-4) read "an
absolute sd of 0.00112 ms" and "the sandbox floor is 0.000549 ms"; they read in the unit that reads best now.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from audits.checks.discriminability import run_discriminability_audit
from audits.checks.reliability import run_reliability_audit
from audits.report.inputs import load_corpora
from audits.report.narrative import describe_discriminability, describe_reliability

ROOT = Path(__file__).resolve().parents[2]
SCALE = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}


def _seconds(text: str) -> float:
    """The seconds of "349 ns": the number must read between 1 and 1000 of its unit."""
    number, unit = text.split()
    assert 1 <= float(number) < 1000, text
    return float(number) * SCALE[unit]


@pytest.mark.parametrize("factor", [1e-4, 1.0, 1000.0])
def test_durations_read_in_their_own_unit(factor):
    corpus = load_corpora([str(ROOT / "fixtures" / "corpora" / "quiet-a.parquet")])
    for column in ("duration_s", "cpu_s", "timeout_s", "wall_s"):
        corpus[column] = corpus[column] * factor
    reliability = run_reliability_audit(corpus, n_boot=0)
    (env,) = reliability.runs.values()
    (sd,) = re.findall(r"an absolute sd of (\S+ \S+?)\.", describe_reliability(reliability))
    assert _seconds(sd) == pytest.approx(env.median_abs_sd_ms.estimate / 1000, rel=5e-3)
    discriminability = run_discriminability_audit(corpus, n_boot=0)
    (denv,) = discriminability.runs.values() if hasattr(discriminability, "runs") else (None,)
    (floor,) = re.findall(r"sandbox floor is (\S+ \S+) \(", describe_discriminability(discriminability))
    assert _seconds(floor) == pytest.approx(denv.floor_s, rel=5e-3)
