"""The corpus schema is stated once (audits.corpus.schema) and everything that needs it agrees with it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import stats.ranking
from audits.collect import campaign, sandbox, suite
from audits.corpus import io, schema, table
from audits.corpus.io import CorpusError, normalize
from audits.errors import UserError


def test_estimators_input_contract_agrees_with_the_schema():
    # stats keeps its own copy (it imports nothing of audits); the two must not drift apart.
    assert stats.ranking.STATUSES == schema.STATUSES
    assert stats.ranking.STATUSES[0] == "ok"


def test_collect_and_io_use_the_schema_objects():
    assert suite.TEST_KINDS is schema.TEST_KINDS
    assert set(sandbox.RUN_STATUSES) | set(schema.CHECKER_STATUSES) == set(schema.STATUSES)
    assert io.KEY is schema.KEY and table.REQUIRED is schema.REQUIRED and table.ROLES is schema.ROLES
    spec = campaign.CampaignSpec()
    assert (spec.environment, spec.campaign) == (schema.OPTIONAL_DEFAULTS["environment"],
                                                 schema.OPTIONAL_DEFAULTS["campaign"])
    assert spec.test_kinds == schema.TEST_KINDS


def test_every_error_is_a_user_error():
    for cls in (io.CorpusError, suite.SuiteError, sandbox.SandboxError, campaign.CampaignError):
        assert issubclass(cls, UserError), cls
    from audits.report.render import ReportError
    from audits.checks.reward_environments import EnvironmentFileError
    assert issubclass(ReportError, UserError) and issubclass(EnvironmentFileError, UserError)


def _raw(**extra):
    frame = pd.DataFrame({"problem": "p", "test": "t", "solution": ["s", "s", "s", "s"], "duration_s": 1.0,
                          "status": "ok", "repeat": [0, 0, 1, 1]})
    return frame.assign(**extra)


def test_normalize_dtypes_follow_the_schema():
    out = normalize(_raw(run=[0, 1, 0, 1], language="python"))
    for name, column in schema.COLUMNS.items():
        if name not in out.columns:
            continue
        if column.dtype == "category":
            assert isinstance(out[name].dtype, pd.CategoricalDtype), name
        elif column.dtype != "object":
            assert out[name].dtype == np.dtype(column.dtype), name
        if column.values is not None:
            assert list(out[name].cat.categories) == list(column.values), name
    for name, default in schema.OPTIONAL_DEFAULTS.items():
        if name == "repeat":  # given in the raw frame
            continue
        assert (out[name].astype(object) == default).all(), name


def test_run_joins_the_duplicate_key_only_when_present():
    # Two process runs inside one repeat are distinct executions ...
    assert len(normalize(_raw(run=[0, 1, 0, 1]))) == 4
    # ... without the column the same rows collide.
    with pytest.raises(CorpusError, match="duplicate"):
        normalize(_raw())
    with pytest.raises(CorpusError, match="column 'run'"):
        normalize(_raw(run=[0, -1, 0, 1]))
