"""A corpus whose problems have one reference each prints n/a, never NaN or nan, in the command line's tables.

Found on a real archive (oj-lab/problem-packages, collected with ``speedaudit collect``: 14 problems, one accepted
C++ solution each). ``speedaudit audit all`` printed ``NaN`` in the discriminability and clocks tables (the
reliability table already wrote ``n/a``), ``cpu_s: nan over 0 problems`` for the clocks' rank agreement, and the
quietest run as a Python list (``['default', 'c0']``). Each is now ``n/a`` (with the reason where a line has
room), and a run reads ``default · c0`` as everywhere else.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from audits.checks.reliability import run_reliability_audit
from audits.cli import main
from audits.corpus.io import load_corpus, save_corpus
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import frame_text
from audits.report.narrative.reliability import describe_reliability, reliability_table

NAN_WORDS = re.compile(r"(?<![\w/])(nan|NaN|inf|-inf)(?![\w/])")


@pytest.fixture(scope="module")
def one_reference_output(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("one_ref")
    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=1, n_incorrect=0, n_candidates=0, n_repeats=3,
                        seed=5).corpus.copy()
    corpus["cpu_s"] = corpus["duration_s"] * 0.9  # a second clock, as collect records
    return tmp, save_corpus(corpus, tmp / "one.parquet")


def test_no_nan_in_any_table_or_line(one_reference_output, capsys):
    tmp, path = one_reference_output
    assert main(["audit", "all", str(path), "--json", str(tmp / "one.json"), "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    assert "Clocks audit" in out and "Discriminability audit" in out
    assert not NAN_WORDS.findall(out), [line for line in out.splitlines() if NAN_WORDS.search(line)]
    assert "cpu_s: n/a (no problem has two solutions scored under both clocks)" in out
    assert "on the quietest run quiet · c0 (" in out and "['" not in out


def test_frame_text_writes_every_undefined_figure_as_n_a():
    frame = pd.DataFrame({"run": ["a", "b", "c"], "icc": [0.5, np.nan, np.inf], "n": [1, 2, 3]})
    lines = frame_text(frame).splitlines()
    assert lines[1].split() == ["a", "0.5", "1"] and lines[2].split() == ["b", "n/a", "2"]
    assert lines[3].split() == ["c", "n/a", "3"]
    assert frame_text(frame.iloc[:0]) == "(no data)"


def test_the_reliability_page_says_n_a_with_the_reason_not_dashes(one_reference_output):
    """The page's paragraph read "moves by - points ... ICC(A,1) is - (no CI) (n=0); - repeats would give ..."
    and its table "- (no CI) (n=0)": each figure it cannot read is now one n/a sentence with its finding's reason."""
    _, path = one_reference_output
    audit = run_reliability_audit(load_corpus(path), n_boot=20)
    text = describe_reliability(audit)
    assert "Rank drift of the score: n/a (no solution was scored twice)." in text, text
    assert "Test-retest agreement ICC(A,1): n/a (no optimization test has >= 2 correct references" in text, text
    assert "Repeats needed: n/a (" in text, text
    assert " - " not in text and "(n=0)" not in text, text
    table = reliability_table(audit)
    assert (table.loc[:, ["mean rank sd (points)", "ICC(A,1)", "worst rank range", "repeats needed"]] == "n/a").all().all(), table.T
