"""The public keyword functions of every registered audit, for the tests generated over them
(tests/audits/test_option_defaults.py, tests/audits/test_keyword_validation.py): in memory
``audits.checks.NAME.run_NAME_audit``; on Dask, for the audits the Dask engine runs,
``audits.engine.partitioned.single.run_partitioned_NAME``; and the keywords a call must give."""

from __future__ import annotations

import importlib

import numpy as np

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


def keyword_corpora(*, n_problems: int, n_tests: int, n_solutions: int, n_candidates: int, n_pair_problems: int) -> dict:
    """The corpora the keyword functions are called on: ``"default"`` (two campaigns of one environment, the
    second drifted as the study measured, with a second clock ``cpu_s``) and ``"compare"`` (sets A/ and B/)."""
    from audits.corpus.io import normalize
    from audits.corpus.synthetic import synthesize
    from audits.corpus.synthetic_pairs import synthesize_pairs

    c = synthesize(n_problems=n_problems, n_tests=n_tests, n_correctness_tests=1, n_solutions=n_solutions,
                   n_incorrect=1, n_candidates=n_candidates, n_repeats=3,
                   campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), seed=3).corpus
    c["cpu_s"] = c["duration_s"] * np.random.default_rng(11).uniform(0.85, 0.99, len(c))  # a second clock
    pairs = normalize(synthesize_pairs(n_problems=n_pair_problems, share_a=0.7, share_tie=0.2, seed=0).corpus)
    return {"default": c, "compare": pairs}
