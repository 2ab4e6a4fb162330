"""Figures for a results directory (the figure part of ``smmile report``), PNG + SVG.

* ``accuracy_<metric>``: per model, 0-shot and ICL accuracy bars with 95% percentile CI error bars
  (from ``smmile stats``; cluster bootstrap for SMMILE++).
* ``icl_gain``: ICL − 0-shot per model and metric with the paired bootstrap CI; filled markers are
  significant after Holm correction (exact McNemar, family = these comparisons).
* ``stratification_<em|llm>_<flag>``: heatmap model × stratum label from
  ``model_stratification_<em|llm>.json`` (as written by stratify).

matplotlib is imported lazily (Agg backend) so the rest of the package works without it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from smmile.errors import MissingDependency, UserError
from smmile.frontdoor import guarded
from smmile.scoring import bootstrap, stats, tables

FORMATS = ("png", "svg")
MODE_COLOURS = {"0-shot": "#8da0cb", "ICL": "#fc8d62"}


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    try:
        import matplotlib
    except ImportError:
        raise MissingDependency("matplotlib", "plots", why="figures") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, out: str, name: str, formats=FORMATS) -> list[str]:
    """Write ``out/name.<fmt>`` for each format and close the figure."""
    os.makedirs(out, exist_ok=True)
    paths = []
    for fmt in formats:
        path = os.path.join(out, f"{name}.{fmt}")
        fig.savefig(path, dpi=150, bbox_inches="tight")
        paths.append(path)
    pyplot().close(fig)
    return paths


def _model_order(rows) -> list[str]:
    models = {row["model"] for row in rows}
    return tables.priority_rows(models) + tables.other_rows(models)


# -- accuracy bars -------------------------------------------------------------------------------------
def accuracy_figure(rows: list[dict], metric: str):
    """Grouped bars (0-shot, ICL) per model with asymmetric CI error bars."""
    plt = pyplot()
    rows = [r for r in rows if r["metric"] == metric]
    models = _model_order(rows)
    cells = {(r["model"], r["mode"]): r for r in rows}
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(models) + 2), 4.5))
    x = np.arange(len(models))
    for offset, mode in ((-0.2, "0-shot"), (0.2, "ICL")):
        present = [(i, cells[(m, mode)]) for i, m in enumerate(models) if (m, mode) in cells]
        if not present:
            continue
        xs = [x[i] + offset for i, _ in present]
        acc = np.array([r["accuracy"] for _, r in present])
        err = np.array([[r["accuracy"] - r["ci_low"] for _, r in present],
                        [r["ci_high"] - r["accuracy"] for _, r in present]])
        ax.bar(xs, acc, width=0.4, color=MODE_COLOURS[mode], label=mode)
        ax.errorbar(xs, acc, yerr=np.nan_to_num(err), fmt="none", ecolor="#333333", elinewidth=0.8, capsize=2)
    ax.set_xticks(x, [tables.latex_name(m) for m in models], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(f"{metric} accuracy (%)")
    ax.set_ylim(0, min(100, max([r["ci_high"] for r in rows if r["ci_high"] == r["ci_high"]] + [10]) * 1.1))
    ax.set_title(f"{metric} accuracy, 0-shot vs ICL (95% bootstrap CI)")
    ax.legend(frameon=False)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    fig.tight_layout()
    return fig


# -- ICL gain -----------------------------------------------------------------------------------------
def icl_gain_figure(comparisons: list[dict], alpha: float = 0.05):
    """One panel per metric: ICL − 0-shot (pp) per model with paired CIs; filled = Holm-significant."""
    plt = pyplot()
    rows = [r for r in comparisons if r["kind"] == "icl_vs_0shot"]
    metrics = [m for m in stats.METRICS if any(r["metric"] == m for r in rows)]
    models = _model_order([{"model": r["model_a"]} for r in rows])
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics) + 1.5, 0.32 * len(models) + 1.6),
                             sharey=True, squeeze=False)
    y = {m: i for i, m in enumerate(models)}
    for ax, metric in zip(axes[0], metrics):
        for r in (r for r in rows if r["metric"] == metric):
            significant = r["p_holm"] == r["p_holm"] and r["p_holm"] < alpha
            colour = "#1b9e77" if r["difference"] >= 0 else "#d95f02"
            ax.errorbar(r["difference"], y[r["model_a"]],
                        xerr=[[max(0.0, r["difference"] - r["ci_low"])], [max(0.0, r["ci_high"] - r["difference"])]],
                        fmt="o", color=colour, mfc=colour if significant else "white", capsize=2, ms=5)
        ax.axvline(0, color="#555555", lw=0.8)
        ax.set_title(metric)
        ax.set_xlabel("ICL − 0-shot (pp)")
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(range(len(models)), [tables.latex_name(m) for m in models], fontsize=8)
    axes[0][0].invert_yaxis()
    fig.suptitle(f"ICL gain with paired 95% CI (filled: Holm-adjusted McNemar p < {alpha})", fontsize=10)
    fig.tight_layout()
    return fig


# -- stratification heatmaps --------------------------------------------------------------------------
def load_stratification(path: str) -> dict:
    """``{"<display>:<mode>": {"<flag>_accuracy": {label: mean}, "<flag>_total": ..., ...}}``."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise UserError(f"{path}: not a stratification file (expected model keys → flag tables)")
    return data


def stratification_flags(data: dict) -> list[str]:
    """Flags in file order (keys ``<flag>_accuracy`` of the first model)."""
    first = next(iter(data.values()), {})
    return [key[: -len("_accuracy")] for key in first if key.endswith("_accuracy")]


def _model_key_order(keys) -> list[str]:
    """0-shot keys sorted, then ICL keys sorted (stratify's console order)."""
    keys = list(keys)
    zero = sorted(k for k in keys if k.endswith(":0-shot"))
    return zero + sorted(k for k in keys if k not in zero)


def _sorted_labels(labels: list[str]) -> list[str]:
    """Numeric labels (e.g. num_ICL "2", "10") in numeric order; others in first-appearance order."""
    try:
        return sorted(labels, key=float)
    except (TypeError, ValueError):
        return labels


def stratification_figure(data: dict, flag: str, title: str):
    """Heatmap of ``<flag>_accuracy``: rows = model:mode, columns = labels (first appearance), with
    the accuracy written in each cell and the stratum sizes (of the first model) in the labels."""
    plt = pyplot()
    keys = [k for k in _model_key_order(data) if f"{flag}_accuracy" in data[k]]
    labels: list[str] = []
    for key in keys:
        labels.extend(l for l in data[key][f"{flag}_accuracy"] if l not in labels)
    labels = _sorted_labels(labels)
    grid = np.full((len(keys), len(labels)), np.nan)
    for i, key in enumerate(keys):
        for j, label in enumerate(labels):
            grid[i, j] = data[key][f"{flag}_accuracy"].get(label, np.nan)
    totals = data[keys[-1]].get(f"{flag}_total", {}) if keys else {}
    fig, ax = plt.subplots(figsize=(max(6.5, 0.75 * len(labels) + 4.0), 0.3 * len(keys) + 2.2))
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0, vmax=100, aspect="auto")
    for i, j in zip(*np.nonzero(~np.isnan(grid))):
        value = grid[i, j]
        ax.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=6.5,
                color="white" if value < 60 else "black")
    n_zero = sum(k.endswith(":0-shot") for k in keys)
    if 0 < n_zero < len(keys):
        ax.axhline(n_zero - 0.5, color="white", lw=2)  # 0-shot block above, ICL block below
    names = [f"{l} (n={totals[l]})" if l in totals else str(l) for l in labels]
    ax.set_xticks(range(len(labels)), names, rotation=40, ha="right", fontsize=7.5)
    ax.set_yticks(range(len(keys)), keys, fontsize=7)
    ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, label="accuracy (%)", fraction=0.04, pad=0.02)
    fig.tight_layout()
    return fig


def stratification_figures(results_dir: str, out: str, flags=None, formats=FORMATS) -> list[str]:
    """All heatmaps for the ``model_stratification_<em|llm>.json`` files present."""
    written = []
    for kind in ("em", "llm"):
        path = os.path.join(results_dir, f"model_stratification_{kind}.json")
        if not os.path.exists(path):
            continue
        data = load_stratification(path)
        for flag in stratification_flags(data):
            if flags and flag not in flags and flag.removeprefix("flag_") not in flags:
                continue
            title = f"{kind.upper()} accuracy (%) by {flag.removeprefix('flag_')}"
            written += save(stratification_figure(data, flag, title), out, f"stratification_{kind}_{flag}", formats)
    return written


# -- command line ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="smmile figures",
                                     description="Accuracy bars with CIs, ICL-gain plot and stratification "
                                                 "heatmaps for a results directory (PNG + SVG).")
    parser.add_argument("results_dir", help="directory with result_*.csv (+ *_evaluationllm.json, model_stratification_*.json)")
    parser.add_argument("--out", help="figure directory (default: figures/ beside results_dir, "
                                      "i.e. the repository's figures/ for ../results)")
    parser.add_argument("--n-boot", type=int, default=bootstrap.DEFAULT_N_BOOT, help="bootstrap resamples for the CIs")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--cluster", choices=stats.CLUSTER_CHOICES, default="auto",
                        help="auto: resample base problems when ids end in _perm_<k>")
    parser.add_argument("--flags", nargs="*", help="stratification flags to plot (default: all)")
    parser.add_argument("--formats", default="png,svg", help="comma-separated (default png,svg)")
    return parser


def default_out(results_dir: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(results_dir)), "figures")


def make_figures(args) -> list[str]:
    if not os.path.isdir(args.results_dir):
        raise UserError(f"results directory {args.results_dir} not found")
    out, formats = args.out or default_out(args.results_dir), tuple(args.formats.split(","))
    records = stats.load_records(args.results_dir)
    written = []
    if records:
        rows = stats.estimates(records, args.n_boot, args.seed, args.cluster, bootstrap.DEFAULT_LEVEL)
        for metric in stats.METRICS:
            if any(r["metric"] == metric for r in rows):
                written += save(accuracy_figure(rows, metric), out, f"accuracy_{metric.lower()}", formats)
        gains = stats.comparisons(records, "icl", args.n_boot, args.seed, args.cluster, bootstrap.DEFAULT_LEVEL)
        if gains:
            written += save(icl_gain_figure(gains), out, "icl_gain", formats)
    written += stratification_figures(args.results_dir, out, args.flags, formats)
    return written


def main(argv: list[str] | None = None) -> int:
    """Entry point of the figure part of ``smmile report``; returns the exit status."""
    args = build_parser().parse_args(argv)
    return guarded(lambda: _report_figures(args))


def _report_figures(args) -> int:
    written = make_figures(args)
    if not written:
        print(f"warning: nothing to plot in {args.results_dir}", file=sys.stderr)
        return 1
    print(f"{len(written)} figure file(s) written to {os.path.dirname(written[0])}")
    return 0
