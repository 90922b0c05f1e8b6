"""`speedaudit report` computes each audit once: the pages read the shared results (audit calls counted).

The audit functions are counted where they run: in this process (render_reports computes the shared
results here) by wrapping them, and in every Jupyter kernel papermill starts by a ``sitecustomize``
module put first on the kernels' PYTHONPATH that wraps the same functions and appends one line per call
to a file. Real kernels, real notebooks; nothing is mocked.

The whole report set's count (every audit once, no page recomputing) is
tests/report/test_report.py's ``test_report_computes_each_audit_once``: it reads the one report set that module
renders (under :func:`count_calls`), instead of rendering a second set of seven pages here; this module's
tests render one page each (the counter's control, and parameters that differ from the stored results').
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.report.render import KernelSlot, render_notebook
from audits.report.results import RESULTS_FILE

pytestmark = pytest.mark.slow  # three pages rendered, in two kernels

REPO = Path(__file__).resolve().parents[2]
#: Each audit's last step in memory, counted as ``module.function`` (the module's last name): the combine of an
#: audit on the partition steps (audits.protocol.partition), the whole computation of one that is not.
AUDITS = {"audits.checks.reliability": "combine_parts", "audits.checks.discriminability": "combine_parts",
          "audits.checks.calibration": "combine_pair", "audits.checks.aggregation": "combine_parts",
          "audits.checks.simulation": "combine_parts", "audits.checks.clocks": "run_clocks_audit",
          "audits.checks.compare": "run_compare_audit"}

SITECUSTOMIZE = textwrap.dedent('''
    import importlib, os
    _log = os.environ.get("SPEEDAUDIT_TEST_CALL_LOG")
    if _log:
        def _wrap(module, name):
            real = getattr(module, name)
            def counted(*args, **kwargs):
                with open(_log, "a") as fh:
                    fh.write(f"kernel {module.__name__.rsplit('.', 1)[1]}.{name}\\n")
                return real(*args, **kwargs)
            setattr(module, name, counted)
        for _module, _name in AUDITS.items():
            _wrap(importlib.import_module(_module), _name)
''')


def count_calls(monkeypatch, folder: Path) -> tuple[Path, list[str]]:
    """(log file, calls in this process): the audit functions of this process wrapped through ``monkeypatch``,
    and kernels started until it is undone count into the log (a ``sitecustomize`` in ``folder``)."""
    import importlib

    site = folder / "site"
    site.mkdir()
    # in the kernels the corpus loader is counted too: a page whose results are all stored never reads the corpus
    kernel_counted = {**AUDITS, "audits.report.inputs": "load_corpora"}
    (site / "sitecustomize.py").write_text(f"AUDITS = {kernel_counted!r}\n" + SITECUSTOMIZE)
    log = folder / "calls.log"
    log.write_text("")
    monkeypatch.setenv("SPEEDAUDIT_TEST_CALL_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(REPO), os.environ.get("PYTHONPATH", "")]))
    here: list[str] = []
    for module_name, name in AUDITS.items():
        module = importlib.import_module(module_name)
        real = getattr(module, name)
        label = f"{module_name.rsplit('.', 1)[1]}.{name}"

        def counted(*args, _real=real, _name=label, **kwargs):
            here.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    return log, here


@pytest.fixture
def counting(tmp_path, monkeypatch):
    """(log file, calls in this process); kernels started from now on count into the log."""
    return count_calls(monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory):
    synth = synthesize(n_problems=6, n_tests=4, n_correctness_tests=1, n_solutions=6, n_incorrect=1, n_candidates=2,
                       n_repeats=3, busy=True, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), seed=3)
    path = tmp_path_factory.mktemp("once") / "small.parquet"
    save_corpus(synth.corpus, path)
    return path


PARAMS = {"n_boot": 30, "n_boot_rank": 10, "seed": 0, "stored_run": ["quiet", "c0"], "fresh_run": ["quiet", "c1"],
          "source_run": ["quiet", "c0"], "target_run": ["busy", "c0"], "aggregation_environment": "quiet",
          "aggregation_campaign": "c0", "simulation_environment": "quiet", "simulation_campaign": "c0"}


def _kernel_calls(log: Path) -> list[str]:
    return [line.split()[1] for line in log.read_text().splitlines() if line.strip()]


def test_a_page_on_its_own_computes_what_it_shows(corpus_path, tmp_path, counting):
    """Control for the counter: without the shared results the page's kernel runs the audits itself."""
    log, here = counting
    render_notebook("reliability", tmp_path / "out", parameters={"corpora": [str(corpus_path)], **PARAMS})
    assert here == []
    assert sorted(_kernel_calls(log)) == ["discriminability.combine_parts", "inputs.load_corpora",
                                          "reliability.combine_parts"]


def test_a_page_with_other_parameters_recomputes(corpus_path, tmp_path, counting):
    """A stored result is used only for the parameters it was computed from."""
    from audits.corpus.io import load_corpus
    from audits.protocol.saved import encoded_entry, write_entries
    from audits.report.results import ReportResults

    log, here = counting
    values = {**PARAMS, "campaign": None, "floor_s": None, "reliability_thresholds": {},
              "discriminability_thresholds": {}, "profile": "reward"}  # the template's defaults
    with pytest.raises(KeyError, match="profile"):  # a missing parameter is an error, not a silent recompute
        ReportResults(load_corpus(corpus_path), {k: v for k, v in values.items() if k != "profile"}).get("reliability")
    values["corpora"] = [str(corpus_path)]
    # the shared results as render_reports writes them: ReportResults.entry, encoded once, written by write_entries
    results = ReportResults(load_corpus(corpus_path), values)
    entries = {r: results.entry(r) for r in ("reliability", "discriminability", "corpus_summary")}
    path = write_entries({r: encoded_entry(r, result, used) for r, (used, result) in entries.items()},
                         tmp_path / RESULTS_FILE)
    here.clear()
    # both pages in one kernel, put back between them, as `speedaudit report` renders a slot's pages (one kernel start
    # fewer); the first page starts it, so it runs as on its own
    slot = KernelSlot()
    try:
        render_notebook("reliability", tmp_path / "out", slot=slot,
                        parameters={"corpora": [str(corpus_path)], **PARAMS, "n_boot": 31, "results_path": str(path)})
        assert sorted(_kernel_calls(log)) == ["discriminability.combine_parts", "inputs.load_corpora",
                                              "reliability.combine_parts"]
        log.write_text("")
        render_notebook("reliability", tmp_path / "out2", slot=slot,
                        parameters={"corpora": [str(corpus_path)], **PARAMS, "results_path": str(path)})
        assert _kernel_calls(log) == []
    finally:
        slot.close()
    assert slot.kernels_started == 1
