"""The clocks audit's reference run named by its environment alone says which campaign it took, and how to choose.

``speedaudit audit clocks --reference-environment E`` (no ``--reference-campaign``) takes one campaign of E as the
truth of ``faithfulness`` by the one-run rule (the earliest by timestamp, else the first by name). Before, nothing
said which: the table's ``faithfulness`` column came from a run the user never chose. The terminal, the JSON
(``reference``, ``reference_note``) now name the campaign picked, the others, and ``--reference-campaign``.

Planted truth: campaign ``a-late`` is the later one by timestamp but the first by name, so a rule by name would
pick it; ``z-early`` is the earliest. The two campaigns order the solutions differently (``a-late`` reverses the
cpu_s order of half the solutions), so the faithfulness figures tell the reference runs apart: the figures of the
environment-only call must equal those of ``--reference-campaign z-early`` and differ from ``a-late``'s.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from audits.corpus.io import save_corpus
from tests.cli_process import speedaudit


def _corpus() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    rows = []
    for campaign, day, flip in (("a-late", "2026-03-02", True), ("z-early", "2026-03-01", False)):
        for p in range(3):
            for t in range(3):
                for s in range(5):
                    for r in range(2):
                        wall = 0.05 * (1 + s) * (1 + t) * np.exp(rng.normal(0, 0.01))
                        cpu_rank = (4 - s) if (flip and s % 2) else s  # a-late: another cpu order
                        rows.append({"environment": "quiet", "campaign": campaign, "problem": f"p{p}",
                                     "test": f"t{t}", "solution": f"s{s}", "repeat": r, "duration_s": wall,
                                     "cpu_s": 0.05 * (1 + cpu_rank) * (1 + t) * np.exp(rng.normal(0, 0.01)),
                                     "status": "ok", "role": "reference", "correct": True,
                                     "test_kind": "optimization",
                                     "timestamp": pd.Timestamp(day) + pd.Timedelta(seconds=len(rows))})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("clocks ref") / "two campaigns.parquet"
    save_corpus(_corpus(), path)
    return path


def _run(corpus, tmp_path, name, *ref):
    out = tmp_path / f"{name}.json"
    done = speedaudit("audit", "clocks", corpus, "--n-boot", "5", "--json", out, *ref)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(out.read_text())


def _faithfulness(result) -> dict:
    return {(r["environment"], r["campaign"], r["measure"]): r["faithfulness"] for r in result["table"]}


def test_environment_alone_names_the_campaign_picked(corpus, tmp_path):
    done, result = _run(corpus, tmp_path, "alone", "--reference-environment", "quiet")
    _, early = _run(corpus, tmp_path, "early", "--reference-environment", "quiet", "--reference-campaign", "z-early")
    _, late = _run(corpus, tmp_path, "late", "--reference-environment", "quiet", "--reference-campaign", "a-late")
    # the planted difference: the two reference runs give other faithfulness figures
    assert _faithfulness(early) != _faithfulness(late)
    # the one-run rule took the earliest by timestamp, not the first by name
    assert _faithfulness(result) == _faithfulness(early)
    assert result["reference"] == ["quiet", "z-early"]
    for text in (result["reference_note"], done.stdout):
        assert "z-early" in text and "a-late" in text, text
        assert "--reference-campaign" in text and "timestamp" in text, text
    # named whole: the run is stated, with nothing to explain
    assert early["reference"] == ["quiet", "z-early"] and early["reference_note"] == ""


def test_without_a_reference_nothing_is_said(corpus, tmp_path):
    done, result = _run(corpus, tmp_path, "none")
    assert result["reference"] is None and result["reference_note"] == ""
    assert "reference run" not in done.stdout
