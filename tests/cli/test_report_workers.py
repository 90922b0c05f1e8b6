"""`speedaudit report --workers N`: how many pages render at once, each render slot one kernel
(audits.report.render.render_workers); with 1, every page renders in one kernel, one after the other.
Real pages in real kernels; the slots are counted by wrapping the class that holds a slot's kernel."""

from __future__ import annotations

import pytest

import audits.report.render as render
from audits.cli import main
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize

pytestmark = pytest.mark.slow  # two pages rendered in one kernel


def test_one_worker_renders_every_page_in_one_kernel(tmp_path, monkeypatch):
    slots = []

    class Counted(render.KernelSlot):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            slots.append(self)

    monkeypatch.setattr(render, "KernelSlot", Counted)
    path = tmp_path / "c.parquet"
    save_corpus(synthesize(n_problems=5, n_repeats=3, seed=4).corpus, path)
    out = tmp_path / "reports"
    code = main(["report", str(path), "--audit", "reliability", "--audit", "aggregation", "--workers", "1",
                 "-p", "n_boot=20", "--out", str(out)])
    assert code == 0
    assert (out / "reliability.html").is_file() and (out / "aggregation.html").is_file()
    assert len(slots) == 1 and slots[0].kernels_started == 1


@pytest.mark.parametrize("given", ["0", "-1", "two"])
def test_workers_must_be_a_whole_number_from_one(given, capsys):
    with pytest.raises(SystemExit) as info:
        main(["report", "--workers", given, "--out", "x"])
    assert info.value.code == 2 and "--workers" in capsys.readouterr().err
