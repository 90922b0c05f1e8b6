"""``speedaudit audit calibration`` (flags from its Options) and ``speedaudit calibrate``."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from audits.cli._common import (
    add_audit_options,
    add_corpus_input,
    add_pair_selection,
    add_result_options,
    exit_status,
    pair_named,
    read_corpus,
    read_audit_options,
    read_pair,
    report_audit,
    run_audit_command,
)
from audits.errors import UserError
from stats.declarations import FAMILIES, ROBUST_METHODS


def _figures_folder(path: str, *, create: bool) -> Path:
    """The --figures folder: checked before any audit runs (a path that cannot be a folder is refused at once,
    nothing created), created when the figures are written."""
    out = Path(path)
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    what = ("is a file, not a folder" if out.is_file() else
            f"lies in {str(existing)!r}, a file, not a folder" if existing is not None and not existing.is_dir() else
            f"cannot be created in {str(existing)!r} (not writable)" if existing is not None and existing != out
            and not os.access(existing, os.W_OK | os.X_OK) else "")
    if not what and create:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            what = f"cannot be created ({exc.strerror or exc})"
    if what:
        raise UserError(f"--figures {path}: {what}\n  -> name a folder to write the figures into (it is created "
                        "when missing)")
    return out


def _audit(args: argparse.Namespace) -> int:
    out = _figures_folder(args.figures, create=False) if args.figures else None
    corpus = read_corpus(args)
    pair = _one_pair(args, corpus)
    audit = run_audit_command(args, "calibration", corpus=corpus, pairs=(pair,), key=args.key)
    (audit,) = audit
    report_audit(audit, args)
    if out is not None:
        # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
        from audits.report.plots.calibration import bland_altman_plot, calibration_scatter, drift_plot

        out = _figures_folder(args.figures, create=True)
        figures = {"calibration_scatter": calibration_scatter(audit), "bland_altman": bland_altman_plot(audit)}
        if len(audit.drift):
            figures["drift"] = drift_plot(audit)
        for name, fig in figures.items():
            fig.savefig(out / f"{name}.png", dpi=110)
        print(f"wrote {len(figures)} figures to {out}")
    return exit_status(audit, args)


def _one_pair(args: argparse.Namespace, corpus):
    """The one pair this command calibrates: ``--pair`` (the Options field ``pairs``, given once), else the
    ``--source-*``/``--target-*`` or ``--source``/``--target`` flags (:func:`audits.cli._common.read_pair`)."""
    named = read_audit_options(args, "calibration").pairs
    if not named:
        return read_pair(args, corpus)
    if len(named) > 1 or pair_named(args) or args.source is not None or args.target is not None:
        raise UserError("speedaudit audit calibration calibrates one pair: give --pair once, or the --source-*/"
                        "--target-* flags (speedaudit audit all and speedaudit report take --pair repeated)")
    return named[0]


def _calibrate(args: argparse.Namespace) -> int:
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.checks.calibration import apply_calibration
    from audits.corpus.io import save_corpus
    from audits.protocol.findings import write_json

    options = read_audit_options(args, "calibration")
    corpus = read_corpus(args)
    source, target = read_pair(args, corpus)
    try:
        calibrated, mapping = apply_calibration(
            corpus, source=source, target=target, key=args.key, family=args.family,
            robust=args.robust, variance_ratio=options.variance_ratio, clip=args.clip,
            force=args.force, seed=options.seed)
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
    add_pair_selection(audit)
    add_audit_options(audit, "calibration")
    add_result_options(audit)
    audit.add_argument("--figures", metavar="DIR", help="write the calibration figures as PNG into DIR")
    audit.set_defaults(func=_audit)

    calibrate = commands.add_parser(
        "calibrate", help="map a source's durations onto a target's scale and write the corpus",
        description="Fit a calibration family on paired medians and write a corpus whose source durations "
                    "(ok rows) are mapped onto the target scale; originals stay in duration_raw_s and the "
                    "mapping is written beside the corpus as <out>.calibration.json.")
    add_corpus_input(calibrate)
    add_pair_selection(calibrate)
    add_audit_options(calibrate, "calibration", only=("variance_ratio", "seed"), thresholds=False)  # declared once
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
