"""One threshold shape (audits/protocol/thresholds.py) and one --threshold syntax on every command that judges.

``NAME=VALUE`` sets both levels of a limit, ``NAME.warn=VALUE`` / ``NAME.fail=VALUE`` one; the JSON of
each command shows the thresholds it judged with, and an unknown name is an error naming the known ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audits.checks.aggregation import AggregationThresholds
from audits.checks.calibration import CalibrationThresholds
from audits.cli import main
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.checks.discriminability import DiscriminabilityThresholds
from audits.checks.reliability import ReliabilityThresholds
from audits.checks.simulation import SimulationThresholds
from audits.protocol.thresholds import ThresholdError, Thresholds, parse_overrides
from stats.simulator import DegeneracyThresholds

ROOT = Path(__file__).resolve().parents[2]
TOP30 = str(ROOT / "fixtures" / "environments" / "top30.yaml")
CLASSES = (ReliabilityThresholds, DiscriminabilityThresholds, CalibrationThresholds, AggregationThresholds,
           SimulationThresholds)


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory):
    synth = synthesize(n_problems=6, n_tests=4, n_solutions=6, n_repeats=3, n_candidates=2,
                       campaigns=(("c0", 1.0, 0.0), ("c1", 0.7, 0.02)), seed=8)
    return save_corpus(synth.corpus, tmp_path_factory.mktemp("thr") / "c.parquet")


# (command, a limit, its warn field, its fail field)
COMMANDS = {
    "reliability": (["audit", "reliability", "{c}", "--n-boot", "10"], "repeat_cv"),
    "discriminability": (["audit", "discriminability", "{c}", "--n-boot", "10"], "gap"),
    "calibration": (["audit", "calibration", "{c}", "--source", "c0", "--target", "c1", "--n-boot", "10",
                     "--n-boot-rank", "5", "--families", "affine"], "spearman"),
    "aggregation": (["audit", "aggregation", "{c}", "--campaign", "c0", "--n-boot", "10",
                     "--aggregators", "mean_pct"], "stability"),
    "simulation": (["simulate", "{c}", "--campaign", "c0", "--n-boot", "10", "--reward-env", TOP30], "auc_sparse"),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_threshold_syntax_on_every_command(name, corpus_path, tmp_path, capsys):
    argv, limit = COMMANDS[name]
    argv = [a.replace("{c}", str(corpus_path)) for a in argv]
    cls = next(c for c in CLASSES if c.audit == name)
    default = cls()
    lower = limit in cls.lower_is_worse
    both = 0.42 if not lower else 0.33
    out = tmp_path / "a.json"
    assert main(argv + ["--threshold", f"{limit}={both}", "--json", str(out)]) == 0
    data = json.loads(out.read_text())["thresholds"]
    assert data[f"{limit}_warn"] == data[f"{limit}_fail"] == both
    one = getattr(default, f"{limit}_fail") * (1.5 if not lower else 0.5)
    assert main(argv + ["--threshold", f"{limit}.fail={one}", "--json", str(out)]) == 0
    data = json.loads(out.read_text())["thresholds"]
    assert data[f"{limit}_fail"] == pytest.approx(one)
    assert data[f"{limit}_warn"] == getattr(default, f"{limit}_warn")  # the other level is untouched
    capsys.readouterr()
    assert main(argv + ["--threshold", "nope.warn=1"]) == 1
    err = capsys.readouterr().err
    assert f"unknown {name} threshold 'nope.warn'" in err and limit in err and "Traceback" not in err
    assert main(argv + ["--threshold", f"{limit}=many"]) == 1
    assert "is not a number" in capsys.readouterr().err
    # limits in the wrong order are refused (for lower-is-worse limits warn must not lie below fail)
    wrong = (both, both * 3) if lower else (both * 3, both)
    assert main(argv + ["--threshold", f"{limit}.warn={wrong[0]}", "--threshold", f"{limit}.fail={wrong[1]}"]) == 1
    assert f"{limit}_warn must be" in capsys.readouterr().err


def test_every_audit_has_the_same_shape():
    for cls in CLASSES:
        assert issubclass(cls, Thresholds) and cls.__dataclass_params__.frozen
        d = cls()
        assert cls.limits() and set(cls.lower_is_worse) <= set(cls.limits())
        for limit in cls.limits():
            assert d.judge(limit, getattr(d, f"{limit}_fail")) == "fail"
            assert d.judge(limit, getattr(d, f"{limit}_warn")) in ("warn", "fail")
            assert d.judge(limit, float("nan"), nan="n/a") == "n/a"
        with pytest.raises(ThresholdError):
            d.override({"no_such_limit": 1.0})


def test_simulation_thresholds_are_the_simulators():
    # one source of truth for the simulator's defaults: the audit's class is built from stats' fields
    assert {k: v for k, v in SimulationThresholds().to_dict().items() if k != "profile"} == DegeneracyThresholds().to_dict()
    moved = SimulationThresholds.coerce({"noise": 0.2})
    assert DegeneracyThresholds(**{k: v for k, v in moved.to_dict().items() if k != "profile"}).noise_warn == DegeneracyThresholds(**{k: v for k, v in moved.to_dict().items() if k != "profile"}).noise_fail


def test_override_forms_agree():
    a = ReliabilityThresholds.coerce({"icc": 0.8})
    b = ReliabilityThresholds.coerce({"icc.warn": 0.8, "icc.fail": 0.8})
    c = ReliabilityThresholds.coerce({"icc_warn": 0.8, "icc_fail": 0.8})
    d = ReliabilityThresholds.coerce({"icc": {"warn": 0.8, "fail": 0.8}})
    assert a == b == c == d == ReliabilityThresholds(icc_warn=0.8, icc_fail=0.8)
    assert parse_overrides(["icc = 0.8", "repeat_cv.fail=0.3"]) == {"icc": 0.8, "repeat_cv.fail": 0.3}
    with pytest.raises(ThresholdError, match="NAME=VALUE"):
        parse_overrides(["icc"])
    assert AggregationThresholds.coerce({"min_problems": 4}).min_problems == 4  # a plain parameter
