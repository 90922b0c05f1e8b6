"""``speedaudit simulate`` (screen reward environments offline) and ``speedaudit score`` (p_tau of candidates).

``--reward-env FILE`` names a reward environment; ``--environment`` / ``--campaign`` the run of the corpus.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from audits.cli._common import (add_audit_options, add_corpus_input, exit_status, read_audit_options, read_corpus,
                                report_audit, run_audit_command)
from audits.errors import UserError


def _float_list(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected numbers like 100,50,30,10, got {text!r}") from exc
    if not values or any(not 0 <= v <= 100 for v in values):
        raise argparse.ArgumentTypeError(f"expected thresholds in [0, 100] like 100,50,30,10, got {text!r}")
    if len(set(values)) < len(values):  # the JSON keys p_tau by tau: a repeat printed twice and was saved once
        raise argparse.ArgumentTypeError(f"expected each threshold once like 100,50,30,10, got {text!r}")
    return values


def _checked(convert, valid, what: str):
    """An argparse type: ``convert`` the text, then require ``valid(value)``; the message says ``what``."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from exc
        if not valid(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value
    return parse


_non_negative_int = _checked(int, lambda v: v >= 0, "a whole number >= 0")
_positive_int = _checked(int, lambda v: v >= 1, "a whole number >= 1")
_prior_df = _checked(float, lambda v: v > 0, "a number > 0 or inf")


def _quality(text: str):
    if text == "uniform":
        return "uniform"
    kind, _, params = text.partition(":")
    try:
        a, b = (float(x) for x in params.split(","))
    except ValueError:
        kind = ""
    if kind != "beta" or not (math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0):  # nan passed "<= 0"
        raise argparse.ArgumentTypeError(f"expected 'uniform' or 'beta:A,B' with finite A, B > 0, got {text!r}")
    return ("beta", a, b)


def _reward_environments(args):
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.checks.reward_environments import load_reward_environments

    return load_reward_environments(args.reward_env or [], args.grid or [])


def _figures_folder(text: str | None) -> Path | None:
    """The ``--figures`` folder, made before anything is computed; a path that cannot be one is refused."""
    if not text:
        return None
    out = Path(text)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: --figures names a folder to write reward_curves.png and zero_advantage.png into; "
                        "this is a file: give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{out}: cannot make the --figures folder ({exc.strerror}); give a folder you can "
                        "write to") from exc
    return out


def _simulate(args: argparse.Namespace) -> int:
    envs = _reward_environments(args)
    out = _figures_folder(args.figures)
    audit = run_audit_command(args, "simulation", reward_environments=tuple(envs), quality_distribution=args.quality)
    report_audit(audit, args)
    if out is not None:
        # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
        from audits.report.plots.simulation import reward_curves, zero_advantage_by_group_size

        for name, fig in (("reward_curves", reward_curves(audit)),
                          ("zero_advantage", zero_advantage_by_group_size(audit))):
            fig.savefig(out / f"{name}.png", dpi=120)
        print(f"wrote {out}/reward_curves.png and {out}/zero_advantage.png")
    return exit_status(audit, args)


def _score(args: argparse.Namespace) -> int:
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.checks.simulation import score_candidates
    from audits.protocol.findings import write_json

    envs = _reward_environments(args)
    if len(envs) != 1:
        raise UserError(f"score needs exactly one reward environment (--reward-env FILE); got {len(envs)}")
    corpus = read_corpus(args)
    try:
        run = read_audit_options(args, "simulation")  # the run (rule "one run") and the seed, as the simulation's
        result = score_candidates(corpus, env=envs[0], environment=run.environment, campaign=run.campaign,
                                  taus=args.taus, k=args.k, n_boot=args.n_boot, seed=run.seed,
                                  n_draws=args.n_draws, prior_df=args.prior_df)
    except ValueError as exc:
        raise UserError(f"{args.corpus}: {exc}") from exc
    print(result.summary())
    if args.json:
        print(f"\nwrote {write_json(result.to_dict(), args.json)}")
    return 0


def _common(parser: argparse.ArgumentParser) -> None:
    add_corpus_input(parser)
    parser.add_argument("--reward-env", action="append", metavar="REWARD_ENV.yaml",
                        help="reward environment file (YAML/JSON; repeatable), e.g. fixtures/environments/top30.yaml")
    parser.add_argument("--json", metavar="OUT", help="also write the result as JSON to OUT")


def register(commands, audit_commands) -> None:
    # `speedaudit simulate` and, like the other audits, `speedaudit audit simulation`
    for parsers, name in ((commands, "simulate"), (audit_commands, "simulation")):
        _add_simulate(parsers, name)
    _add_score(commands)


def _add_simulate(parsers, name: str) -> None:
    sim = parsers.add_parser(
        name, help="screen reward environments offline: reward-vs-quality curves, verdicts, ranking",
        allow_abbrev=False,
        description="Offline simulator (docs/rewards.md): correct reference solutions stand in for rollouts; "
                    "each one's quality comes from one repeat and its reward from another. Prints one row per "
                    "reward environment, best first, with AUC (sparse/saturated), monotonicity, steepness, "
                    "deviation from the ideal diagonal, curve noise, the GRPO zero-advantage rate and a verdict.")
    _common(sim)
    sim.add_argument("--grid", action="append", metavar="GRID.yaml",
                     help="grid file expanding into many reward environments (repeatable), "
                          "e.g. fixtures/environments/grid.yaml")
    add_audit_options(sim, "simulation")
    sim.add_argument("--quality", type=_quality, default="uniform", metavar="uniform|beta:A,B",
                     help="quality distribution of the rollouts in a GRPO group (default uniform)")
    sim.add_argument("--figures", metavar="DIR", help="also write reward_curves.png and zero_advantage.png to DIR")
    sim.add_argument("--strict", action="store_true", help="exit with status 1 when any finding fails")
    sim.set_defaults(func=_simulate)


def _add_score(commands) -> None:
    score = commands.add_parser(
        "score", help="p100/p50/p30/p10 of the corpus's candidate solutions under one reward environment",
        allow_abbrev=False,
        description="p_tau: a candidate succeeds when it is strictly correct and its q <= tau/100 under the "
                    "reward environment's filter, limit and aggregator; pass@k is the unbiased estimator over the "
                    "candidates of each problem, averaged over problems, with a bootstrap CI over problems. Beside "
                    "each point value, the noise-aware one (docs/noise.md): p_tau's posterior mean with its interval "
                    "from timing noise, and per candidate E[q] [95 % interval] and P(q <= tau/100).")
    _common(score)
    add_audit_options(score, "simulation", only=("environment", "campaign", "seed"), thresholds=False)
    score.add_argument("--taus", type=_float_list, default=(100, 50, 30, 10), metavar="T,T,...",
                       help="thresholds in percentile points (default 100,50,30,10)")
    score.add_argument("--k", type=_positive_int, default=1, help="pass@k (default 1)")
    score.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples over problems (default 1000)")
    score.add_argument("--n-draws", type=_non_negative_int, default=2000,
                       help="posterior draws of the noise-aware values (default 2000; 0: E[q] only), docs/noise.md")
    score.add_argument("--prior-df", type=_prior_df, default=4.0,
                       help="degrees of freedom of the per-test variance prior of the repeat-noise model (default 4; "
                            "inf: one known variance per test), docs/noise.md")
    score.set_defaults(func=_score, grid=None)
