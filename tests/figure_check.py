"""What a reviewer checks in a figure, measured on the drawn matplotlib figure (not a test
module; tests/test_figure_legibility.py runs it over every figure the project renders):

* **text**: no drawn text overlaps another, none reaches outside the figure (every Text that is
  actually drawn, its window extent after ``fig.canvas.draw()``, at both resolutions the files
  are written at);
* **legends**: no legend covers plotted data (a line, a marker, a bar or box, an interval) of
  any panel;
* **series**: no two entries of one legend share colour, marker and line style;
* **panels**: every panel holds data and no slot of a panel grid is left empty;
* **boxes**: a box plot only of at least :data:`backretrieval.reporting.figures.MIN_BOX_VALUES`
  values (fewer are shown as points): the sizes passed to ``matplotlib.cbook.boxplot_stats``,
  through which both matplotlib and seaborn draw their boxes (:func:`box_sizes`).
"""

from __future__ import annotations

import contextlib
import itertools
from unittest import mock

import matplotlib

matplotlib.use("Agg")

import matplotlib.cbook
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.text import Text

from backretrieval.reporting.figures import MIN_BOX_VALUES

#: the PNG's resolution (save_figure) and matplotlib's default figure dpi: text metrics are
#: hinted per resolution, so both are measured
DPIS = (100, 150)
#: overlap (pixels, both directions) below which two boxes only touch
TOL = 0.5


def agg(fig):
    """The figure's Agg canvas (pyplot's close leaves a figure with a base canvas that draws nothing)."""
    return fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)


def drawn_texts(fig, dpi: int) -> list:
    """(text, window extent) of every Text the figure draws at ``dpi``: a Text of a hidden
    axes, a tick outside the view or an empty string is not drawn and not counted."""
    drawn: list[Text] = []
    draw = Text.draw

    def record(self, renderer):
        draw(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)

    agg(fig).figure.set_dpi(dpi)
    with mock.patch.object(Text, "draw", record):
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    # Text's own extent: an Annotation's would include its arrow
    return [(t, Text.get_window_extent(t, renderer)) for t in dict.fromkeys(drawn)]


def overlap(a, b, tol: float = TOL) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) > tol and min(a.y1, b.y1) - max(a.y0, b.y0) > tol


def text_problems(fig) -> dict[str, list]:
    """Per dpi in :data:`DPIS`: the pairs of drawn texts that overlap and the texts that reach
    outside the figure."""
    out: dict[str, list] = {"overlapping": [], "outside": []}
    for dpi in DPIS:
        texts = drawn_texts(fig, dpi)
        page = fig.bbox
        for (ta, a), (tb, b) in itertools.combinations(texts, 2):
            if overlap(a, b):
                out["overlapping"].append((dpi, ta.get_text(), tb.get_text()))
        for t, b in texts:
            if b.x0 < page.x0 - TOL or b.y0 < page.y0 - TOL or b.x1 > page.x1 + TOL or b.y1 > page.y1 + TOL:
                out["outside"].append((dpi, t.get_text()))
    return out


# ---------------------------------------------------------------------------- legends over data


def _densify(xy: np.ndarray, step: float = 2.0) -> np.ndarray:
    """Points along a polyline (display pixels) at most ``step`` apart: a line crossing a legend
    between two of its vertices is found too."""
    if len(xy) < 2:
        return xy
    out = [xy[:1]]
    for a, b in zip(xy[:-1], xy[1:]):
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            continue
        n = max(1, int(np.hypot(*(b - a)) // step))
        t = np.linspace(0, 1, n + 1)[1:, None]
        out.append(a + t * (b - a))
    return np.vstack(out)


def _data_points(ax) -> tuple[list[tuple[str, np.ndarray]], list]:
    """The panel's plotted data in display pixels, clipped to the panel: (name, points) of its
    lines, markers and line segments, and the window extents of its bars and boxes. Shaded
    bands (fill_between) are not data a legend must avoid: they span most of a panel."""
    box = ax.get_window_extent()
    pts: list[tuple[str, np.ndarray]] = []
    for line in ax.lines:
        if not line.get_visible():
            continue
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
        if line.get_linestyle() not in ("None", "", " ", "none"):
            xy = _densify(xy)
        pts.append((f"line {line.get_label()!r}", xy))
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        if isinstance(coll, PathCollection) and len(coll.get_offsets()):
            pts.append(("markers", coll.get_offset_transform().transform(np.asarray(coll.get_offsets(), dtype=float))))
        elif isinstance(coll, LineCollection):
            t = coll.get_transform()
            for seg in coll.get_segments():
                if len(seg):
                    pts.append(("segment", _densify(t.transform(np.asarray(seg, dtype=float)))))
    inside = []
    for name, xy in pts:
        keep = (xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)
        inside.append((name, xy[keep & np.isfinite(xy).all(axis=1)]))
    patches = [p.get_window_extent() for p in ax.patches if p.get_visible() and isinstance(p, (Rectangle, Patch))]
    return inside, patches


def legend_problems(fig) -> list[str]:
    """Each legend (a panel's or the figure's) that covers data of any panel: a point of a
    line, marker or segment inside it, or a bar or box under it."""
    agg(fig).draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    out = []
    for leg in legends:
        if not leg.get_visible():
            continue
        lb = leg.get_window_extent(renderer).padded(-1)
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            pts, patches = _data_points(ax)
            for name, xy in pts:
                hit = (xy[:, 0] > lb.x0) & (xy[:, 0] < lb.x1) & (xy[:, 1] > lb.y0) & (xy[:, 1] < lb.y1)
                if hit.any():
                    out.append(f"legend {_legend_name(leg)} covers {name} of panel {ax.get_title()!r}")
                    break
            else:
                for pb in patches:
                    if pb.width > 0 and pb.height > 0 and overlap(lb, pb, 1.0):
                        out.append(f"legend {_legend_name(leg)} covers a bar or box of panel {ax.get_title()!r}")
                        break
    return out


def _legend_name(leg) -> str:
    return repr([t.get_text() for t in leg.get_texts()][:3])


# ---------------------------------------------------------------------------- series styles


def _style(handle) -> tuple:
    """What tells a legend entry apart: colour (RGBA, rounded), marker, line style, hatch."""

    def rgba(c) -> tuple:
        return tuple(np.round(to_rgba(c), 3))

    if isinstance(handle, Line2D):
        ls = handle.get_linestyle() if handle.get_linestyle() not in ("None", "", " ", "none") else "none"
        return ("line", rgba(handle.get_color()), str(handle.get_marker()), ls)
    if isinstance(handle, PathCollection):
        fc = handle.get_facecolor()
        paths = handle.get_paths()
        shape = tuple(np.round(paths[0].vertices, 2).ravel()) if paths else ()
        return ("markers", rgba(fc[0]) if len(fc) else (), shape)
    if isinstance(handle, Patch):
        return ("patch", rgba(handle.get_facecolor()), handle.get_hatch())
    return (type(handle).__name__, id(handle))


def style_problems(fig) -> list[str]:
    """The pairs of entries of one legend drawn alike (same colour, marker and line style)."""
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    out = []
    for leg in legends:
        seen: dict[tuple, str] = {}
        for handle, text in zip(leg.legend_handles, leg.get_texts()):
            key = _style(handle)
            if key in seen:
                out.append(f"{seen[key]!r} and {text.get_text()!r} are drawn alike")
            seen.setdefault(key, text.get_text())
    return out


# ---------------------------------------------------------------------------- panels


def _has_data(ax) -> bool:
    return bool(ax.lines or ax.collections or ax.patches or ax.images)


def panel_problems(fig) -> list[str]:
    """Visible panels without data, and slots of a panel grid that no visible panel fills."""
    out = []
    grids: dict[int, tuple] = {}
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        if ax.get_label() == "<colorbar>":
            continue
        if not _has_data(ax):
            out.append(f"panel {ax.get_title()!r} is empty")
        spec = ax.get_subplotspec()
        if spec is None:
            continue
        gs = spec.get_gridspec()
        rows, cols = spec.rowspan, spec.colspan
        cells = grids.setdefault(id(gs), (gs, set()))[1]
        cells.update((r, c) for r in rows for c in cols)
    for gs, cells in grids.values():
        nrows, ncols = gs.get_geometry()
        empty = [(r, c) for r in range(nrows) for c in range(ncols) if (r, c) not in cells]
        if empty:
            out.append(f"panel slots {empty} of a {nrows}x{ncols} grid are empty")
    return out


@contextlib.contextmanager
def box_sizes():
    """The number of values of each box drawn inside the block (matplotlib's and seaborn's
    boxplots compute their statistics with ``matplotlib.cbook.boxplot_stats``)."""
    sizes: list[int] = []
    real = matplotlib.cbook.boxplot_stats

    def record(X, *args, **kwargs):
        stats = real(X, *args, **kwargs)
        if isinstance(X, list):
            sizes.extend(int(np.size(x)) for x in X)
        elif np.ndim(X) == 2:
            sizes.extend([int(np.shape(X)[0])] * int(np.shape(X)[1]))
        else:
            sizes.append(int(np.size(X)))
        return stats

    with mock.patch.object(matplotlib.cbook, "boxplot_stats", record):
        yield sizes


def figure_problems(fig, boxes: list[int] | None = None) -> dict[str, list]:
    """Every check of this module; a clean figure gives only empty lists."""
    problems = dict(text_problems(fig))
    problems["legend over data"] = legend_problems(fig)
    problems["series drawn alike"] = style_problems(fig)
    problems["panels"] = panel_problems(fig)
    problems["boxes of few values"] = [n for n in (boxes or []) if n < MIN_BOX_VALUES]
    return problems


CLEAN = {
    "overlapping": [],
    "outside": [],
    "legend over data": [],
    "series drawn alike": [],
    "panels": [],
    "boxes of few values": [],
}
