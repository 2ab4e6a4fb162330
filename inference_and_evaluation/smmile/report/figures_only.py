"""The work of ``smmile figures``: the report's figures for one results folder, without the page."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from smmile import fsguard, plotting
from smmile.errors import UserError
from smmile.report import build, figures, workers
from smmile.report.page import FigureFlags, stages

log = logging.getLogger(__name__)

OWNER = "smmile figures"


@dataclass(frozen=True)
class FiguresRequest(FigureFlags):
    """The flags of ``smmile figures`` (``smmile.cli.figures``)."""

    results_dir: str
    out: str | None = None
    flags: tuple[str, ...] | None = None


def default_out(results_dir: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(results_dir)), "figures")


def wanted(planned, flags) -> list:
    if not flags:
        return planned
    keep = set(flags) | {f"flag_{f}" for f in flags}
    return [(fig, job) for fig, job in planned if fig.place[0] != "strat" or fig.place[3] in keep]


def make_figures(req: FiguresRequest, stage, warnings: list) -> list[str]:
    settings, formats = req.checked()
    out = req.out or default_out(req.results_dir)
    if not os.path.isdir(req.results_dir):
        raise UserError(f"results directory {req.results_dir} not found")
    fsguard.check_output_dir(out, OWNER, req.force)  # the repository's figures/ (only a .gitkeep) counts as empty
    stage(f"statistics for {req.results_dir} ({req.n_boot} resamples)")
    data = build.ReportData("", settings, warnings=warnings)
    data.sets.append(build.gather_set(None, req.results_dir, 0, settings, warnings, set()))
    planned = wanted(figures.plan(data, os.path.abspath(out), formats, size=req.figure_size), req.flags)
    if not planned:
        return []
    fsguard.prepare_output_dir(out, OWNER, req.force)
    stage(f"figures: {len(planned)} to draw ({len(planned) * len(formats)} files) on {max(1, req.jobs)} worker(s)")
    plotting.pyplot()  # imported once here, so the forked workers start with it
    with workers.Pool(max(1, req.jobs)) as pool:
        done = figures.collect(figures.submit(pool, planned))
    return [path for fig in done for path in fig.files.values()]


def write_figures(req: FiguresRequest) -> tuple[list[str], int]:
    """The files written and the exit status: 0 when every input was drawn, 1 when some were skipped (each
    named on stderr) or nothing was."""
    warnings: list[str] = []
    written = make_figures(req, stages("smmile figures"), warnings)
    for warning in warnings:
        log.warning(f"warning: {warning}")
    if not written:
        log.warning(f"warning: nothing to plot in {req.results_dir}")
        return [], 1
    return written, 1 if warnings else 0
