"""`audit all` on a corpus whose only run has no correct reference rows (every program failed, or a hyperfine file
written with -i where every run exited non-zero): the simulation is skipped with its reason, the other audits
report. Before, the whole command failed with the simulation's error and nothing else was reported. When the
user names the run (--simulation-environment), it is still an error: they asked for that run."""

from __future__ import annotations

import json

import pytest

from audits.cli import main
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize


@pytest.fixture(scope="module")
def no_references(tmp_path_factory):
    corpus = synthesize(n_problems=5, n_repeats=3, seed=1).corpus
    body = corpus["role"].astype(str) != "floor"
    corpus["correct"] = corpus["correct"].where(~body, False)
    return save_corpus(corpus, tmp_path_factory.mktemp("noref") / "noref.parquet")


def test_the_simulation_is_skipped_with_its_reason_and_the_rest_reports(no_references, tmp_path, capsys):
    out = tmp_path / "all.json"
    assert main(["audit", "all", str(no_references), "--n-boot", "20", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "simulation: skipped" in printed and "no correct reference rows" in printed
    saved = json.loads(out.read_text())
    assert "simulation" in saved["skipped"] and "no correct reference rows" in json.dumps(saved["skipped"])
    assert "reliability" in saved["results"] and "simulation" not in saved["results"]


def test_a_named_run_without_references_is_still_an_error(no_references, capsys):
    assert main(["audit", "all", str(no_references), "--n-boot", "20", "--simulation-environment", "quiet"]) == 1
    assert "no correct reference rows" in capsys.readouterr().err
