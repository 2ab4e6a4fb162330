"""The work of ``smmile report``: ``<out>/index.html`` (figures and the explorer's data embedded, so it opens from
disk), ``<out>/report_data.json`` (the numbers shown) and the PNG/SVG figures. The output folder is checked before
any work and only reused when an earlier ``smmile report`` wrote it (or with ``--force``). The same inputs give
byte-identical files."""

from __future__ import annotations

import logging
import os
import time
import uuid
from dataclasses import dataclass, field

from smmile import fsguard, logs
from smmile.analysis.result_sets import parse_spec
from smmile import plotting
from smmile.errors import MissingDependency, UserError
from smmile.analysis.reviews import read_reviews
from smmile.report import build, explorer, explorer_page, figures, html, sections, strata, workers
from smmile.scoring import statistics
from smmile.scoring.estimates import check_resampling
from smmile.scoring.scores import datasets_named
from smmile.scoring.stats_run import json_safe

log = logging.getLogger(__name__)

OWNER = "smmile report"
IMAGES_SLOT = f"<!--smmile report: the explorer's thumbnails {uuid.uuid4().hex}-->"  # see render
PAGE_NAME = "index.html"
DATA_NAME = "report_data.json"


@dataclass(frozen=True, kw_only=True)
class FigureFlags(statistics.Resampling):
    """The flags ``smmile report`` and ``smmile figures`` share: resampling, and the figures' files and workers."""

    formats: str = "png,svg"
    figure_size: str = "page"  # plotting.SIZES: page (as the page shows them), paper (one column), slide (16:9)
    jobs: int = field(default_factory=workers.default_workers)
    force: bool = False

    def checked(self) -> tuple[statistics.Resampling, tuple[str, ...]]:
        """The resampling settings and the figure formats; a UserError for a value out of range."""
        check_resampling(self.n_boot, self.level)
        resampling = statistics.Resampling(n_boot=self.n_boot, seed=self.seed, level=self.level, cluster=self.cluster)
        return resampling, formats_from(self.formats)


@dataclass(frozen=True)
class ReportRequest(FigureFlags):
    """The flags of ``smmile report`` (``smmile.cli.report``); ``results``: ``[LABEL=]PATH``, the first is the
    reference; ``datasets``: ``[LABEL=]DATASET``."""

    results: tuple[str, ...]
    out: str = "report"
    plusplus: str | None = None
    datasets: tuple[str, ...] = ()
    revision: str | None = None
    figures: str | None = None
    analyses: tuple[str, ...] = ()
    title: str | None = None
    reviews: tuple[str, ...] = ()  # reviews.json files (smmile-reviews/1): re-scored accuracies, disputed verdicts
    strict: bool = False  # a review of an answer the results do not have: exit 2 (else refused and counted)


def stages(command: str):
    """A function that logs stage lines while ``command`` works (``[  3.2 s] figures: 42 to draw on 2 workers``)."""
    started = time.monotonic()
    return lambda text: log.info(f"{command} [{time.monotonic() - started:6.1f} s] {text}")


def formats_from(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(f.strip().lower() for f in text.split(",") if f.strip()))
    if not formats or any(f not in html.MIME for f in formats):
        raise UserError(f"--formats must list png and/or svg, got {text!r}")
    return formats


def dataset_for(rset, req: ReportRequest) -> str | None:
    """The --dataset value that serves this folder (labelled for it, else the unlabelled one)."""
    mine = [str(path) for label, path in map(parse_spec, req.datasets) if label == rset.label]
    plain = [text for text in req.datasets if parse_spec(text)[0] is None]
    return (mine or plain or [None])[0]


def load_datasets(sets, req: ReportRequest, stage, warnings: list) -> tuple[list, list[list], list]:
    """Each folder's dataset (``data.load.Source`` or None; SMMILE++ folders get the SMMILE++ counterpart of a
    plain --dataset), its problems (``explorer.read_dataset``, each dataset once) and what the page says about
    it. One that cannot be loaded is a warning: that folder's problems then come from its result files."""
    from smmile.data.load import resolve

    sources, found, said, read = [], [], [], {}
    for rset in sets:
        dataset = dataset_for(rset, req)
        source = None
        if dataset is not None:
            try:
                source = resolve(dataset, req.revision, augmented=rset.permuted)
                if source not in read:
                    read[source] = explorer.read_dataset(source)
            except Exception as exc:  # hub/network/parquet problems: one line, and the explorer without it
                why = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
                named = source.ref if source is not None else dataset  # SMMILE++'s counterpart, as resolved
                warnings.append(f"dataset {named} for {rset.label} could not be loaded ({why}); the problem "
                                "explorer shows its problems from the result files alone (no images or examples)")
                source = None
        if source is not None:
            stage(f"dataset for {rset.label}: {source.kind} {source.ref} ({len(read[source])} problems)")
        sources.append(source)
        found.append([] if source is None else read[source])
        said.append(None if dataset is None else shown_name(dataset) + ("" if source is not None else " (not loaded)"))
    return sources, found, said


def shown_name(dataset: str) -> str:
    """A --dataset value as the page names it: a local path by its last part (no path of this machine)."""
    return os.path.basename(dataset.rstrip("/" + os.sep)) if os.sep in dataset and os.path.exists(dataset) else dataset


# -- the page --------------------------------------------------------------------------------------------
def nav(data) -> list[tuple[str, str]]:
    many = len(data.sets) > 1
    links = [(html.anchor("main", s.slug), f"Main table{' ' + s.label if many else ''}") for s in data.sets]
    links += [("sets", "Side by side")] if many else []
    links += [(html.anchor("gain", s.slug), f"ICL gain{' ' + s.label if many else ''}") for s in data.sets]
    links += [(html.anchor("strat", s.slug), f"Stratified{' ' + s.label if many else ''}") for s in data.sets]
    links += [("analyses", "Analyses"), ("problems", "Problems")]
    return links + [(html.anchor("runs", s.slug), f"Runs{' ' + s.label if many else ''}") for s in data.sets]


def render(data, figs, page_dir: str) -> str:
    """The page, with ``IMAGES_SLOT`` where ``write_page`` puts the explorer's thumbnails."""
    body = [sections.warnings(data)]
    body += [sections.main_section(data, s, figs, page_dir) for s in data.sets]
    body.append(data.reviews_html)
    body.append(sections.sets_section(data, figs, page_dir))
    body += [sections.gain_section(data, s, figs, page_dir) for s in data.sets]
    body += [strata.strat_section(data, s, figs, page_dir) for s in data.sets]
    body.append(sections.analyses_section(data, figs, page_dir))
    body.append(explorer_page.section(data.explorer, IMAGES_SLOT))
    body += [sections.runs_section(s) for s in data.sets]
    return html.page(data.title, sections.header(data), nav(data), "".join(body),
                     f"<script>\n{html.asset('explorer.js')}</script>", html.asset("explorer.css"))


def write_page(path: str, text: str, images) -> None:
    """``text`` (``render``'s) written atomically, the thumbnails of ``images`` (``explorer.Images``) put into
    its slot one at a time, so the page as one string never holds them."""
    with fsguard.atomic_path(path) as tmp, open(tmp, "wb") as handle:
        head, tail = text.split(IMAGES_SLOT)
        handle.write(head.encode("utf-8"))
        for piece in explorer_page.images_json(images.uris()):
            handle.write(piece.encode("utf-8"))
        handle.write(tail.encode("utf-8"))


def write_report(req: ReportRequest, stage) -> tuple[str, list]:
    settings, formats = req.checked()
    specs = [(label, str(path)) for label, path in map(parse_spec, req.results)]
    specs += [("SMMILE++", req.plusplus)] if req.plusplus else []
    out = os.path.abspath(req.out)  # the output folders are checked before any work (nothing is created yet)
    fig_dir = os.path.abspath(req.figures) if req.figures else os.path.join(out, "figures")
    folders = [out, fig_dir] if req.figures else [out]  # the default <out>/figures is part of <out>
    for folder in folders:
        fsguard.check_output_dir(folder, OWNER, req.force)
    stage(f"statistics for {len(specs)} results folder(s) ({settings.n_boot} resamples)")
    with logs.silenced():  # an unreadable reviews file: one line, exit 2, before any work (its warnings: later)
        for path in req.reviews:
            read_reviews([path])
    data = build.gather(specs, req.analyses, settings, req.title)
    data.reviews_html = sections.reviews_section(data, list(req.reviews), req.strict)
    sources, datasets, said = (load_datasets(data.sets, req, stage, data.warnings) if req.datasets
                               else (None, None, None))
    named = sorted({i for s in data.sets for i, _ in datasets_named(r.result for r in s.records if r.result)})
    if named and not req.datasets:  # said, not loaded: a hub dataset may be far, the report works without it
        log.info(f"note: without --dataset the problem explorer shows the problems from the result files alone; the "
                 f"results' manifests name {', '.join(named)}: add --dataset {named[0]} for images, examples and flags")
    if datasets is not None and any(datasets):  # strata without stratify's exports: from the records
        strata.from_records(data, datasets)
        strata.cluster_by_rows(data, datasets)
    for folder in folders:
        fsguard.prepare_output_dir(folder, OWNER, req.force)
    planned = figures.plan(data, fig_dir, formats, size=req.figure_size)
    if planned:  # matplotlib imported once here, so the forked workers start with it
        try:
            plotting.pyplot()
        except MissingDependency as exc:
            data.warnings.append(f"figures left out: {exc}")
            planned = []
    with fsguard.OutputLock(out, f"the report in {out}"), workers.Pool(max(1, req.jobs)) as pool:
        stage(f"figures: {len(planned)} to draw ({len(planned) * len(formats)} files) on {max(1, req.jobs)} worker(s)")
        submitted = figures.submit(pool, planned)
        images = explorer.Images(datasets or [])
        stage("problem explorer: answers and scores")
        data.explorer = explorer.build(data.sets, datasets, images, said)
        stage(f"problem explorer: {len(data.explorer['problems'])} problems, {len(images)} images"
              + ("; thumbnails" if len(images) else " (from the result files alone)"))
        data.warnings += explorer.unmatched(data.explorer)
        if len(images):
            images.make([source for source in sources if source is not None], pool,
                        os.path.join(out, explorer.FULL_DIR))
        figs = figures.collect(submitted)
        stage("figures drawn; writing the page")
        page_path = os.path.join(out, PAGE_NAME)
        write_page(page_path, render(data, figs, out), images)
        fsguard.atomic_write_json(os.path.join(out, DATA_NAME), json_safe(build.to_json(data)), allow_nan=False)
    stage(f"page written: {page_path} ({os.path.getsize(page_path) / 1e6:.1f} MB)")
    return page_path, data.warnings


def run_report(req: ReportRequest) -> str:
    """Write the report and return the page's path; its warnings (inputs skipped, figures left out) go to the
    log and on the page: a warning does not stop a ``set -e`` script (issue #20)."""
    page_path, warnings = write_report(req, stages("smmile report"))
    for warning in warnings:
        log.warning(f"warning: {warning}")
    return page_path
