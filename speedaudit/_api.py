"""The functions of the public API (:mod:`speedaudit`): thin entries into :mod:`audits`, one per task."""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence

from audits.dask_connection import CONNECT_TIMEOUT_S
from audits.engine.routing import on_dask
from audits.errors import UserError

__all__ = ["AUDITS", "run_audit", "run_all", "render_report", "collect"]

#: The audits :func:`run_audit` runs by name; each is ``audits.checks.<name>.run_<name>_audit``.
AUDITS = ("reliability", "discriminability", "calibration", "aggregation", "simulation", "clocks", "compare")


def run_audit(name: str, corpus, /, **options):
    """Run one audit on a corpus and return its result (``.findings``, ``.to_dict()``, ``.summary()``).

    Parameters
    ----------
    name : str
        One of :data:`AUDITS`.
    corpus : DataFrame
        A loaded corpus (:func:`speedaudit.load_corpus`).
    **options
        The audit's keyword-only options (e.g. ``n_boot``, ``seed``, ``thresholds``; calibration needs
        ``source`` and ``target``, the simulation ``reward_environments``): see
        ``audits.checks.<name>.run_<name>_audit``.

    Examples
    --------
    >>> from audits.corpus.synthetic import synthesize
    >>> corpus = synthesize(n_problems=4, n_repeats=3, seed=1).corpus
    >>> run_audit("reliability", corpus, n_boot=20).level in ("pass", "warn", "fail", "n/a")
    True
    """
    if name not in AUDITS:
        raise UserError(f"no audit {name!r}; audits: {', '.join(AUDITS)}")
    module = importlib.import_module(f"audits.checks.{name}")
    return getattr(module, f"run_{name}_audit")(corpus, **options)


def run_all(corpus, /, *, save: str | os.PathLike | None = None, scheduler: str | None = None, dask: bool = False,
            workers: int = 2, security=None, connect_timeout_s: float = CONNECT_TIMEOUT_S, **options):
    """Every audit once on one shared run context (``speedaudit audit all``):
    :func:`audits.engine.whole_audit.run_whole_audit`, which takes the options.

    ``save``: also write the whole audit where :func:`render_report` (``results=``) and
    ``speedaudit report --results FILE`` render it from without recomputing, the file
    ``speedaudit audit all CORPUS --json FILE`` writes (:func:`audits.report.results.save_audit_all`, the one
    writer of both). ``corpus`` is then a DataFrame, or the path of a corpus file, which the report names.

    A partitioned dataset folder (``speedaudit convert --partition-by problem``) is audited on Dask by the
    command line's rule (:func:`audits.engine.routing.on_dask`): with ``scheduler`` (the address of a running
    one, reached with ``security`` and ``connect_timeout_s`` as ``--tls-*`` and ``--connect-timeout``), with
    ``dask=True`` (a loopback cluster of ``workers`` processes), or when it holds more rows than memory takes;
    the options are then those of :func:`audits.engine.partitioned.run_partitioned_whole_audit`.
    """
    files = [corpus] if isinstance(corpus, (str, os.PathLike)) else []
    rows, extra = None, None  # on Dask no process holds the rows: the saved summary comes from the run table
    if on_dask(corpus, scheduler=scheduler, dask=dask):
        # deferred: the Dask engine loads distributed, the optional Dask feature's library
        from audits.engine.partitioned import audit_dataset_on_dask

        whole = audit_dataset_on_dask(corpus, scheduler=scheduler, n_workers=workers, security=security,
                                      connect_timeout_s=connect_timeout_s, **options)
        extra = {**whole.to_dict(), "engine": "dask"}  # as `speedaudit audit all DATASET --json` writes it
    else:
        # deferred: import speedaudit stays light (tests/test_speedaudit_api.py)
        from audits.corpus.io import load_corpus
        from audits.engine.whole_audit import run_whole_audit

        rows = load_corpus(corpus) if files else corpus
        whole = run_whole_audit(rows, **options)
    if save is not None:  # with the Options the audits ran with (whole.options)
        # deferred: import speedaudit stays light (tests/test_speedaudit_api.py)
        from audits.report.results import save_audit_all

        save_audit_all(whole, rows, save, corpora=files, extra=extra,
                       reward_environment_files=None if "reward_environments" not in options else [])
    return whole


def render_report(corpora: Sequence[str | os.PathLike] | str | os.PathLike | None = None, /, *,
                  out_dir: str | os.PathLike = "reports", results: str | os.PathLike | None = None, **options):
    """Render the report pages and their index into ``out_dir`` (``speedaudit report``) and return the
    :class:`audits.report.render.ReportIndex`.

    ``corpora`` is one corpus file or several; ``results`` a file written by :func:`run_all` (``save=``) or
    ``speedaudit audit all --json``, from which the pages render without recomputing any audit.
    Other options: :func:`audits.report.render.render_reports` (``audits``, ``parameters``, ``show_code``,
    ``progress``).
    """
    # deferred: import speedaudit stays light (tests/test_speedaudit_api.py)
    from audits.report.render import render_reports

    if isinstance(corpora, (str, os.PathLike)):
        corpora = [corpora]
    return render_reports(corpora, out_dir=out_dir, results=results, **options)


def collect(suite: str | os.PathLike, /, *, out: str | os.PathLike, environment: str = "default",
            campaign: str = "c0", problems: Sequence[str] | None = None, progress: bool = False,
            optimization_tests: int | None = None, submissions: Sequence[str] | None = None, probe: bool = True,
            work_dir: str | os.PathLike | None = None, **spec):
    """Time a suite's submissions in a sandbox and write the corpus to ``out`` (``speedaudit collect``).

    ``suite`` is a folder of Kattis problem packages (:func:`audits.collect.suite.load_suite`; ``problems``
    keeps some of them, ``optimization_tests`` each one's N largest optimization tests and ``submissions``
    the submissions whose ``PROBLEM/SOLUTION`` id matches one of these fnmatch patterns, as the CLI's
    ``--optimization-tests`` and ``--submission``); ``spec`` holds the other fields of :class:`audits.collect.campaign.CampaignSpec`
    (``sandbox``, ``repeats``, ``workers``, ``limits``, ``seed``, ...). As the command line, the suite is loaded
    with the campaign's interpreter and sandbox, and optimization tests of indistinguishable size are picked by a
    probe run (:func:`audits.collect.campaign.probe_tests`; ``probe=False``: ``--no-probe``) built in the campaign's
    ``work_dir`` (``--work-dir``). Returns the :class:`audits.collect.campaign.CampaignResult` (``.summary()``; the
    corpus is in ``out``).
    """
    # deferred: import speedaudit stays light (tests/test_speedaudit_api.py)
    from audits.collect.campaign import CampaignSpec, WorkDir, plan_campaign, probe_tests, run_campaign
    from audits.collect.suite import load_suite

    campaign_spec = CampaignSpec(environment=environment, campaign=campaign, **spec)
    loaded = load_suite(suite, problems=problems, optimization_tests=optimization_tests, submissions=submissions,
                        python=campaign_spec.python, sandbox=campaign_spec.sandbox)
    work = WorkDir.make(work_dir)
    try:
        if probe:
            loaded = probe_tests(loaded, campaign_spec, out=out, work=work, progress=progress)
        plan = plan_campaign(loaded, campaign_spec, work_dir=work)
    except BaseException:
        work.discard()
        raise
    return run_campaign(plan, out=out, progress=progress)
