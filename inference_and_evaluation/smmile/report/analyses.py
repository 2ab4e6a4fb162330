"""Outputs of ``smmile analyze`` / ``smmile agreement`` as report tables.

Those commands write ``<out>/<analysis>.json`` = ``{analysis, settings, sets, warnings, <table>: rows…}``
and one ``<analysis>_<table>.csv`` per table. The JSON is read (its tables keep their types); a CSV that
the JSON already holds is skipped. Any other CSV becomes a table and any other JSON a table when it
holds rows, else text — so the report also shows analysis files of another layout. PNG/SVG files in
the folder are shown as figures. Tables are grouped by the analysis named in their path.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field

SECTIONS = (("noise", "Noise: an unrelated example added"),
            ("order", "Order: the matching example first vs last"),
            ("perm", "Permutations of the examples (SMMILE++)"),
            ("agreement", "Agreement: judge vs humans and exact match"),
            ("other", "Other analyses"))
MAX_ROWS = 200
COLLAPSED_ROWS = 40  # longer tables (e.g. per-problem flips) start collapsed
IMAGE_EXTS = (".png", ".svg")


@dataclass
class AnalysisTable:
    section: str
    title: str
    path: str
    columns: list = field(default_factory=list)
    rows: list = field(default_factory=list)  # lists of cells, same length as columns
    n_rows: int = 0
    text: str | None = None  # shown verbatim when the file is not tabular
    settings: dict | None = None

    @property
    def truncated(self) -> int:
        return max(0, self.n_rows - len(self.rows))

    @property
    def collapsed(self) -> bool:
        return self.n_rows > COLLAPSED_ROWS


@dataclass
class AnalysisImage:
    section: str
    title: str
    path: str


def section_of(text: str) -> str:
    lowered = text.lower()
    return next((key for key, _ in SECTIONS if key != "other" and key in lowered), "other")


def _cell(value):
    if isinstance(value, list):  # e.g. the result files of a set: file names, at most a few
        names = [os.path.basename(str(v)) for v in value]
        return ", ".join(names) if len(names) <= 4 else ", ".join(names[:3]) + f", … ({len(names)} in all)"
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else value


def records_table(records: list, section: str, title: str, path: str) -> AnalysisTable:
    columns: list = []
    for record in records:
        columns.extend(k for k in record if k not in columns)
    rows = [[_cell(record.get(c)) for c in columns] for record in records[:MAX_ROWS]]
    return AnalysisTable(section, title, path, columns, rows, len(records))


def is_records(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def json_tables(data, path: str, relative: str) -> list[AnalysisTable]:
    """The tables of one JSON file: every list of records, with the other keys as settings."""
    section = section_of(f"{relative} {data.get('analysis', '') if isinstance(data, dict) else ''}")
    if is_records(data):
        return [records_table(data, section, relative, path)]
    if not isinstance(data, dict):
        return [AnalysisTable(section, relative, path, text=json.dumps(data, indent=2)[:20_000])]
    settings = {k: v for k, v in data.items() if not is_records(v)}
    found = [records_table(v, section, f"{relative}: {k}", path) for k, v in data.items() if is_records(v)]
    if not found:
        return [AnalysisTable(section, relative, path, ["key", "value"], [[k, _cell(v)] for k, v in data.items()],
                              len(data))]
    for table in found:
        table.settings = settings
    return found


def read_json(path: str, relative: str) -> list[AnalysisTable]:
    try:
        with open(path, encoding="utf-8") as handle:
            return json_tables(json.load(handle), path, relative)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return [AnalysisTable(section_of(relative), relative, path, text=f"unreadable: {type(exc).__name__}: {exc}")]


def read_csv(path: str, relative: str) -> AnalysisTable:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return records_table(list(csv.DictReader(handle)), section_of(relative), relative, path)
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        return AnalysisTable(section_of(relative), relative, path, text=f"unreadable: {type(exc).__name__}: {exc}")


def covered_csvs(json_path: str) -> set[str]:
    """``<stem>_<key>.csv`` for every table key of ``<stem>.json``."""
    try:
        with open(json_path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError, UnicodeDecodeError):
        return set()
    stem = os.path.splitext(json_path)[0]
    return {f"{stem}_{k}.csv" for k, v in data.items() if is_records(v)} if isinstance(data, dict) else set()


def _files(directory: str) -> list[str]:
    found = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(os.path.join(root, n) for n in sorted(names))
    return found


def load_directory(directory: str) -> tuple[list[AnalysisTable], list[AnalysisImage]]:
    paths = _files(directory)
    covered = set().union(*(covered_csvs(p) for p in paths if p.endswith(".json")))
    tables, images = [], []
    for path in paths:
        relative = os.path.relpath(path, directory)
        if path.endswith(".json"):
            tables.extend(read_json(path, relative))
        elif path.endswith(".csv") and path not in covered:
            tables.append(read_csv(path, relative))
        elif path.endswith(IMAGE_EXTS) and not (path.endswith(".svg") and os.path.exists(path[:-4] + ".png")):
            images.append(AnalysisImage(section_of(relative), relative, path))
    return tables, images


def load_analyses(directories) -> tuple[list[AnalysisTable], list[AnalysisImage]]:
    """Tables and images of every analysis folder, folder by folder in path order."""
    tables, images = [], []
    for directory in directories:
        found_tables, found_images = load_directory(directory)
        tables += found_tables
        images += found_images
    return tables, images
