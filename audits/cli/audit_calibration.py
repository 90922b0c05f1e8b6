"""``speedaudit audit calibration`` and ``speedaudit calibrate``."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from audits.checks.calibration import CalibrationThresholds, apply_calibration, run_calibration_audit
from audits.cli._common import (
    add_corpus_input,
    add_pair_selection,
    add_result_options,
    add_threshold_option,
    exit_status,
    read_corpus,
    read_pair,
    read_thresholds,
    report_audit,
)
from audits.errors import UserError
from audits.corpus.io import save_corpus
from audits.protocol.findings import write_json
from stats.calibration import FAMILIES, ROBUST_METHODS


def _families(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in FAMILIES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown families {bad}; choose from {', '.join(FAMILIES)}")
    return names


def _add_pair_options(parser: argparse.ArgumentParser) -> None:
    add_pair_selection(parser)
    parser.add_argument("--variance-ratio", type=float, default=1.0,
                        help="Deming: var(error of target) / var(error of source) (default 1)")
    parser.add_argument("--seed", type=int, default=0)


def _audit(args: argparse.Namespace) -> int:
    thresholds = read_thresholds(args, CalibrationThresholds)
    corpus = read_corpus(args)
    source, target = read_pair(args, corpus)
    try:
        audit = run_calibration_audit(
            corpus, source=source, target=target, key=args.key, families=args.families,
            robust=args.robust or False, calibration_family=args.calibration_family,
            variance_ratio=args.variance_ratio, taus=tuple(args.tau), n_boot=args.n_boot,
            n_boot_rank=args.n_boot_rank, seed=args.seed, thresholds=thresholds)
    except ValueError as exc:
        raise UserError(f"{args.corpus}: {exc}") from exc
    report_audit(audit, args)
    if args.figures:
        from audits.report.plots.calibration import bland_altman_plot, calibration_scatter, drift_plot

        out = Path(args.figures)
        out.mkdir(parents=True, exist_ok=True)
        figures = {"calibration_scatter": calibration_scatter(audit), "bland_altman": bland_altman_plot(audit)}
        if len(audit.drift):
            figures["drift"] = drift_plot(audit)
        for name, fig in figures.items():
            fig.savefig(out / f"{name}.png", dpi=110)
        print(f"wrote {len(figures)} figures to {out}")
    return exit_status(audit, args)


def _calibrate(args: argparse.Namespace) -> int:
    corpus = read_corpus(args)
    source, target = read_pair(args, corpus)
    try:
        calibrated, mapping = apply_calibration(
            corpus, source=source, target=target, key=args.key, family=args.family,
            robust=args.robust, variance_ratio=args.variance_ratio, clip=args.clip, force=args.force,
            seed=args.seed)
    except ValueError as exc:
        raise UserError(f"{args.corpus}: {exc}") from exc
    out = Path(args.out)
    sidecar = out.with_name(out.name.removesuffix(".parquet") + ".calibration.json")
    save_corpus(calibrated, out)
    write_json(mapping, sidecar)
    def share(value):
        return "n/a" if value is None else f"{value:.1%}"

    err = mapping["lopo_log_rmse"]
    print(f"mapped {mapping['rows_mapped']:,} ok rows of {mapping['key']} {mapping['source']!r} onto the "
          f"{mapping['target']!r} scale with {mapping['formula']} ({mapping['family']}, chosen by "
          f"{mapping['chosen_by']}; {mapping['method']}; {mapping['n_pairs']:,} pairs over {mapping['n_problems']} "
          f"problems; {mapping['rows_clipped']} clipped)")
    print(f"held-out log error: {mapping['family']} "
          f"{'n/a (fewer than 2 problems)' if err is None else f'{err:.4f} (x{math.exp(err):.3f})'}; "
          f"as they are: {mapping['identity_log_rmse']:.4f} (x{math.exp(mapping['identity_log_rmse']):.3f})")
    print(f"pairs more than 2x off: before {share(mapping['share_2x_off_before'])}, after "
          f"{share(mapping['share_2x_off_after'])} held out ({share(mapping['share_2x_off_after_in_sample'])} "
          "in sample)" + ("; written with --force" if mapping["force"] else ""))
    print(f"wrote {out} (originals in duration_raw_s) and the mapping {sidecar}")
    return 0


def register(commands, audit_commands) -> None:
    audit = audit_commands.add_parser(
        "calibration", help="can timings of one environment/campaign be mapped onto another?",
        description="Pair a source and a target run (campaign against campaign of one environment, from the full "
                    "file, or environment against environment) on cell medians, fit "
                    "multiplicative, affine, power, polynomial and Deming maps, validate each by "
                    "leave-one-problem-out R^2, and report parameter CIs, Bland-Altman agreement, rank "
                    "agreement of the stored pool with the fresh one (raw and calibrated), drift across "
                    "campaigns and the p_tau sensitivity to the intercept. See docs/calibration.md.")
    add_corpus_input(audit)
    _add_pair_options(audit)
    audit.add_argument("--families", type=_families, default=list(FAMILIES),
                       help=f"comma-separated families to fit (default: {','.join(FAMILIES)})")
    audit.add_argument("--robust", choices=ROBUST_METHODS, help="also fit a robust affine map")
    audit.add_argument("--calibration-family", choices=FAMILIES, default=None,
                       help="map used for calibrated rank agreement (default: chosen by held-out log error)")
    audit.add_argument("--tau", type=float, nargs="+", default=[10.0, 30.0],
                       help="speed thresholds (percentile points) for the p_tau sensitivity (default: 10 30)")
    audit.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples of problems (default 1000)")
    audit.add_argument("--n-boot-rank", type=int, default=200,
                       help="bootstrap resamples for the Spearman CIs (default 200)")
    add_threshold_option(audit, CalibrationThresholds)
    add_result_options(audit)
    audit.add_argument("--figures", metavar="DIR", help="write the calibration figures as PNG into DIR")
    audit.set_defaults(func=_audit)

    calibrate = commands.add_parser(
        "calibrate", help="map a source's durations onto a target's scale and write the corpus",
        description="Fit a calibration family on paired medians and write a corpus whose source durations "
                    "(ok rows) are mapped onto the target scale; originals stay in duration_raw_s and the "
                    "mapping is written beside the corpus as <out>.calibration.json.")
    add_corpus_input(calibrate)
    _add_pair_options(calibrate)
    calibrate.add_argument("--family", choices=FAMILIES, default=None,
                           help="calibration family, any of them (default: chosen by held-out log error among the "
                                "families whose held-out predictions are all finite, positive and above a tenth of "
                                "the smallest target duration)")
    calibrate.add_argument("--clip", action="store_true",
                           help="allow a map that sends source rows to <= 0 or below the floor (a tenth of the "
                                "smallest paired target duration), clipping them to it (refused without it: "
                                "clipped rows tie)")
    calibrate.add_argument("--force", action="store_true",
                           help="write the map even when its held-out log error is worse than the timings' as they "
                                "are, when it leaves more pairs more than 2x off out of fold, or when fewer than 2 "
                                "problems leave its held-out error unmeasured (refused without it)")
    calibrate.add_argument("--robust", choices=ROBUST_METHODS, help="fit the family robustly")
    calibrate.add_argument("--out", required=True, help="output .parquet path")
    calibrate.set_defaults(func=_calibrate)
