"""Options every audit command shares: --json writes what the audit returns, --strict exits 1 on a fail."""

from __future__ import annotations

import json

import pytest

from pathlib import Path

from audits.cli import main
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize


@pytest.fixture(scope="module")
def busy_corpus(tmp_path_factory):
    synth = synthesize(n_problems=8, n_tests=4, n_solutions=6, n_incorrect=0, n_candidates=0, n_repeats=3,
                       busy=True, seed=4)
    return save_corpus(synth.corpus, tmp_path_factory.mktemp("cli") / "c.parquet")


@pytest.mark.parametrize("argv", [
    ["audit", "calibration", "{corpus}", "--source", "busy", "--target", "quiet", "--n-boot", "30",
     "--n-boot-rank", "20"],
    ["audit", "reliability", "{corpus}", "--n-boot", "30"],
    ["audit", "aggregation", "{corpus}", "--environment", "busy", "--n-boot", "30", "--aggregators",
     "mean_pct,worst_pct"],
    ["audit", "simulation", "{corpus}", "--environment", "busy", "--n-boot", "30", "--reward-env",
     "fixtures/environments/top30.yaml", "--reward-env", "fixtures/environments/uniform_timeout.yaml"],
])
def test_strict_and_json(busy_corpus, tmp_path, capsys, argv):
    root = Path(__file__).resolve().parents[2]
    argv = [a.replace("{corpus}", str(busy_corpus)).replace("fixtures/", f"{root}/fixtures/") for a in argv]
    out = tmp_path / "r.json"
    assert main(argv + ["--json", str(out)]) == 0  # findings never change the exit status by default
    findings = json.loads(out.read_text())["findings"]
    failed = any(f["level"] == "fail" for f in findings)
    assert main(argv + ["--strict"]) == (1 if failed else 0)
    if argv[1] == "calibration":  # the busy worker cannot stand in for the quiet machine
        assert failed
    assert "wrote" in capsys.readouterr().out
