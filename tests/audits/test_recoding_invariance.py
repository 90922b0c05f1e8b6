"""Ids and categories are data, never an order (issue 24, item 8).

The same rows audited (reliability, discriminability, calibration, aggregation, simulation with the
ranked-worst 80 % limit) after

* re-coding: every id column's categories listed in reverse order (same labels, other codes);
* an order-preserving rename of every problem, test, solution, environment and campaign id;
* a rename that reverses the sorted order of the problem and solution ids;

must give every point estimate unchanged, and -- under re-coding and the order-preserving rename -- every
CI, finding and message unchanged too, character for character once the names are mapped back. Before the
fixes the bootstrap clusters followed category codes (re-coded categories moved CIs), the ranked-worst cut
and the aggregation's primary run followed category order.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.checks.calibration import run_calibration_audit
from audits.checks.discriminability import run_discriminability_audit
from audits.checks.reliability import run_reliability_audit
from audits.checks.reward_environments import load_environments
from audits.checks.simulation import run_simulation_audit
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import to_jsonable
from audits.report.inputs import load_corpora

ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENTS = [ROOT / "fixtures" / "environments" / name for name in ("top30.yaml", "ranked_worst_p80.yaml")]
N_BOOT = 40
ID_COLUMNS = ("environment", "campaign", "problem", "test", "solution")
#: keys whose values are interval ends or bootstrap shares (or are evaluated at interval ends): allowed to move
#: when the ids' sorted order changes, since the bootstrap resamples problems in that order. ``sensitivity``
#: sweeps the calibration intercept over its CI ends; ``p_better_than_default`` is a share of resamples.
CI_KEY = re.compile(r"(^|_)(ci|low|high|intervals|lo|hi)($|_)|^ci_|_ci$|drifted|excludes_zero|^p_better|"
                    r"^sensitivity$")


@pytest.fixture(scope="module")
def synthetic():
    corpus = synthesize(n_problems=8, n_tests=4, n_solutions=9, n_repeats=4, n_candidates=2,
                        campaigns=(("stored", 1.0, 0.0), ("fresh", 0.7, 0.02)), busy=True, seed=3).corpus
    # exact ties between references (a coarse timer): ties at every cut, which ids must not break
    corpus["duration_s"] = np.round(corpus["duration_s"].to_numpy(), 3)
    return corpus


@pytest.fixture(scope="module")
def shipped():
    return load_corpora([str(ROOT / "fixtures" / "corpora" / f"{n}.parquet") for n in ("quiet-a", "quiet-b")])


CASES = {"synthetic": dict(source="stored", target="fresh", run=("quiet", "stored")),
         "shipped": dict(source="quiet-a", target="quiet-b", run=("quiet", "quiet-a"))}


def _audits(corpus: pd.DataFrame, *, source: str, target: str, run: tuple[str, str]) -> dict:
    envs = load_environments([str(p) for p in ENVIRONMENTS])
    env, campaign = run
    out = {
        "reliability": run_reliability_audit(corpus, n_boot=N_BOOT).to_dict(),
        "discriminability": run_discriminability_audit(corpus, n_boot=N_BOOT).to_dict(),
        "calibration": run_calibration_audit(corpus, source=source, target=target, n_boot=N_BOOT,
                                             n_boot_rank=N_BOOT).to_dict(),
        "aggregation": run_aggregation_audit(corpus, n_boot=N_BOOT).to_dict(),
        "simulation": run_simulation_audit(corpus, environments=envs, environment=env, campaign=campaign,
                                           n_boot=N_BOOT).to_dict(),
    }
    return json.loads(json.dumps(to_jsonable(out), sort_keys=True, default=str))


def _recoded(corpus: pd.DataFrame) -> pd.DataFrame:
    out = corpus.copy()
    for column in ID_COLUMNS:
        out[column] = out[column].astype("category")
        out[column] = out[column].cat.reorder_categories(list(out[column].cat.categories)[::-1])
    return out


def _renamed(corpus: pd.DataFrame, mapping: dict[str, dict[str, str]]) -> pd.DataFrame:
    out = corpus.copy()
    for column, names in mapping.items():
        out[column] = out[column].astype(str).map(lambda v, names=names: names.get(v, v)).astype("category")
    return out


def _order_preserving(corpus: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Every id gets a prefix (sorted order kept); the prefix names the column, so the map back is exact."""
    return {c: {str(v): f"{c[:3].upper()}~{v}" for v in corpus[c].astype(str).unique()} for c in ID_COLUMNS}


def _order_reversing(corpus: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Problems and solutions renamed so that their sorted order is reversed (a bijection on tokens)."""
    mapping = {}
    for column in ("problem", "solution"):
        names = sorted(corpus[column].astype(str).unique())
        mapping[column] = {old: f"{column[:3].upper()}~{len(names) - i:04d}" for i, old in enumerate(names)}
    return mapping


def _mapped_back(tree, mapping: dict[str, dict[str, str]]):
    """The JSON with every renamed token replaced by its original name (in keys and in strings)."""
    back = {new: old for names in mapping.values() for old, new in names.items()}
    pattern = re.compile("|".join(re.escape(k) for k in sorted(back, key=len, reverse=True)))
    text = json.dumps(tree, sort_keys=True)
    return json.loads(pattern.sub(lambda m: back[m.group(0)], text))


def _point_estimates(tree, path="") -> dict[str, list]:
    """Numeric leaves outside CI keys, grouped by their key path with list indices removed (lists may reorder)."""
    out: dict[str, list] = defaultdict(list)
    if isinstance(tree, dict):
        if isinstance(tree.get("metric"), str):  # a finding: keyed by its metric
            path += f"<{tree['metric']}>"
        for key, value in tree.items():
            if CI_KEY.search(str(key)):
                continue
            for k, v in _point_estimates(value, f"{path}/{key}").items():
                out[k].extend(v)
    elif isinstance(tree, list):
        for value in tree:
            for k, v in _point_estimates(value, path + "[]").items():
                out[k].extend(v)
    elif isinstance(tree, bool) or tree is None:
        out[path].append(repr(tree))
    elif isinstance(tree, (int, float)):
        out[path].append(float(tree))
    return out


def _differences(a, b) -> list[str]:
    pa, pb = _point_estimates(a), _point_estimates(b)
    diffs = []
    for key in sorted(set(pa) | set(pb)):
        x, y = pa.get(key, []), pb.get(key, [])
        if len(x) != len(y):
            diffs.append(f"{key}: {len(x)} vs {len(y)} values")
            continue
        nums_x = sorted(v for v in x if isinstance(v, float) and not math.isnan(v))
        nums_y = sorted(v for v in y if isinstance(v, float) and not math.isnan(v))
        other_x = sorted(str(v) for v in x if not isinstance(v, float) or math.isnan(v))
        other_y = sorted(str(v) for v in y if not isinstance(v, float) or math.isnan(v))
        if other_x != other_y or len(nums_x) != len(nums_y) or not np.allclose(nums_x, nums_y, rtol=1e-9, atol=1e-12):
            diffs.append(f"{key}: {x[:4]} vs {y[:4]}")
    return diffs


def _first_difference(a, b) -> str:
    def flat(d, prefix=""):
        if isinstance(d, dict):
            return {k2: v2 for k, v in d.items() for k2, v2 in flat(v, f"{prefix}/{k}").items()}
        if isinstance(d, list):
            return {k2: v2 for i, v in enumerate(d) for k2, v2 in flat(v, f"{prefix}[{i}]").items()}
        return {prefix: d}
    fa, fb = flat(a), flat(b)
    diffs = [(k, fa.get(k), fb.get(k)) for k in sorted(set(fa) | set(fb)) if repr(fa.get(k)) != repr(fb.get(k))]
    return f"{len(diffs)} figures differ, e.g. {diffs[:4]}"


@pytest.mark.parametrize("name", list(CASES))
def test_recoding_and_order_preserving_renames_change_nothing(name, request):
    corpus = request.getfixturevalue(name)
    reference = _audits(corpus, **CASES[name])
    assert "ci_low" in json.dumps(reference) and "findings" in reference["reliability"]
    got = _audits(_recoded(corpus), **CASES[name])
    assert got == reference, f"{name}, re-coded categories: {_first_difference(reference, got)}"
    mapping = _order_preserving(corpus)
    case = CASES[name]
    source, target = (mapping["environment"].get(v, mapping["campaign"].get(v, v)) for v in (case["source"],
                                                                                            case["target"]))
    run = (mapping["environment"][case["run"][0]], mapping["campaign"][case["run"][1]])
    got = _mapped_back(_audits(_renamed(corpus, mapping), source=source, target=target, run=run), mapping)
    assert got == reference, f"{name}, order-preserving rename: {_first_difference(reference, got)}"


@pytest.mark.parametrize("name", list(CASES))
def test_order_reversing_renames_leave_every_point_estimate(name, request):
    corpus = request.getfixturevalue(name)
    reference = _audits(corpus, **CASES[name])
    mapping = _order_reversing(corpus)
    got = _mapped_back(_audits(_renamed(corpus, mapping), **CASES[name]), mapping)
    diffs = _differences(reference, got)
    assert diffs == [], f"{name}: {len(diffs)} point estimates differ, e.g. {diffs[:6]}"
    # and the comparison is not vacuous: thousands of figures, and the renamed corpus really differs
    assert sum(len(v) for v in _point_estimates(reference).values()) > 1000
