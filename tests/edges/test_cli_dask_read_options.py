"""Corpus options the Dask path cannot honour are refused, never silently ignored.

``speedaudit audit all DATASET --dask --measure cpu_s`` judged the wall time (the workers read the partitions as
written; --measure, --one-pool, --unit and --map are applied by the in-memory loader only): on a real archive's
dataset (oj-lab/problem-packages) the repeat CV read 44 % FAIL on Dask where the CPU time asked for reads 19 %
WARN. Each is now an error naming the options and what to do; without them, and in memory, nothing changes.
"""

from __future__ import annotations

import pytest

from audits.cli import main
from audits.corpus.dataset import save_dataset
from audits.corpus.synthetic import synthesize


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    corpus = synthesize(n_problems=3, n_tests=2, n_solutions=3, n_repeats=2, seed=1).corpus.copy()
    corpus["cpu_s"] = corpus["duration_s"] * 0.9
    return save_dataset(corpus, tmp_path_factory.mktemp("ds") / "d", problems_per_partition=1).path


@pytest.mark.parametrize("flags, named", [(["--measure", "cpu_s"], "--measure cpu_s"), (["--one-pool"], "--one-pool"),
                                          (["--unit", "ms"], "--unit ms"), (["--map", "cpu_s=wall_s"], "--map")])
def test_each_loader_option_is_refused_on_dask(dataset, flags, named, capsys):
    assert main(["audit", "all", str(dataset), "--dask", *flags]) == 1
    err = capsys.readouterr().err
    assert f"{named} not taken on Dask" in err and "audit the dataset in memory" in err, err
    assert "Traceback" not in err


def test_in_memory_the_same_options_are_applied(dataset, capsys):
    assert main(["audit", "reliability", str(dataset), "--measure", "cpu_s"]) in (0, 1)
    captured = capsys.readouterr()
    assert "every duration is cpu_s" in captured.err and "not taken on Dask" not in captured.err
