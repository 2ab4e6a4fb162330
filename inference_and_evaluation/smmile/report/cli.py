"""``smmile report RESULTS [RESULTS ...] [--plusplus DIR] [--dataset D] --out DIR``: one self-contained
HTML page (figures, problem explorer) plus the figure files.

Writes ``<out>/index.html`` (figures and the explorer's data embedded, so it opens from disk without a
server), ``<out>/report_data.json`` (the numbers shown) and the PNG/SVG figures in ``--figures``
(default ``<out>/figures``). The output folder is checked before any work and is only reused when an
earlier ``smmile report`` wrote it (or with ``--force``). The same inputs give byte-identical files.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from smmile import fsguard
from smmile.analysis.results import parse_spec
from smmile.errors import MissingDependency, UserError
from smmile.cli.common import HelpFormatter, guarded
from smmile.report import (analysis_section, build, drawing, explorer, explorer_page, figures, html, sections,
                           side_by_side, strata)
from smmile.report.stages import Stages
from smmile.scoring import bootstrap, plots, stats

OWNER = "smmile report"
PAGE_NAME = "index.html"
DATA_NAME = "report_data.json"
INTERRUPTED = ("interrupted: the report was not written (figure files already written are complete); "
               "run the same command again to build it")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smmile report", formatter_class=HelpFormatter,
        description="One self-contained HTML page for one or more results folders (e.g. SMMILE and SMMILE++ side "
                    "by side): the paper's main table with bootstrap CIs, ICL gain per model, stratified views, "
                    "noise/order/permutation analyses, a problem explorer (with --dataset) and the run manifests "
                    "behind every number; paper-ready figures as PNG (300 dpi) + SVG.")
    parser.add_argument("results", nargs="+", metavar="[LABEL=]RESULTS",
                        help="results folder(s) with result_*.csv (+ *_evaluationllm.json, model_stratification_*.json, "
                             "*.manifest.json); the first is the reference of the side-by-side comparison. LABEL "
                             "defaults to SMMILE, or SMMILE++ for permuted problem ids")
    parser.add_argument("--plusplus", metavar="DIR", help="a SMMILE++ results folder to show beside the first "
                                                          "(same as adding SMMILE++=DIR)")
    parser.add_argument("--dataset", action="append", default=[], metavar="[LABEL=]DATASET",
                        help="dataset of the results (hub id, local path, demo): adds the problem explorer. Without "
                             "LABEL it serves every folder (SMMILE++ folders get its SMMILE++ counterpart: "
                             "demo -> demo-plusplus, the hub default -> smmile/SMMILE-plusplus); repeatable")
    parser.add_argument("--revision", help="dataset revision (hub) for --dataset")
    parser.add_argument("--out", default="report", help="output folder for index.html")
    parser.add_argument("--figures", help="figure folder (default: <out>/figures)")
    parser.add_argument("--analyses", action="append", default=[], metavar="DIR",
                        help="output folder of `smmile analyze` / `smmile agreement` (repeatable)")
    parser.add_argument("--title", help="page title (default: from the results folders)")
    parser.add_argument("--n-boot", type=int, default=bootstrap.DEFAULT_N_BOOT, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--level", type=float, default=bootstrap.DEFAULT_LEVEL,
                        help="interval level; significance is Holm-adjusted p < 1 - level with the interval excluding 0")
    parser.add_argument("--cluster", choices=stats.CLUSTER_CHOICES, default="auto",
                        help="auto: resample base problems when ids end in _perm_<k> (SMMILE++)")
    parser.add_argument("--formats", default="png,svg", help="figure formats, comma-separated: png and/or svg")
    parser.add_argument("--jobs", type=int, default=drawing.default_workers(),
                        help="worker processes for figures and thumbnails (1: draw in this process)")
    parser.add_argument("--force", action="store_true",
                        help="write into an existing folder that an earlier `smmile report` did not write")
    return parser


def settings_from(args) -> build.Settings:
    if args.n_boot < 1:
        raise UserError("--n-boot must be at least 1")
    if not 0 < args.level < 1:
        raise UserError("--level must be between 0 and 1")
    return build.Settings(args.n_boot, args.seed, args.level, args.cluster)


def formats_from(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(f.strip().lower() for f in text.split(",") if f.strip()))
    if not formats or any(f not in html.MIME for f in formats):
        raise UserError(f"--formats must list png and/or svg, got {text!r}")
    return formats


def result_specs(args) -> list[tuple[str | None, str]]:
    specs = [(label, str(path)) for label, path in map(parse_spec, args.results)]
    if args.plusplus:
        specs.append(("SMMILE++", args.plusplus))
    return specs


def dataset_for(rset, args) -> str | None:
    """The --dataset value that serves this folder (labelled for it, else the unlabelled one)."""
    labelled = [parse_spec(text) for text in args.dataset]
    mine = [str(path) for label, path in labelled if label == rset.label]
    plain = [text for text in args.dataset if parse_spec(text)[0] is None]
    return (mine or plain or [None])[0]


def load_datasets(sets, args, stage) -> list[list]:
    """Each folder's problems (SMMILE++ folders get the SMMILE++ counterpart of a plain --dataset)."""
    from smmile.data.load import load_problems, resolve

    found = []
    for rset in sets:
        dataset = dataset_for(rset, args)
        if dataset is None:
            found.append([])
            continue
        try:
            source = resolve(dataset, args.revision, augmented=rset.permuted)
            problems = load_problems(dataset, args.revision, augmented=rset.permuted)
        except UserError:
            raise
        except Exception as exc:  # hub/network/parquet problems: one line
            raise UserError(f"cannot load dataset {dataset}: {type(exc).__name__}: {exc}") from None
        stage(f"dataset for {rset.label}: {source.kind} {source.ref} ({len(problems)} problems)")
        found.append(problems)
    return found


# -- the page --------------------------------------------------------------------------------------------
def nav(data, with_explorer: bool) -> list[tuple[str, str]]:
    many = len(data.sets) > 1
    links = [(html.anchor("main", s.slug), f"Main table{' ' + s.label if many else ''}") for s in data.sets]
    links += [("sets", "Side by side")] if many else []
    links += [(html.anchor("gain", s.slug), f"ICL gain{' ' + s.label if many else ''}") for s in data.sets]
    links += [(html.anchor("strat", s.slug), f"Stratified{' ' + s.label if many else ''}") for s in data.sets]
    links += [("analyses", "Analyses")] + ([("problems", "Problems")] if with_explorer else [])
    return links + [(html.anchor("runs", s.slug), f"Runs{' ' + s.label if many else ''}") for s in data.sets]


def render(data, figs, page_dir: str) -> str:
    payload = data.explorer
    linked = payload is not None
    body = [sections.warnings(data)]
    body += [sections.main_section(data, s, figs, page_dir, linked) for s in data.sets]
    body.append(side_by_side.sets_section(data, figs, page_dir))
    body += [sections.gain_section(data, s, figs, page_dir) for s in data.sets]
    body += [strata.strat_section(data, s, figs, page_dir) for s in data.sets]
    body.append(analysis_section.analyses_section(data, figs, page_dir))
    body.append(explorer_page.section(payload) if linked else "")
    body += [sections.runs_section(s) for s in data.sets]
    return html.page(data.title, sections.header(data), nav(data, linked), "".join(body),
                     explorer_page.script() if linked else "", explorer_page.CSS if linked else "")


def _json_safe(value):
    """NaN → None, numpy scalars → Python, recursively (for ``json.dump(allow_nan=False)``)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    return None if isinstance(value, float) and math.isnan(value) else value


def can_draw(warnings: list) -> bool:
    """matplotlib imported once here (so the forked workers start with it); without it the page is
    written without figures, with a warning."""
    try:
        plots.pyplot()
    except MissingDependency as exc:
        warnings.append(f"figures left out: {exc}")
        return False
    return True


def check_outputs(args) -> tuple[str, str]:
    """The page and figure folders, checked before any work (nothing is created yet)."""
    out = os.path.abspath(args.out)
    fsguard.check_output_dir(out, OWNER, args.force)
    figs = os.path.abspath(args.figures) if args.figures else os.path.join(out, "figures")
    if args.figures:
        fsguard.check_output_dir(figs, OWNER, args.force)
    return out, figs


def write_report(args, stage) -> tuple[str, list]:
    settings, formats = settings_from(args), formats_from(args.formats)
    specs = result_specs(args)
    out, fig_dir = check_outputs(args)
    stage(f"statistics for {len(specs)} results folder(s) ({settings.n_boot} resamples)")
    data = build.gather(specs, args.analyses, settings, args.title)
    datasets = load_datasets(data.sets, args, stage) if args.dataset else None
    fsguard.prepare_output_dir(out, OWNER, args.force)
    if args.figures:
        fsguard.prepare_output_dir(fig_dir, OWNER, args.force)
    drawn = can_draw(data.warnings)
    with fsguard.OutputLock(out, f"the report in {out}"), drawing.Pool(max(1, args.jobs)) as pool:
        images = explorer.Images(datasets, pool) if datasets is not None else None
        planned = figures.plan(data, fig_dir, formats) if drawn else []
        stage(f"figures: {len(planned)} to draw ({len(planned) * len(formats)} files) on {max(1, args.jobs)} worker(s)")
        submitted = figures.submit(pool, planned)
        if images is not None:
            stage("problem explorer: answers, scores and thumbnails")
            data.explorer = explorer.build(data.sets, datasets, images)
            stage(f"problem explorer: {len(data.explorer['problems'])} problems, {len(data.explorer['images'])} images")
            data.warnings += explorer.unmatched(data.explorer)
        figs = figures.collect(submitted)
        stage("figures drawn; writing the page")
        page_path = os.path.join(out, PAGE_NAME)
        fsguard.atomic_write_text(page_path, render(data, figs, out))
        fsguard.atomic_write_json(os.path.join(out, DATA_NAME), _json_safe(build.to_json(data)), allow_nan=False)
    stage(f"page written: {page_path} ({os.path.getsize(page_path) / 1e6:.1f} MB)")
    return page_path, data.warnings


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``smmile report``; 0 on success, 1 when inputs were skipped, 2 on bad input."""
    args = build_parser().parse_args(argv)
    return guarded(lambda: _report(args), interrupted=INTERRUPTED)


def _report(args) -> int:
    page_path, warnings = write_report(args, Stages("smmile report"))
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"Report written to {page_path}")
    return 1 if warnings else 0
