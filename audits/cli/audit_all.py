"""``speedaudit audit all``: every registered audit once, in one process, on one shared run context.

Its flags are generated from the registry (:mod:`audits.protocol.registry`): every option an audit declares
``shared`` is one flag for all the audits that declare it (``--n-boot``, ``--seed``, ``--floor-s``,
``--environment``/``--campaign``: the run selection), every other is namespaced with the audit's name
(``--simulation-n-boot``, ``--simulation-environment``, ``--clocks-n-boot``). ``--threshold`` takes
``AUDIT.NAME[.warn|.fail]=VALUE`` (or ``NAME...`` when one audit has that name) and ``--profile`` applies to
every audit.
"""

from __future__ import annotations

import argparse
from dataclasses import fields

from audits.cli._common import (add_connection_options, add_corpus_input, add_pair_selection, add_profile_option,
                                add_result_options, exit_status, pair_named, read_corpus, read_pair, read_security,
                                report_audit)
from audits.engine.routing import MEMORY_ROWS, on_dask
from audits.errors import UserError
from audits.protocol import registry
from audits.protocol.params import add_options, read_options
from audits.protocol.thresholds import ThresholdError, parse_overrides

#: The flag for the environment of both calibration runs: --environment selects the other audits' runs here.
PAIR_ENVIRONMENT = "--pair-environment"


def _options(args: argparse.Namespace, runs) -> dict:
    """Every registered audit's Options from the flags (calibration's pairs resolved against ``runs``, a corpus or
    a run table; None: left to the caller)."""
    fixed: dict[str, dict] = {"calibration": {"key": args.key}, "simulation": {}}
    if pair_named(args) and runs is not None:
        fixed["calibration"]["pairs"] = (read_pair(args, runs, both_environment=PAIR_ENVIRONMENT),)
    if args.reward_env or args.grid:
        # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
        from audits.checks.reward_environments import load_reward_environments

        fixed["simulation"]["reward_environments"] = tuple(load_reward_environments(args.reward_env or [],
                                                                                    args.grid or []))
    return {name: read_options(args, registry.options_of(name), prefix=f"{name}-", shared_unprefixed=True,
                               **fixed.get(name, {})) for name in registry.names()}


def _thresholds(args: argparse.Namespace) -> dict:
    """``--threshold`` overrides by audit: ``AUDIT.NAME...=V``, or ``NAME...=V`` when one audit knows NAME."""
    out: dict[str, dict] = {}
    for key, value in parse_overrides(getattr(args, "threshold", None)).items():
        head, dot, rest = key.partition(".")
        if dot and head in registry.names():
            out.setdefault(head, {})[rest] = value
            continue
        name = key.split(".")[0]
        owners = [n for n in registry.names() if _knows(registry.thresholds_of(n), name)]
        if len(owners) != 1:
            raise ThresholdError(f"--threshold {key}={value:g}: "
                                 + (f"{name!r} is a threshold of {', '.join(owners)}: write AUDIT.{key}=VALUE"
                                    if owners else f"no audit has a threshold {name!r}; write AUDIT.NAME=VALUE "
                                    f"with AUDIT one of {', '.join(registry.names())}"))
        out.setdefault(owners[0], {})[key] = value
    for name, overrides in out.items():  # each audit's own check of its names (one message format)
        try:
            registry.thresholds_of(name).for_profile(args.profile).override(overrides)
        except ThresholdError as exc:
            raise ThresholdError(f"--threshold: {exc}") from exc
    return out


def _knows(thresholds, name: str) -> bool:
    return name in thresholds.limits() or name in {f.name for f in fields(thresholds)} - {"profile"}


def _audit(args: argparse.Namespace) -> int:
    thresholds = _thresholds(args)  # from the declarations: a bad --threshold is refused before anything loads
    if _partitioned(args):
        return _audit_partitioned(args, thresholds)
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.engine.whole_audit import run_audits

    corpus = read_corpus(args)
    options = _options(args, corpus)
    try:
        whole = run_audits(corpus, options=options, thresholds=thresholds, profile=args.profile)
    except ValueError as exc:
        raise UserError(f"{args.corpus}: {exc}") from exc
    report_audit(whole, argparse.Namespace(**{**vars(args), "json": None}))
    if args.json:
        _save(whole, corpus, args)
    return exit_status(whole, args)


def _save(whole, corpus, args: argparse.Namespace, *, extra: dict | None = None) -> None:
    """--json: every audit's JSON (as each audit's own --json writes it) and, in the same file, the results as
    versioned JSON that ``speedaudit report --results FILE`` renders from (:func:`audits.report.results.save_audit_all`)."""
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.report.results import save_audit_all

    files = [*(args.reward_env or []), *(args.grid or [])] or None
    path = save_audit_all(whole, corpus, args.json, corpora=[args.corpus],
                          reward_environment_files=files, extra=extra)
    print(f"\nwrote {path} (render it with: speedaudit report --results {path} --out DIR)")


def _partitioned(args: argparse.Namespace) -> bool:
    """The one rule of :func:`audits.engine.routing.on_dask` (also :func:`speedaudit.run_all`'s)."""
    return on_dask(args.corpus, scheduler=args.scheduler, dask=args.dask)


def _read_options_given(args: argparse.Namespace) -> list[str]:
    """The corpus options (``read_corpus``'s: --map, --unit, --measure, --one-pool) given away from their defaults:
    the in-memory path applies them to the loaded corpus; on Dask they were silently ignored (``--measure cpu_s``
    judged the wall time, ``--one-pool`` kept the languages' pools)."""
    given = [("--map", args.mapping is not None), (f"--unit {args.unit}", args.unit != "s"),
             (f"--measure {args.measure}", args.measure != "duration_s"), ("--one-pool", bool(args.one_pool))]
    return [flag for flag, on in given if on]


def _audit_partitioned(args: argparse.Namespace, thresholds: dict) -> int:
    """The Dask path: :func:`audits.engine.partitioned.run_partitioned_whole_audit` (the audits that run on Dask,
    per-problem partial results on the workers); what cannot run is listed as skipped with the reason (never as
    passing), the audits that do not run on Dask among them (with the reason, in the summary and the JSON)."""
    refused = _read_options_given(args)
    if refused:
        raise UserError(f"{args.corpus}: {', '.join(refused)} not taken on Dask (a partitioned dataset): the workers "
                        f"read the partitions as they were written, so the option would be ignored\n"
                        f"  -> audit the dataset in memory (without --dask/--scheduler; up to {MEMORY_ROWS:,} rows), "
                        f"or write it again with 'speedaudit convert' from a corpus that needs no such option")
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.engine.partitioned import audit_dataset_on_dask

    pairs = (lambda runs: [read_pair(args, runs, both_environment=PAIR_ENVIRONMENT)]) if pair_named(args) else ()
    options = _options(args, None)
    whole = audit_dataset_on_dask(args.corpus, scheduler=args.scheduler, n_workers=args.workers,
                                  security=read_security(args), connect_timeout_s=args.connect_timeout,
                                  options=options, pairs=pairs, thresholds=thresholds, profile=args.profile)
    print(whole.summary())
    if args.json:  # the same saved results as in memory (corpus summary from the run table and the counts)
        _save(whole, None, args, extra={**whole.to_dict(), "engine": "dask"})
    return exit_status(whole, args)


def register(commands, audit_commands) -> None:
    parser = audit_commands.add_parser(
        "all", help="every audit once, in one process (the whole audit)",
        description="Run every registered audit (" + ", ".join(registry.names()) + ") on one shared run context: "
                    "calibration for the pair named with --source-*/--target-*, or without one the documented default "
                    "pairs (each stored -> fresh campaign of an environment whose campaigns are ordered by "
                    "timestamps, and each environment against the quietest in its campaign; skipped, with the "
                    "reason, when the corpus has none; never 'the first two'). Each run's rows, reference pool, collapsed cells and per-repeat scores are "
                    "computed once for every audit. --json writes every audit's result in one file (each part "
                    "equals that audit's own --json). Options shared by several audits are one flag (--n-boot, "
                    "--seed, --floor-s, --environment/--campaign); the others carry the audit's name "
                    "(--simulation-n-boot).")
    add_corpus_input(parser)
    add_pair_selection(parser, both_environment=PAIR_ENVIRONMENT,
                       title="calibration (map SOURCE onto TARGET; not named: the default pairs)")
    sim = parser.add_argument_group("reward simulation")
    sim.add_argument("--reward-env", action="append", metavar="REWARD_ENV.yaml",
                     help="reward environment file (repeatable; default: the shipped examples)")
    sim.add_argument("--grid", action="append", metavar="GRID.yaml", help="grid of reward environments (repeatable)")
    shared = parser.add_argument_group("options shared by the audits that declare them")
    for name in registry.names():
        add_options(shared, registry.options_of(name), only_shared=True)
    for name in registry.names():
        add_options(parser, registry.options_of(name), prefix=f"{name}-", only_shared=False,
                    title=f"{name} (its own options)")
    parser.add_argument("--threshold", action="append", metavar="[AUDIT.]NAME[.warn|.fail]=VALUE",
                        help="override a threshold (repeatable): AUDIT.NAME=VALUE sets both levels of that audit's "
                             "limit, AUDIT.NAME.warn=VALUE one (AUDIT may be left out when one audit has NAME); "
                             "each audit's limits are listed by 'speedaudit audit AUDIT --help'")
    add_profile_option(parser)
    dask = parser.add_argument_group("partitioned datasets (speedaudit convert --partition-by problem)")
    dask.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                      help="audit the dataset on this running Dask scheduler (per-problem partial results on the "
                           "workers; a tls:// one with the three --tls-* files)")
    dask.add_argument("--dask", action="store_true",
                      help=f"audit the dataset on a local Dask cluster on 127.0.0.1 (the default for datasets of "
                           f"more than {MEMORY_ROWS:,} rows; smaller ones are loaded whole)")
    dask.add_argument("--workers", type=int, default=2, help="worker processes of the local cluster (default 2)")
    add_connection_options(dask)
    add_result_options(parser)
    parser.set_defaults(func=_audit)
