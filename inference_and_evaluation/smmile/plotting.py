"""Paper-ready figures (PNG at 300 dpi + SVG) from plain rows with display names: ``bars``, ``forest``,
``dumbbell``, ``heatmap``. A missing result is a grey × ("no result"), never a zero. Sizes: ``page`` (text at
least ``MIN_FONT`` pt as the report shows it), ``paper`` (one column), ``slide`` (16:9). Okabe-Ito colours,
cividis and marker shapes: readable in grayscale. Same inputs, same bytes (fixed SVG hash salt, no date).
"""

from __future__ import annotations

import math
import os
import re
import textwrap

import numpy as np

from smmile.errors import MissingDependency

FORMATS = ("png", "svg")
DPI = 300
MIN_FONT = 9.0
MAX_WIDTH = 12.0  # inches; the report page is 1200 px wide at 96 px per inch
STYLE = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica", "Liberation Sans"],
    "font.size": 10, "axes.titlesize": 10.5, "axes.labelsize": 10, "xtick.labelsize": 9.5,
    "ytick.labelsize": 9.5, "legend.fontsize": 9.5, "figure.titlesize": 11.5,
    "axes.spines.top": False, "axes.spines.right": False, "axes.titlelocation": "left",
    "svg.fonttype": "none", "svg.hashsalt": "smmile", "savefig.dpi": DPI,
}
FONT_KEYS = ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize",
             "legend.fontsize", "figure.titlesize")
SIZES = {  # --figure-size: None keeps STYLE and each figure's own size (the page's)
    "page": None,
    "paper": {"width": 3.3, "height": None, "fonts": (7.5, 8, 7.5, 7, 7, 7, 8), "cell_font": 7.0},
    "slide": {"width": 10.0, "height": 5.625, "fonts": (14, 15, 14, 13, 13, 13, 16), "cell_font": 13.0},
}
_SIZE: dict = {"profile": None}  # the size of the figure being drawn (set by ``draw``, one figure at a time)
SERIES_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")  # Okabe-Ito
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P")
MODE_COLOURS = {"0-shot": "#E69F00", "ICL": "#0072B2"}
GREY = "#777777"
NO_RESULT = {"ls": "none", "marker": "x", "ms": 6, "mew": 1.4, "color": GREY}  # a grey × where a result is missing
SMALL_FACE = "#f0f0f0"
HATCH = "#b0b0b0"


def pyplot():
    try:
        import matplotlib
    except ImportError:
        raise MissingDependency("matplotlib", "plots", why="figures") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, out: str, name: str, formats=FORMATS) -> list[str]:
    from smmile.fsguard import atomic_path, remove_stale_temps

    os.makedirs(out, exist_ok=True)
    paths = []
    for fmt in formats:
        path = os.path.join(out, f"{name}.{fmt}")
        remove_stale_temps(path)  # a killed earlier run's hidden .<name>.*.tmp.<fmt>
        with atomic_path(path) as tmp:
            if fmt == "png":
                write_png(fig, tmp)
            else:
                fig.savefig(tmp, format=fmt, dpi=DPI, metadata={"Date": None})  # formats: png, svg
        fig.set_layout_engine("none")  # laid out once, by the first save; the other formats reuse it
        paths.append(path)
    pyplot().close(fig)
    return paths


def write_png(fig, path) -> None:
    """The pixels ``savefig`` draws, without the all-opaque alpha channel (a third faster, a smaller file)."""
    from PIL import Image

    dpi = fig.dpi
    fig.set_dpi(DPI)
    try:
        fig.canvas.draw()
        rgba = np.asarray(fig.canvas.buffer_rgba())
    finally:
        fig.set_dpi(dpi)
    Image.fromarray(rgba).convert("RGB").save(path, format="PNG", dpi=(DPI, DPI), compress_level=3)


def draw(job: dict) -> list[str]:
    """Draw and save one (picklable) job ``{"kind", "spec", "out", "name", "formats", "size"}``; the paths."""
    plt = pyplot()
    size = job.get("size", "page")
    if size not in SIZES:
        raise ValueError(f"figure size {size!r}: one of {', '.join(SIZES)}")
    profile = SIZES[size]
    style = dict(STYLE, **dict(zip(FONT_KEYS, profile["fonts"]))) if profile else STYLE
    _SIZE["profile"] = profile
    try:
        with plt.rc_context(style):
            fig = FIGURES[job["kind"]](**job["spec"])
            if profile:  # its width (and a slide's height); a paper figure keeps a height that leaves rows readable
                height = profile["height"] or min(9.0, max(2.4, fig.get_figheight() * 0.75))
                fig.set_size_inches(profile["width"], float(height))
            return save(fig, job["out"], job["name"], job.get("formats", FORMATS))
    finally:
        _SIZE["profile"] = None


def _rc(key: str) -> float:
    import matplotlib
    from matplotlib.font_manager import FontProperties

    return FontProperties(size=matplotlib.rcParams[key]).get_size_in_points()


def _width(needed: float, least: float = 6.0) -> float:
    profile = _SIZE["profile"]
    return float(profile["width"]) if profile else float(min(MAX_WIDTH, max(least, needed)))


def wrapped(text: str, width_in: float, size_pt: float) -> str:
    """``text`` in lines that fit ``width_in`` inches at ``size_pt`` (DejaVu Sans: ~0.6 em a character)."""
    text = re.sub(r"(\S) = (\S)", "\\1\u00a0=\u00a0\\2", text)  # never break "n = 24" apart
    return "\n".join(textwrap.wrap(text, max(12, int(width_in * 72 / (size_pt * 0.6))))) or text


def _suptitle(fig, title: str) -> None:
    fig.suptitle(wrapped(title, fig.get_figwidth() - 0.1, _rc("figure.titlesize")), x=0.01, ha="left")


def _legend_below(fig, handles, ncol: int | None = None) -> None:
    if handles:
        most = 2 if _SIZE["profile"] and _SIZE["profile"]["width"] < 5 else 4  # a paper column: two per line
        fig.legend(handles=handles, loc="outside lower center", ncol=min(ncol or 4, len(handles), most),
                   frameon=False)


def bars_figure(rows: list[dict], series: list[str], title: str, ylabel: str, n_baselines: int = 0,
                ci_label: str = "95% CI"):
    """``rows``: ``[{"label", "values": {series: [estimate, low, high]}}]`` in display order; the first
    ``n_baselines`` rows are set apart by a dotted line. One bar per series present in the rows."""
    plt = pyplot()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    present = [s for s in series if any(s in r["values"] for r in rows)]
    width = 0.8 / max(1, len(present))
    fig, ax = plt.subplots(figsize=(_width(1.8 + 0.55 * len(rows), 4.5), 4.8), layout="constrained")
    x = np.arange(len(rows))
    for k, name in enumerate(present):
        offset = (k - (len(present) - 1) / 2) * width
        have = [(i, r["values"][name]) for i, r in enumerate(rows) if name in r["values"]]
        xs = np.array([x[i] + offset for i, _ in have])
        est = np.array([v[0] for _, v in have], dtype=float)
        err = np.array([[max(0.0, v[0] - v[1]) for _, v in have], [max(0.0, v[2] - v[0]) for _, v in have]])
        ax.bar(xs, est, width=width * 0.95, color=MODE_COLOURS.get(name, SERIES_COLOURS[k % 6]), label=name)
        ax.errorbar(xs, est, yerr=np.nan_to_num(err), fmt="none", ecolor="#222222", elinewidth=0.9, capsize=2.5)
        missing = [x[i] + offset for i, r in enumerate(rows) if name not in r["values"]]
        if missing:
            ax.plot(missing, [0] * len(missing), **NO_RESULT, clip_on=False, zorder=5)
    if 0 < n_baselines < len(rows):
        ax.axvline(n_baselines - 0.5, color=GREY, lw=0.8, ls=":")
    ax.set_xticks(x, [r["label"] for r in rows], rotation=35, ha="right", rotation_mode="anchor")
    highs = [v[2] for r in rows for v in r["values"].values() if v[2] == v[2]]
    ax.set(xlim=(-0.6, len(rows) - 0.4), ylim=(0, min(100.0, max(highs + [10.0]) * 1.12)), ylabel=ylabel,
           title=wrapped(title, max(1.5, fig.get_figwidth() - 0.9), _rc("axes.titlesize")))
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Patch(color=MODE_COLOURS.get(s, SERIES_COLOURS[k % 6]), label=s) for k, s in enumerate(present)]
    handles.append(Line2D([], [], color="#222222", marker="|", ms=10, lw=0.9, label=ci_label))
    if any(s not in r["values"] for r in rows for s in present):
        handles.append(Line2D([], [], **NO_RESULT, label="no result"))
    if 0 < n_baselines < len(rows):
        handles.append(Line2D([], [], color=GREY, lw=0.8, ls=":", label="baselines | models"))
    _legend_below(fig, handles)
    return fig


def forest_figure(rows: list[dict], labels: list[str], panels: list[str], title: str, xlabel: str,
                  series: list[str] = (), significance: str = "significant"):
    """``rows``: ``[{"label", "panel", "series", "estimate", "low", "high", "significant"}]``, or ``{..., "missing":
    True}`` (a grey × at 0); ``labels`` (top to bottom) and ``panels`` fix the layout. Filled = ``significance``."""
    plt = pyplot()
    from matplotlib.lines import Line2D

    series = list(series) or [None]
    fig, axes = plt.subplots(1, len(panels), squeeze=False, sharey=True, layout="constrained",
                             figsize=(_width(2.4 + 3.0 * len(panels)), 0.32 * len(labels) * len(series) ** 0.5 + 2.2))
    y = {label: i for i, label in enumerate(labels)}
    step = 0.6 / len(series)
    for ax, panel in zip(axes[0], panels):
        for r in (r for r in rows if r["panel"] == panel):
            k = series.index(r.get("series")) if r.get("series") in series else 0
            colour, marker = SERIES_COLOURS[k % 6], SERIES_MARKERS[k % 6]
            yy = y[r["label"]] + (k - (len(series) - 1) / 2) * step
            if r.get("missing"):
                ax.plot([0], [yy], **NO_RESULT, clip_on=False, zorder=5)
                continue
            xerr = None if math.isnan(r["low"]) or math.isnan(r["high"]) else \
                [[max(0.0, r["estimate"] - r["low"])], [max(0.0, r["high"] - r["estimate"])]]
            ax.errorbar(r["estimate"], yy, xerr=xerr, fmt=marker, color=colour, ms=6, capsize=2.5, lw=1.1,
                        mfc=colour if r.get("significant") else "white", mew=1.3)
        ax.axvline(0, color="#444444", lw=0.8)
        ax.set(title=panel, xlabel=xlabel)
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set(yticks=range(len(labels)), yticklabels=labels, ylim=(len(labels) - 0.5, -0.5))
    _suptitle(fig, title)
    handles = [Line2D([], [], color=SERIES_COLOURS[k % 6], marker=SERIES_MARKERS[k % 6], lw=1.1, label=s)
               for k, s in enumerate(series) if s is not None and len(series) > 1]
    handles += [Line2D([], [], color="#333333", marker="o", lw=1.1, label=f"filled: {significance}"),
                Line2D([], [], color="#333333", marker="o", mfc="white", lw=1.1, label="open: not significant")]
    if any(r.get("missing") for r in rows):
        handles.append(Line2D([], [], **NO_RESULT, label="no result"))
    _legend_below(fig, handles, ncol=min(len(handles), 3))
    return fig


def dumbbell_figure(rows: list[dict], labels: list[str], panels: list[str], series: list[str], title: str,
                    xlabel: str, interval: bool = True):
    """``rows``: ``[{"label", "panel", "values": {series: [estimate, low, high]}}]``: each series' estimate with
    its interval, joined by a grey line, on an axis of 0-100 (accuracies, so that panels compare)."""
    plt = pyplot()
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(1, len(panels), squeeze=False, sharey=True, layout="constrained",
                             figsize=(_width(2.4 + 3.0 * len(panels)), 0.36 * len(labels) + 2.2))
    y = {label: i for i, label in enumerate(labels)}
    step = 0.5 / max(1, len(series))
    for ax, panel in zip(axes[0], panels):
        for r in (r for r in rows if r["panel"] == panel):
            est = [r["values"][s][0] for s in series if s in r["values"]]
            if len(est) > 1:
                ax.plot([min(est), max(est)], [y[r["label"]]] * 2, color="#bbbbbb", lw=3, zorder=1)
            for k, s in enumerate(series):
                if s not in r["values"]:
                    continue
                e, lo, hi = r["values"][s]
                yy = y[r["label"]] + (k - (len(series) - 1) / 2) * step
                ax.plot([lo, hi], [yy, yy], color=SERIES_COLOURS[k % 6], lw=1.1, zorder=2)
                ax.plot([e], [yy], marker=SERIES_MARKERS[k % 6], color=SERIES_COLOURS[k % 6], ms=6.5, zorder=3)
        ax.set(title=panel, xlabel=xlabel)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlim(0, 100)
    axes[0][0].set(yticks=range(len(labels)), yticklabels=labels, ylim=(len(labels) - 0.5, -0.5))
    _suptitle(fig, title)
    handles = [Line2D([], [], color=SERIES_COLOURS[k % 6], marker=SERIES_MARKERS[k % 6], lw=1.1,
                      label=f"{s} (line: 95% CI)" if interval else s) for k, s in enumerate(series)]
    handles.append(Line2D([], [], color="#bbbbbb", lw=3, label="difference"))
    _legend_below(fig, handles)
    return fig


def heatmap_figure(panels: list[dict], rows: list[str], title: str, small_label: str):
    """``panels``: ``[{"title", "columns", "values": [[value or None]], "small": [[bool]]}]`` sharing ``rows``
    (top to bottom). Values 0-100 written in each cell; small cells hatched without a value (``small_label``)."""
    plt = pyplot()
    from matplotlib.patches import Patch

    n_cols = [len(p["columns"]) for p in panels]
    cell = max(0.36, min(0.55, (MAX_WIDTH - 3.2) / max(1, sum(n_cols))))
    label = max(len(c) for p in panels for c in p["columns"])  # rotated column labels take ~0.05 in a character
    height = max(1.5, 0.3 * len(rows)) + 1.4 + 0.05 * label
    fig, axes = plt.subplots(1, len(panels), squeeze=False, sharey=True, layout="constrained",
                             figsize=(_width(2.8 + cell * sum(n_cols) + 0.4 * len(panels), 5.0), height),
                             gridspec_kw={"width_ratios": [max(1, n) for n in n_cols]})
    for ax, panel in zip(axes[0], panels):
        image = _heatmap_panel(ax, panel, len(rows))
    axes[0][0].set_yticks(range(len(rows)), rows)
    bar = fig.colorbar(image, ax=list(axes[0]), label="accuracy (%)", fraction=0.05, pad=0.02, aspect=30)
    bar.solids.set_rasterized(False)  # vector in the SVG too (no embedded bitmap) ...
    bar.solids.set_edgecolor("face")  # ... without seams between its bands
    _suptitle(fig, title)
    handles = []
    if any(s for p in panels for row in p["small"] for s in row):
        handles.append(Patch(facecolor=SMALL_FACE, edgecolor=HATCH, hatch="///", label=small_label))
    if any(v is None for p in panels for row in p["values"] for v in row):
        handles.append(Patch(facecolor="white", edgecolor="#999999", label="–  no result"))
    _legend_below(fig, handles, len(handles))
    return fig


def _heatmap_panel(ax, panel: dict, n_rows: int):
    from matplotlib.collections import PolyCollection

    font = (_SIZE["profile"] or {}).get("cell_font", MIN_FONT)
    values = np.array([[np.nan if v is None else v for v in row] for row in panel["values"]], dtype=float)
    values = values.reshape(n_rows, len(panel["columns"]))
    small = np.array(panel["small"], dtype=bool).reshape(values.shape)
    edges_x, edges_y = np.arange(values.shape[1] + 1) - 0.5, np.arange(n_rows + 1) - 0.5
    mesh = ax.pcolormesh(edges_x, edges_y, np.ma.masked_where(np.isnan(values) | small, values),
                         cmap="cividis", vmin=0, vmax=100)
    if small.any():  # one hatched collection for every small cell (cheap to draw, readable in grayscale)
        cells = [[(j - 0.5, i - 0.5), (j + 0.5, i - 0.5), (j + 0.5, i + 0.5), (j - 0.5, i + 0.5)]
                 for i, j in zip(*np.nonzero(small))]
        ax.add_collection(PolyCollection(cells, facecolor=SMALL_FACE, edgecolor=HATCH, hatch="///", linewidth=0))
    for i, j in np.ndindex(values.shape):
        value = values[i, j]
        if math.isnan(value):
            ax.text(j, i, "–", ha="center", va="center", fontsize=font, color=GREY)
        elif not small[i, j]:
            ax.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=font,
                    color="white" if value < 55 else "black")
    ax.set(xlim=(-0.5, values.shape[1] - 0.5), ylim=(n_rows - 0.5, -0.5))
    ax.set_xticks(range(len(panel["columns"])), panel["columns"], rotation=40, ha="right", rotation_mode="anchor")
    ax.tick_params(length=0)
    ax.spines[:].set_visible(False)
    ax.set_title(panel["title"])
    return mesh


FIGURES = {"bars": bars_figure, "forest": forest_figure, "dumbbell": dumbbell_figure, "heatmap": heatmap_figure}
