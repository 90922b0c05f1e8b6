"""Figure of the aggregation audit: stability vs dynamic range of every aggregator, per run."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from audits.report.plots._layout import names_as_text, place_labels, thin_tick_labels  # noqa: E402

__all__ = ["stability_range_figure"]


@names_as_text
def stability_range_figure(table: pd.DataFrame, *, default: str = "mean_pct", recommended=None,
                           panel_width: float = 5.5, annotate: bool = True) -> matplotlib.figure.Figure:
    """Stability (x, lower = better) against dynamic range (y, higher = better), one panel per run.

    Top row: each aggregator is a point with its bootstrap CIs as error bars;
    the Pareto front is the step line through the non-dominated points; the
    default is drawn as a square, the recommended aggregator (lowest ratio on the
    front) as a star. Labels go to the front, the default, the recommended one
    and the three worst ratios (the rest cluster), each placed where it
    overlaps no other label, marker or legend (a label with no room is left out:
    the bottom row names every aggregator). Bottom row: every
    aggregator's stability / range ratio with its CI, best first, so no label is
    lost.

    Parameters
    ----------
    table : DataFrame or AggregationAudit
        ``AggregationAudit.table`` (columns environment, campaign, aggregator,
        stability(_low/_high), dynamic_range(_low/_high), ratio, pareto) or one
        ``AggregatorComparison.table`` (a single panel), or the audit itself (its table).
    default : str
        Name of the default aggregator to mark.
    recommended : str or mapping (environment, campaign) -> str, optional
        Default: the Pareto point with the lowest ratio in each panel.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(table, pd.DataFrame):  # an AggregationAudit: its table
        table = table.table
    if table.empty:
        raise ValueError("stability_range_figure: the table is empty (no comparison was computed)")
    frame = table.copy()
    for column in ("environment", "campaign"):
        if column not in frame.columns:
            frame[column] = ""
    # Panels in name order (a function of the runs as a set, not of the table's row order).
    runs = sorted(frame[["environment", "campaign"]].drop_duplicates().itertuples(index=False, name=None),
                  key=lambda r: (str(r[0]), str(r[1])))
    to_label = {}
    fig, axes = plt.subplots(2, len(runs), figsize=(panel_width * len(runs), panel_width * 1.7), squeeze=False,
                             gridspec_kw={"height_ratios": [1.0, 0.9]})
    for ax, bar_ax, (env, camp) in zip(axes[0], axes[1], runs):
        t = frame[(frame["environment"] == env) & (frame["campaign"] == camp)]
        t = t[np.isfinite(t["stability"]) & np.isfinite(t["dynamic_range"])]
        xerr = np.vstack([t["stability"] - t["stability_low"], t["stability_high"] - t["stability"]])
        yerr = np.vstack([t["dynamic_range"] - t["dynamic_range_low"], t["dynamic_range_high"] - t["dynamic_range"]])
        colors = np.where(t["pareto"], "tab:blue", "tab:gray")
        ax.errorbar(t["stability"], t["dynamic_range"], xerr=np.abs(xerr), yerr=np.abs(yerr), fmt="none",
                    ecolor="lightgray", elinewidth=1, zorder=1)
        ax.scatter(t["stability"], t["dynamic_range"], c=list(colors), s=30, zorder=2)
        front = t[t["pareto"]].sort_values(["stability", "aggregator"])
        if len(front):
            ax.step(front["stability"], front["dynamic_range"], where="post", color="tab:blue", lw=1.2,
                    label="Pareto front", zorder=1)
        if isinstance(recommended, dict):
            best = recommended.get((env, camp))
        elif isinstance(recommended, str):
            best = recommended
        else:
            best = str(front.sort_values(["ratio", "aggregator"]).iloc[0]["aggregator"]) if len(front) else None
        big = []  # the square and the star: larger markers the labels must keep clear of
        for name, marker, label in ((default, "s", f"default ({default})"), (best, "*", f"recommended ({best})")):
            row = t[t["aggregator"] == name]
            if name is not None and len(row):
                big += [(sx, sy, 9.0) for sx, sy in zip(row["stability"], row["dynamic_range"])]
                ax.scatter(row["stability"], row["dynamic_range"], marker=marker, s=160, facecolors="none",
                           edgecolors="tab:red" if marker == "*" else "black", linewidths=1.5, zorder=3, label=label)
        if annotate:
            worst = set(t.sort_values(["ratio", "aggregator"]).tail(3)["aggregator"])
            chosen = t[t["pareto"] | t["aggregator"].isin([default, best]) | t["aggregator"].isin(worst)]
            to_label[ax] = ([(r.aggregator, r.stability, r.dynamic_range) for r in chosen.itertuples()],
                            list(zip(t["stability"], t["dynamic_range"])) + big, set(front["aggregator"]))
        title = " · ".join(str(v) for v in (env, camp) if str(v))
        ax.set_title(title or "aggregators")
        ax.set_xlabel("instability: mean |score(i) - score(j)|, points (lower = better)")
        ax.set_ylabel("dynamic range: slow - fast quartile, points")
        ax.grid(alpha=0.3)
        if t.empty:  # nothing to draw: say why rather than leave a blank panel
            ax.text(0.5, 0.5, "no aggregator has both a finite stability and a dynamic range on this run\n"
                    "(the range needs >= 4 correct references of a problem, the stability >= 2 repeats;\n"
                    "the page's table says which figures are n/a and why)", transform=ax.transAxes,
                    ha="center", va="center", fontsize=7, wrap=True)
        elif ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="lower right")

        order = t.sort_values(["ratio", "aggregator"], ascending=[False, True])
        y = np.arange(len(order))
        err = np.abs(np.vstack([order["ratio"] - order["ratio_low"], order["ratio_high"] - order["ratio"]]))
        bar_ax.barh(y, order["ratio"], xerr=err, color=np.where(order["pareto"], "tab:blue", "silver"),
                    error_kw={"elinewidth": 0.8, "ecolor": "dimgray"})
        bar_ax.set_yticks(y, [f"{n}{' *' if n == best else ''}" for n in order["aggregator"]], fontsize=7)
        bar_ax.set_xlabel("instability / range (lower = better)")
        bar_ax.set_title("blue = Pareto front, * = recommended", fontsize=8)
        bar_ax.grid(axis="x", alpha=0.3)
    fig.suptitle("Aggregators: stability vs dynamic range (95% bootstrap CIs over problems)", fontsize=10)
    fig.tight_layout()
    # Point labels are placed once the layout is final, each where it overlaps no other label, no
    # marker and no legend (audits.report.plots._layout.place_labels); a label with no room is left to
    # the ratio panel below, which names every aggregator. The figure is drawn once for every panel and for the
    # tick labels: the labels of one panel move nothing in another, nor any tick.
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    for ax, (points, markers, on_front) in to_label.items():
        legend = ax.get_legend()
        place_labels(ax, points, markers=markers, fontsize=7, draw=False,
                     avoid=[legend.get_window_extent(renderer)] if legend else [],
                     color_of=lambda n, f=on_front: "black" if n in f else "dimgray")
    thin_tick_labels(fig, draw=False)  # the point labels moved no tick
    return fig
