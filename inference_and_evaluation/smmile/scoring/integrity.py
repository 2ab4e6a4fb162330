"""Is a result whole? Checks a scoring command makes before it scores a file.

* ``read_whole`` — a result CSV must parse cleanly: every record has as many fields as the header,
  no quoted field runs to the end of the file, the file ends with a line break, pandas reads as many
  rows as there are records, and there is at least one row. A stray quote, a file cut in half or a
  header-only file is an error naming the file, instead of being scored as if whole.
* ``count_outliers`` — the results of one dataset (the manifest's dataset id, revision and fingerprint;
  files without a manifest form one group per folder) should cover the same number of problems. The
  reference is the most common count (ties: the larger); a file with another count is flagged (a file
  cut at a line break parses cleanly, but has fewer problems than its neighbours).
* ``screen`` — both, for a list of results, reading each file once.
"""

from __future__ import annotations

import csv
import io
import os
from collections import Counter
from typing import Callable, Sequence

from smmile.scoring.exact_match import REQUIRED_COLUMNS, ResultFileError, parse_result_csv, read_csv_bytes


def _clean_records(path: str, content: bytes) -> int:
    """Number of data records of a CSV that parses cleanly; raises ``ResultFileError`` otherwise."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"{path}: cannot read CSV ({exc})") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records = 0
    try:
        header = next(reader, [])
        for record in reader:
            if not record:
                continue  # a blank line (pandas skips them too)
            if len(record) != len(header):
                raise ResultFileError(f"{path}: line {reader.line_num} has {len(record)} fields, the header "
                                      f"{len(header)} (a stray quote or a cut line?)")
            records += 1
    except csv.Error as exc:
        raise ResultFileError(f"{path}: rows do not parse cleanly near line {reader.line_num} ({exc}; a stray "
                              "quote or a file cut short?)") from None
    if not text.endswith(("\n", "\r")):
        raise ResultFileError(f"{path}: the last line has no line break (file cut short?)")
    return records


def read_whole(csv_path: str | os.PathLike, required: Sequence[str] = REQUIRED_COLUMNS):
    """Read a result CSV once (pandas defaults, as the original) and check it is whole (module docstring)."""
    path = os.fspath(csv_path)
    content = read_csv_bytes(path)
    frame = parse_result_csv(path, content, required)
    records = _clean_records(path, content)
    if records != len(frame):
        raise ResultFileError(f"{path}: {records} CSV records but pandas read {len(frame)} rows")
    if not len(frame):
        raise ResultFileError(f"{path}: no rows (header only)")
    return frame


def problem_count(frame) -> int:
    """Distinct problem ids of a result frame."""
    return int(frame["problem_id"].nunique())


def dataset_group(result) -> tuple | None:
    """The dataset a result was run on, from its manifest (None without one)."""
    dataset = (getattr(result, "manifest", None) or {}).get("dataset")
    if not isinstance(dataset, dict):
        return None
    return tuple(str(dataset.get(k)) for k in ("id", "revision", "fingerprint"))


def count_outliers(counts: Sequence[tuple]) -> dict:
    """``counts``: (result, number of problems) pairs. Returns ``{result.path: message}`` for every
    result whose count differs from its dataset's reference (module docstring)."""
    groups: dict = {}
    for result, n in counts:
        groups.setdefault(dataset_group(result), []).append((result, n))
    flagged = {}
    for members in groups.values():
        tally = Counter(n for _, n in members)
        reference = max(tally, key=lambda n: (tally[n], n))
        for result, n in members:
            if n != reference:
                flagged[result.path] = (f"{result.path}: {n} problem(s), but the other results of its dataset "
                                        f"have {reference} (a cut or incomplete file?); not scored")
    return flagged


def screen(results: Sequence, read: Callable, count: Callable) -> tuple[dict, dict]:
    """Read every result once with ``read(result)`` (raising ``ResultFileError``), then flag problem-count
    outliers among those read (``count(data)``). Returns ``({path: data}, {path: message})``; a path is
    in one of the two."""
    data, failures = {}, {}
    for result in results:
        try:
            data[result.path] = read(result)
        except ResultFileError as exc:
            failures[result.path] = str(exc)
    flagged = count_outliers([(r, count(data[r.path])) for r in results if r.path in data])
    for path, message in flagged.items():
        failures[path] = message
        del data[path]
    return data, failures
