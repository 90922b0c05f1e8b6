"""Options declared once (audits.checks.declared), validated in one place with one message, and the command line
generated from them: flags and --help per audit, `audit all`'s shared and namespaced flags, --profile and
--threshold in `audit all`, the deprecated --floor-ms, and a --help that loads no numeric library."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from audits.cli import build_parser
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.protocol import registry
from audits.protocol.params import OptionError, flag_of

REPO = Path(__file__).resolve().parents[2]


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audits.cli", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True)


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("options") / "c.parquet"
    save_corpus(synthesize(n_problems=5, n_tests=3, n_solutions=6, n_repeats=3, seed=2,
                           campaigns=(("c0", 1.0, 0.0), ("c1", 0.7, 0.02))).corpus, path)
    return path


@pytest.mark.parametrize("name", registry.names())
def test_every_declared_default_is_allowed_and_every_flag_is_generated(name):
    cls = registry.options_of(name)
    defaults = cls()  # validating the defaults: a declaration whose default breaks its constraints fails here
    parser = build_parser()  # every registered audit is a command `speedaudit audit NAME`
    sub = parser._subparsers._group_actions[0].choices["audit"]._subparsers._group_actions[0].choices[name]
    flags = {s for a in sub._actions for s in a.option_strings}
    for f in fields(cls):
        if f.metadata.get("cli"):
            assert flag_of(f) in flags, (name, f.name)
            help_text = next(a.help for a in sub._actions if flag_of(f) in a.option_strings)
            assert "default" in help_text  # generated: the default and what is allowed
    assert defaults.to_dict()


def test_one_message_names_the_option_the_value_and_what_is_allowed(corpus_path):
    from audits.checks.reliability import run_reliability_audit  # noqa: F401 (the library path)

    with pytest.raises(OptionError) as library:
        registry.get("reliability").options({"target_reliability": 1.5})
    proc = _cli("audit", "reliability", corpus_path, "--target-reliability", "1.5")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    message = "reliability option target_reliability must be a number in (0, 1) (--target-reliability)"
    assert message in str(library.value) and message in proc.stderr
    assert "got 1.5" in str(library.value) and "got '1.5'" in proc.stderr
    with pytest.raises(OptionError, match="unknown reliability option n_bot"):
        registry.get("reliability").options({"n_bot": 3})


def test_floor_ms_still_works_with_a_deprecation_note(corpus_path, tmp_path):
    old = _cli("audit", "discriminability", corpus_path, "--floor-ms", "25", "--n-boot", "10", "--json", tmp_path / "a.json")
    new = _cli("audit", "discriminability", corpus_path, "--floor-s", "0.025", "--n-boot", "10", "--json", tmp_path / "b.json")
    assert old.returncode == 0 and new.returncode == 0, old.stderr + new.stderr
    assert "--floor-ms is deprecated" in old.stderr and "--floor-ms" not in new.stderr
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads((tmp_path / "b.json").read_text())
    both = _cli("audit", "discriminability", corpus_path, "--floor-ms", "25", "--floor-s", "0.025")
    assert both.returncode == 1 and "not both" in both.stderr


def test_audit_all_takes_profile_threshold_and_run_selection(corpus_path, tmp_path):
    out = tmp_path / "all.json"
    proc = _cli("audit", "all", corpus_path, "--n-boot", "10", "--simulation-n-boot", "10", "--clocks-n-boot", "10",
                "--campaign", "c0", "--profile", "benchmark", "--threshold", "repeat_cv=0.01",
                "--json", out)
    assert proc.returncode == 0, proc.stderr
    whole = json.loads(out.read_text())
    # one environment, unordered campaigns: no calibration pair; no accepted/time_limit_exceeded sets: no comparison
    assert set(registry.names()) - {"calibration", "compare"} <= set(whole)
    assert {"calibration", "compare"} <= set(whole["skipped"]) and "names no execution" in whole["skipped"]["compare"]
    assert [r["campaign"] for r in whole["reliability"]["runs"]] == ["c0"]
    assert whole["reliability"]["thresholds"]["profile"] == "benchmark"
    assert whole["reliability"]["thresholds"]["repeat_cv_warn"] == 0.01
    unknown = _cli("audit", "all", corpus_path, "--threshold", "no_such_limit=3")
    assert unknown.returncode == 1 and "no audit has a threshold 'no_such_limit'" in unknown.stderr


def test_audit_all_thresholds_by_audit_name():
    import argparse

    from audits.cli.audit_all import _thresholds
    from audits.protocol.thresholds import ThresholdError

    args = argparse.Namespace(threshold=["reliability.icc.fail=0.5", "agreement=0.7"], profile="reward")
    assert _thresholds(args) == {"reliability": {"icc.fail": 0.5}, "clocks": {"agreement": 0.7}}
    with pytest.raises(ThresholdError, match="unknown reliability threshold 'nope'"):
        _thresholds(argparse.Namespace(threshold=["reliability.nope=1"], profile="reward"))


def test_help_loads_no_numeric_library():
    """`speedaudit --help` and every `speedaudit COMMAND --help` build the parsers from the declarations alone
    (issue 26: within 0.3 s; numpy alone is more): counted in a fresh interpreter."""
    code = ("import sys, contextlib, io\nfrom audits.cli import build_parser\n"
            "p = build_parser()\nwith contextlib.redirect_stdout(io.StringIO()):\n"
            "    p.format_help()\n    [c.format_help() for a in p._subparsers._group_actions for c in a.choices.values()]\n"
            "print(sorted(m for m in ('numpy', 'pandas', 'scipy', 'matplotlib', 'pyarrow') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout
