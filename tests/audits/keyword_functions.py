"""The public keyword functions of every registered audit, for the tests generated over them
(tests/audits/test_option_defaults.py, tests/audits/test_keyword_validation.py): in memory
``audits.checks.NAME.run_NAME_audit``; on Dask, for the audits the Dask engine runs,
``audits.engine.partitioned.single.run_partitioned_NAME``; and the keywords a call must give."""

from __future__ import annotations

import importlib

from audits.corpus.runs import Run
from audits.engine.partitioned import single
from audits.protocol import registry
from stats.rewards import RewardEnvironment

NAMES = registry.names()
ON_DASK = [n for n in NAMES if registry.get(n).dask is None]
PAIR = (Run("quiet", "c0"), Run("quiet", "c1"))
ENV = RewardEnvironment.from_dict({"name": "top30", "post": {"tau": 30}})
#: Keywords a call must give (no usable default in the keyword function): the rest is left out.
REQUIRED = {"simulation": {"reward_environments": [ENV]}, "calibration": {"source": PAIR[0], "target": PAIR[1]},
            "compare": {"a": "A", "b": "B"}}


def in_memory(name):
    return getattr(importlib.import_module(f"audits.checks.{name}"), f"run_{name}_audit")


def on_dask(name):
    return getattr(single, f"run_partitioned_{name}")


#: ``(audit name, "memory" or "dask", the function's getter)`` of every keyword function.
FUNCTIONS = [(name, "memory", in_memory) for name in NAMES] + [(name, "dask", on_dask) for name in ON_DASK]
