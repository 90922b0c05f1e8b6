"""Shared by the importer tests: run `speedaudit audit reliability` on an imported corpus and check its headline."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from audits.corpus.io import load_corpus


@pytest.fixture
def check_reliability_audit(tmp_path):
    """Audit ``corpus_path`` through the CLI; its median repeat CV must equal an independent pandas computation."""

    def check(corpus_path):
        report = tmp_path / "reliability.json"
        proc = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "reliability", str(corpus_path),
                               "--n-boot", "50", "--json", str(report)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        result = json.loads(report.read_text())
        # one figure per run (environment, campaign): e.g. each imported file is a campaign of its own
        cvs = {(f["environment"], f["campaign"]): f["value"] for f in result["findings"]
               if f["metric"] == "median_repeat_cv"}
        corpus = load_corpus(corpus_path)
        ok = corpus.loc[(corpus.status == "ok") & (corpus.role != "floor")]
        cells = ok.groupby(["environment", "campaign", "problem", "test", "solution"], observed=True)["duration_s"]
        cv = (cells.std(ddof=1) / cells.mean()).dropna()
        expected = cv.groupby(level=["environment", "campaign"], observed=True).median()
        assert set(cvs) == {(str(e), str(c)) for e, c in expected.index}
        for (env, camp), value in expected.items():
            assert cvs[str(env), str(camp)] == pytest.approx(float(value), rel=1e-6)
        return result

    return check
