"""Legibility helpers shared by the figures: duration ticks on log axes, tick thinning, label placement.

Each helper works on the laid-out figure with matplotlib's own renderer (text extents in display
pixels), so what it guarantees (no two tick labels overlap, no two point labels overlap) holds for
the PNG the report embeds.
"""

from __future__ import annotations

import functools

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from audits.report.narrative.common import PLAIN_TEXT  # noqa: E402

__all__ = ["log_duration_axis", "thin_tick_labels", "place_labels", "loggable", "names_as_text",
           "note_not_drawn"]



def names_as_text(figure_function):
    """Run a figure function with :data:`PLAIN_TEXT`: every text it makes is drawn as written, never as math (a
    text keeps the setting it was made with; :func:`audits.report.narrative.show_figure` draws under it too, for
    the tick labels matplotlib makes when it draws)."""
    @functools.wraps(figure_function)
    def figure_with_plain_text(*args, **kwargs):
        with matplotlib.rc_context(PLAIN_TEXT):
            return figure_function(*args, **kwargs)
    return figure_with_plain_text


def format_duration(seconds: float) -> str:
    """A short duration label: ``'24 ms'``, ``'1.5 s'``, ``'800 µs'`` (three significant digits at most).

    >>> [format_duration(v) for v in (0.024, 1.5, 8e-4, 20.0)]
    ['24 ms', '1.5 s', '800 µs', '20 s']
    """
    v = float(seconds)
    if not np.isfinite(v) or v <= 0:
        return ""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if v >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v / 1e-9:.3g} ns"


def _log_ticks(lo: float, hi: float) -> np.ndarray:
    """Tick positions for a log axis on [lo, hi]: decades, then 1-2-5, then linear nice numbers.

    The first set that puts at least three ticks inside the view wins; a view narrower than that
    (less than a factor ~2) gets linear nice numbers (MaxNLocator), which a log axis draws fine.
    """
    decades = np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)
    for subs in ((1.0,), (1.0, 2.0, 5.0)):
        ticks = np.array([s * 10.0 ** d for d in decades for s in subs])
        inside = ticks[(ticks >= lo) & (ticks <= hi)]
        if len(inside) >= 3:
            return inside
    ticks = MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
    return ticks[(ticks >= lo) & (ticks <= hi) & (ticks > 0)]


def loggable(*arrays) -> np.ndarray:
    """Where every one of ``arrays`` is finite and > 0: the points a log axis can show.

    Examples
    --------
    >>> loggable(np.array([1.0, 0.0, -2.0, np.nan, 3.0])).tolist()
    [True, False, False, False, True]
    """
    keep = np.ones(len(arrays[0]), dtype=bool)
    for values in arrays:
        v = np.asarray(values, dtype=float)
        keep &= np.isfinite(v) & (v > 0)
    return keep


def note_not_drawn(ax, n_left_out: int, n_total: int, *, why: str = "zero, negative or NaN: not on a log axis") -> None:
    """Say on the axes how many of ``n_total`` points are not drawn and why (nothing when none is left out).

    A figure never drops data silently: a corpus that validates may hold zero or negative durations (an
    importer's clock), NaN, or a single point, and a log axis cannot show the first three.
    """
    if n_left_out <= 0:
        return
    text = ("nothing to draw: " if n_left_out >= n_total else f"{n_left_out:,} of {n_total:,} points not drawn: ") + why
    ax.text(0.5, 0.5 if n_left_out >= n_total else 0.02, text, transform=ax.transAxes, ha="center",
            va="center" if n_left_out >= n_total else "bottom", fontsize=8, color="0.3",
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.7"}, gid="not-drawn-note")


def log_duration_axis(ax, which: str = "both") -> None:
    """Log-scale duration ticks with short labels ("24 ms") on the x and/or y axis of ``ax``.

    Call after the data are drawn (the view limits are read). Minor ticks stay as marks without labels;
    :func:`thin_tick_labels` then removes any label that would still touch its neighbour.
    """
    axes = {"x": [ax.xaxis], "y": [ax.yaxis], "both": [ax.xaxis, ax.yaxis]}[which]
    for axis in axes:
        lo, hi = sorted(axis.get_view_interval())
        if not (np.isfinite(lo) and np.isfinite(hi) and lo > 0 and hi > lo):
            continue
        axis.set_major_locator(FixedLocator(_log_ticks(lo, hi)))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: format_duration(v)))
        axis.set_minor_formatter(NullFormatter())


def _visible_labels(axis, renderer):
    out = []
    for label in axis.get_ticklabels(which="both"):
        if label.get_visible() and label.get_text():
            out.append((label, label.get_window_extent(renderer)))
    return out


def thin_tick_labels(fig, *, pad: float = 2.0, draw: bool = True) -> int:
    """Hide tick labels that overlap a kept neighbour (in display pixels, ``pad`` px apart); returns how many.

    Labels are kept in axis order from the low end, so the kept ones are evenly spread. The figure is
    drawn once to lay it out (the ticks and their labels are made at draw time), unless ``draw`` is False: the
    caller has drawn it since anything that moves a tick or changes a label.
    """
    if draw:
        fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    hidden = 0
    for ax in fig.axes:
        for axis, horizontal in ((ax.xaxis, True), (ax.yaxis, False)):
            labels = _visible_labels(axis, renderer)
            labels.sort(key=lambda lb: lb[1].x0 if horizontal else lb[1].y0)
            kept = None
            for label, box in labels:
                if kept is not None and kept.padded(pad).overlaps(box):
                    label.set_visible(False)
                    hidden += 1
                else:
                    kept = box
    return hidden


# Offsets (points) tried for a point label, nearest first: right, above, left, below, then diagonals
# and farther rings.
_OFFSETS = [(dx * r, dy * r) for r in (1, 2, 3)
            for dx, dy in ((5, 3), (5, -9), (-5, 3), (-5, -9), (0, 7), (0, -13), (9, 0), (-9, 0))]


def place_labels(ax, points, *, fontsize: float = 7, color_of=None, avoid=(), markers=(),
                 marker_px: float = 4.0, draw: bool = True) -> list:
    """Annotate points without overlaps: each label tries offsets nearest first and takes the first free one.

    Hand-written rather than adjustText: the placement must be deterministic (a function of the
    points as a set: labels are placed in name order) and guarantee that no two labels overlap, and a
    label that finds no free spot is left out (the caller's table or bar panel still names it).

    Parameters
    ----------
    ax : Axes
    points : iterable of (label, x, y)
    color_of : callable label -> colour, optional
    avoid : iterable of Bbox
        Display-space boxes the labels must not cover (e.g. the legend).
    markers : iterable of (x, y) or (x, y, half_size_px)
        Data points (besides ``points``) whose markers the labels must not cover (``marker_px`` around
        unless given).
    draw : bool
        Draw the figure first, to lay it out (the default). False when the caller has drawn it since its layout
        last changed: labels placed on other axes meanwhile move nothing here (a figure of six panels was drawn
        six more times, each a full draw of every panel, for the same labels).

    Returns
    -------
    list of matplotlib.text.Annotation
        The labels placed (one per point that found room).
    """
    fig = ax.figure
    if draw:
        fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    taken = [Bbox(b) for b in avoid]
    points = list(points)
    spots = [(p[1], p[2], marker_px) for p in points] + [(m[0], m[1], m[2] if len(m) > 2 else marker_px)
                                                         for m in markers]
    if spots:
        centres = ax.transData.transform(np.array([s[:2] for s in spots], dtype=float))
        taken += [Bbox.from_extents(cx - r, cy - r, cx + r, cy + r)
                  for (cx, cy), (_, _, r) in zip(centres, spots) if np.isfinite(cx) and np.isfinite(cy)]
    frame = ax.get_window_extent(renderer)
    placed = []
    for name, x, y in sorted(points, key=lambda p: (str(p[0]), p[1], p[2])):
        for dx, dy in _OFFSETS:
            ann = ax.annotate(str(name), (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=fontsize,
                              ha="left" if dx >= 0 else "right",
                              color=color_of(name) if color_of else "black")
            box = ann.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.padded(1.0).overlaps(t) for t in taken):
                taken.append(box)
                placed.append(ann)
                break
            ann.remove()
    return placed
