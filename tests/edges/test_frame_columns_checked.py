"""A corpus DataFrame given to the audits without the loader (``speedaudit.run_all(frame)``, an audit function)
is refused with the column and rows when no audit can read it, as the file loader refuses a file.

Before, each of these reached an estimator: text in ``cpu_s``/``load_1m``/``run`` raised numpy's "could not
convert string to float"; a NaN ``repeat`` "'list' argument must have no negative elements"; a missing
``environment``/``campaign``/``repeat`` a bare KeyError; and a NaN ``run`` was cast to an arbitrary integer and
the audit went on. Found by the reliability helper. Each case is also given to the loader (normalize), which
reads or refuses it: the message names what normalize would do.
"""

from __future__ import annotations

import numpy as np
import pytest

import speedaudit
from audits.corpus.io import normalize
from audits.corpus.paths import CorpusError
from audits.corpus.synthetic import synthesize


@pytest.fixture(scope="module")
def base():
    return synthesize(n_problems=3, n_tests=2, n_solutions=4, n_repeats=2, seed=1).corpus


def _text_cpu(c):
    c["cpu_s"] = c["duration_s"].astype(object)
    c.loc[c.index[3], "cpu_s"] = "fast"
    return c, "cpu_s", "1 rows"


def _text_load(c):
    c["load_1m"] = "high"
    return c, "load_1m", f"{len(c)} rows"


def _text_run(c):
    c["run"] = "x"
    return c, "run", f"{len(c)} rows"


def _nan_run(c):
    c["run"] = 0.0
    c.loc[c.index[2], "run"] = np.nan
    return c, "run", "1 rows"


def _nan_repeat(c):
    c["repeat"] = c["repeat"].astype(float)
    c.loc[c.index[2], "repeat"] = np.nan
    return c, "repeat", "1 rows"


def _fractional_repeat(c):
    c["repeat"] = c["repeat"].astype(float)
    c.loc[c.index[5], "repeat"] = 0.5
    return c, "repeat", "1 rows"


@pytest.mark.parametrize("case", [_text_cpu, _text_load, _text_run, _nan_run, _nan_repeat, _fractional_repeat])
def test_a_column_no_audit_can_read_is_named_with_its_rows(base, case):
    frame, column, rows = case(base.copy())
    with pytest.raises(CorpusError) as caught:
        speedaudit.run_all(frame, n_boot=5)
    text = str(caught.value)
    assert f"column '{column}'" in text and rows in text and "row " in text, text
    assert "normalize(frame)" in text


@pytest.mark.parametrize("column", ["environment", "campaign", "repeat"])
def test_a_missing_column_is_named_and_normalize_fills_it(base, column):
    one_repeat = base.loc[(base["repeat"] == 0).to_numpy()]  # without repeat, two repeats would be one key
    frame = (one_repeat if column == "repeat" else base).drop(columns=column)
    with pytest.raises(CorpusError, match=f"no column '{column}'"):
        speedaudit.run_all(frame, n_boot=5)
    filled = normalize(frame.astype({c: str for c in ("problem", "test", "solution", "status")}))
    assert column in filled.columns  # what the message advises does give the column


def test_a_frame_of_numbers_as_objects_is_read_and_a_normalized_one_unchanged(base):
    """Numbers held as Python objects are numbers: read as they are; the shipped frame audits as before."""
    objects = base.copy()
    objects["cpu_s"] = objects["duration_s"].astype(object)
    ours = speedaudit.run_all(objects, n_boot=5)
    theirs = speedaudit.run_all(base.assign(cpu_s=base["duration_s"]), n_boot=5)
    assert ours.to_dict().keys() == theirs.to_dict().keys()
