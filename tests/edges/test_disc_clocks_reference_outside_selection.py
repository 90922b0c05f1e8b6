"""``speedaudit audit clocks --campaign A --reference-campaign B``: the reference run need not be an audited run.

The faithfulness column compares each audited run's order of the solutions with the reference run's (a long
quiet CPU-time campaign). With the audited runs narrowed by --environment / --campaign, the reference run was
looked up in the narrowed rows only and refused as "the reference run quiet · c1 has no ok execution with a
cpu_s" although it has every one. It is read from the whole corpus: the audited run's faithfulness is the one
the audit of every run gives it.
"""

from __future__ import annotations

import json
import math

import pytest

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from tests.cli_process import speedaudit


def _cli(*args):
    return speedaudit(*args)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    frame = synthesize(n_problems=4, n_tests=3, n_solutions=4, n_repeats=2,
                       campaigns=(("c0", 1.0, 0.0), ("c1", 1.1, 0.0)), seed=1).corpus
    frame["cpu_s"] = frame["duration_s"] * 0.9
    path = tmp_path_factory.mktemp("reference") / "two campaigns.parquet"
    save_corpus(frame, path)
    return path


def _faithfulness(corpus, out, *selection):
    done = _cli("audit", "clocks", corpus, "--n-boot", "10", "--reference-environment", "quiet",
                "--reference-campaign", "c1", "--json", out, *selection)
    assert done.returncode == 0, done.stderr
    table = json.loads(out.read_text())["table"]
    return {(r["campaign"], r["measure"]): r["faithfulness"] for r in table}


def test_reference_outside_the_selected_runs(corpus, tmp_path):
    narrowed = _faithfulness(corpus, tmp_path / "c0.json", "--campaign", "c0")
    whole = _faithfulness(corpus, tmp_path / "all.json")
    assert set(narrowed) == {("c0", "duration_s"), ("c0", "cpu_s")}
    for key, value in narrowed.items():
        assert value is not None and math.isfinite(value)
        assert value == pytest.approx(whole[key])
