"""``speedaudit report -p campaign=001`` chooses the run named ``001``: a parameter that names runs keeps its text.

The parameters were read as plain YAML, so ``-p campaign=001`` became the number 1: the page failed ("campaign must
be a name or None ..., got 1", naming a campaign the user never gave) and the run ``001`` could not be chosen
beside a run ``1``; ``campaign=2024-05-01`` became a date. Checked with the real command on a corpus whose
campaigns are ``001``, ``1`` and ``2024-05-01``, and on the parser's values.
"""

from __future__ import annotations

import datetime
import json

import pytest
import yaml

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.report.narrative import FINDINGS_MIMETYPE
from audits.report.render import parse_parameter
from tests.cli_process import speedaudit

CAMPAIGNS = ("001", "1", "2024-05-01")


@pytest.mark.parametrize("given", [*CAMPAIGNS, "yes", "1.5", "0x10"])
def test_a_campaign_parameter_is_the_text_given(given):
    assert yaml.safe_load(given) != given  # plain YAML would change it (the independent reading)
    assert parse_parameter(f"campaign={given}") == ("campaign", given)
    assert parse_parameter(f"stored_run=[{given}, {given}]") == ("stored_run", [given, given])


def test_other_parameters_and_null_keep_their_yaml_meaning():
    assert parse_parameter("n_boot=20") == ("n_boot", 20)
    assert parse_parameter("campaign=null") == ("campaign", None)
    assert parse_parameter("campaign='001'") == ("campaign", "001")
    assert isinstance(yaml.safe_load("2024-05-01"), datetime.date)


@pytest.mark.slow
@pytest.mark.parametrize("chosen", ["001", "2024-05-01"])
def test_report_campaign_parameter_chooses_that_run(tmp_path, chosen):
    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=4, n_repeats=3, environments=("quiet",),
                        campaigns=tuple((c, 1.0, 0.0) for c in CAMPAIGNS), seed=4).corpus
    path = save_corpus(corpus, tmp_path / "c.parquet")
    done = speedaudit("report", path, "--audit", "reliability", "-p", f"campaign={chosen}", "-p", "n_boot=10",
                      "--workers", "1", "--out", tmp_path / "out")
    assert done.returncode in (0, 1), done.stderr  # 1: the findings' verdicts, not a failed page
    notebook = json.loads((tmp_path / "out" / "reliability.ipynb").read_text(encoding="utf-8"))
    findings = [f for cell in notebook["cells"] for out in cell.get("outputs", ())
                for f in out.get("data", {}).get(FINDINGS_MIMETYPE, {}).get("findings", ())]
    assert findings and {f["campaign"] for f in findings if f.get("environment")} == {chosen}  # that run alone
