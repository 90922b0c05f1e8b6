"""``speedaudit synth``: write a synthetic corpus with planted truth."""

from __future__ import annotations

import argparse

from audits.errors import UserError

# The numeric stack and the collectors load when the command runs, not for --help (issue 26: within 0.3 s).


def _pair(text: str) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected two numbers 'A,B', got {text!r}") from exc
    return a, b


def _run(args: argparse.Namespace) -> int:
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.synthetic import SyntheticSpec, synthesize, write_synthetic

    campaigns = [("c0", 1.0, 0.0)]
    names = [c for c in (args.campaigns or "").split(",") if c]
    if names:
        campaigns = [(names[0], 1.0, 0.0)]
        slope, intercept = args.drift
        for name in names[1:]:
            campaigns.append((name, slope, intercept))
    try:
        spec = SyntheticSpec(
            n_problems=args.problems, n_tests=args.tests, n_correctness_tests=args.correctness_tests,
            n_solutions=args.solutions, n_incorrect=args.incorrect, n_candidates=args.candidates,
            n_repeats=args.repeats, noise_cv=args.noise_cv, noise_add_s=args.noise_add_ms / 1000,
            filterable_share=args.filterable_share, campaigns=tuple(campaigns), busy=args.busy, seed=args.seed)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    synth = synthesize(spec)
    corpus_path, truth_path = write_synthetic(synth, args.out)
    print(f"wrote {corpus_path} ({len(synth.corpus):,} rows) and its truth {truth_path}")
    return 0


def register(commands, audit_commands) -> None:
    p = commands.add_parser(
        "synth", help="write a synthetic corpus with planted truth (noise, drift, busy worker)",
        description="Generate a timing corpus whose truth is known: workload span per problem, latent "
                    "solution quality, multiplicative and additive repeat noise, affine drift between "
                    "campaigns, and optionally a busy-worker environment. The truth is written beside the "
                    "corpus as <out>.truth.json.")
    p.add_argument("--out", required=True, help="output .parquet path")
    p.add_argument("--problems", type=int, default=20)
    p.add_argument("--tests", type=int, default=8, help="optimization tests per problem")
    p.add_argument("--correctness-tests", type=int, default=2)
    p.add_argument("--solutions", type=int, default=12, help="correct reference solutions per problem")
    p.add_argument("--incorrect", type=int, default=2, help="incorrect reference solutions per problem")
    p.add_argument("--candidates", type=int, default=4, help="candidate solutions per problem")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--noise-cv", type=float, default=0.05, help="multiplicative repeat noise (sd of 1+e)")
    p.add_argument("--noise-add-ms", type=float, default=1.0, help="additive repeat noise sd in ms")
    p.add_argument("--filterable-share", type=float, default=0.5,
                   help="share of problems whose optimization tests span a wide workload")
    p.add_argument("--campaigns", default="c0", help="comma-separated campaign names; the first is the anchor")
    p.add_argument("--drift", type=_pair, default=(0.63, 0.053),
                   help="slope,intercept_s of later campaigns against the first (default 0.63,0.053)")
    p.add_argument("--busy", action="store_true", help="add a busy-worker environment with state-dependent noise")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_run)
