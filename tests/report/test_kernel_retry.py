"""A page whose kernel dies before it answers (its ports taken by another process in between: seen once in a
fresh-clone CI, two test workers rendering at once) is started once more; any other error is not retried.

The dying kernel is simulated (papermill's first call raises jupyter_client's own error): a port race cannot be
provoked on demand. The second start and the page are real. So is the warm kernel a render slot keeps between two
pages, killed between them: the next page finds it dead and starts a fresh one."""

from __future__ import annotations

import os
import signal

import papermill
import pytest

from audits.corpus.synthetic import synthesize
from audits.corpus.io import save_corpus
from audits.report import render
from audits.report.render import KernelSlot, render_notebook


def _failing_first(monkeypatch, message: str) -> list:
    calls = []
    real = papermill.execute_notebook

    def execute(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError(message)
        return real(*args, **kwargs)

    monkeypatch.setattr(papermill, "execute_notebook", execute)
    return calls


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return save_corpus(synthesize(n_problems=4, seed=3).corpus, tmp_path_factory.mktemp("retry") / "c.parquet")


def test_a_kernel_that_died_before_answering_is_started_again(monkeypatch, corpus, tmp_path):
    calls = _failing_first(monkeypatch, render._KERNEL_DIED)
    report = render_notebook("compare", tmp_path / "out", parameters={"corpora": [str(corpus)], "n_boot": 20})
    assert len(calls) == 2 and report.html.exists()


def test_another_error_is_not_retried(monkeypatch, corpus, tmp_path):
    calls = _failing_first(monkeypatch, "something else")
    with pytest.raises(RuntimeError, match="something else"):
        render_notebook("compare", tmp_path / "out", parameters={"corpora": [str(corpus)], "n_boot": 20})
    assert len(calls) == 1 and not (tmp_path / "out" / "compare.html").exists()


def test_a_slot_whose_kernel_died_between_two_pages_starts_a_fresh_one(corpus, tmp_path):
    slot = KernelSlot()
    params = {"corpora": [str(corpus)], "n_boot": 20}
    try:
        render_notebook("compare", tmp_path / "one", parameters=params, slot=slot)
        pid = slot.km.provisioner.process.pid
        os.kill(pid, signal.SIGKILL)  # between two pages: nbclient's new client finds it dead (_KERNEL_DIED)
        report = render_notebook("compare", tmp_path / "two", parameters=params, slot=slot)
        assert report.html.exists() and slot.kernels_started == 2 and slot.km.provisioner.process.pid != pid
    finally:
        slot.close()
