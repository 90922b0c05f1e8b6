"""Shared by the importer tests: run `speedaudit audit reliability` on an imported corpus and check its headline."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats

from audits.corpus.io import load_corpus


@pytest.fixture
def check_reliability_audit(tmp_path):
    """Audit ``corpus_path`` through the CLI; its judged median repeat CV (corrected for the repeat count,
    sqrt(exp(s2_log / m) - 1) with m = median(chi2_{n-1}) / (n-1)) must equal an independent pandas + scipy
    computation."""

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
        ok = ok.assign(log_d=np.log(ok["duration_s"].to_numpy(dtype=float)))
        cells = ok.groupby(["environment", "campaign", "problem", "test", "solution"], observed=True)["log_d"]
        n = cells.count()
        m = scipy.stats.chi2.median(n - 1) / (n - 1)
        cv = np.sqrt(np.expm1(cells.var(ddof=1) / m)).dropna()
        expected = cv.groupby(level=["environment", "campaign"], observed=True).median()
        assert set(cvs) == {(str(e), str(c)) for e, c in expected.index}
        for (env, camp), value in expected.items():
            assert cvs[str(env), str(camp)] == pytest.approx(float(value), rel=1e-6)
        return result

    return check
