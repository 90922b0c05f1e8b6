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


def _flags(argv: list[str]) -> set[str]:
    """The long options a command's --help lists (its parser, found through the real command line)."""
    import argparse

    from audits.cli._main import build_parser

    parser = build_parser()
    for word in argv:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--")}


def test_every_command_that_takes_a_pair_declares_the_same_flags():
    """One declaration (PAIR_FLAGS): audit calibration, calibrate and audit all take the same pair flags, audit all
    its environment of both runs as --pair-environment (its --environment selects the other audits' runs)."""
    from audits.cli._common import PAIR_FLAGS

    pair = {flag for flag, _ in PAIR_FLAGS if flag} | {"--key"}
    for argv, both in ((["audit", "calibration"], "--environment"), (["calibrate"], "--environment"),
                       (["audit", "all"], "--pair-environment")):
        assert pair | {both} <= _flags(argv), argv


def test_audit_all_names_its_own_flag_when_the_pair_disagrees(busy_corpus, capsys):
    code = main(["audit", "all", str(busy_corpus), "--pair-environment", "quiet", "--source-environment", "busy",
                 "--source-campaign", "c0", "--target-campaign", "c0", "--n-boot", "30"])
    err = capsys.readouterr().err
    assert code != 0 and "--pair-environment 'quiet' and --source-environment 'busy' disagree" in err
