"""A report does not load whole a dataset that `speedaudit audit all` audits on Dask (audits.engine.routing.on_dask):
it says to render from that audit's results. The size rule is planted smaller (MEMORY_ROWS) so that a small real
dataset stands for one of 2*10^7 rows; nothing is rendered, so no kernel starts."""

from __future__ import annotations

import pytest

import speedaudit
from audits.corpus.dataset import save_dataset
from audits.corpus.synthetic import synthesize
from audits.engine import routing
from audits.errors import UserError
from audits.report.inputs import load_corpora


@pytest.fixture
def dataset(tmp_path):
    return save_dataset(synthesize(n_problems=4, n_repeats=3, seed=1).corpus, tmp_path / "d.dataset",
                        problems_per_partition=2)


def test_a_dataset_small_enough_is_loaded_whole(dataset):
    assert len(load_corpora([dataset.path])) == dataset.rows


def test_a_dataset_for_dask_is_refused_with_the_command_that_renders_it(dataset, monkeypatch, tmp_path):
    monkeypatch.setattr(routing, "MEMORY_ROWS", dataset.rows - 1)
    with pytest.raises(UserError, match=f"more than {dataset.rows - 1:,} rows is audited on Dask") as info:
        load_corpora([dataset.path])
    assert f"speedaudit audit all {dataset.path} --json all.json" in str(info.value)
    assert "speedaudit report --results all.json" in str(info.value)
    with pytest.raises(UserError, match="audited on Dask"):  # the API's report: the same path
        speedaudit.render_report([dataset.path], out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_command_that_loads_a_corpus_refuses_it_too(dataset, monkeypatch, capsys):
    from audits.cli import main

    monkeypatch.setattr(routing, "MEMORY_ROWS", dataset.rows - 1)
    assert main(["audit", "reliability", str(dataset.path)]) == 1
    assert "audited on Dask, not loaded whole" in capsys.readouterr().err
