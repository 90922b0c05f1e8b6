"""The quiet run of a synthetic corpus with plain-text problem names: what the renaming tests relabel."""

from __future__ import annotations

import pandas as pd

from audits.corpus.synthetic import synthesize


def quiet_run(**spec) -> pd.DataFrame:
    """``synthesize(**spec)``'s rows of the environment ``quiet``, problems as text (categoricals cannot take new
    names), index 0..n-1."""
    whole = synthesize(**spec).corpus
    whole = whole[whole["environment"] == "quiet"].reset_index(drop=True)
    whole["problem"] = whole["problem"].astype(str)
    return whole
