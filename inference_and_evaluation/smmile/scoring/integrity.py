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
* ``check_judgement`` — a ``_evaluationllm.json`` is used only for the content it judged: its record
  (``_evaluationllm.manifest.json``) holds the sha256 of the CSV bytes the judge read, and a CSV with other
  bytes is refused. Without a hash (the published outputs, records of earlier smmile versions) the judged
  problem ids and row count must be the CSV's. A judgement of other rows (the CSV rerun on another dataset
  or by another model) is thus never scored beside the new rows.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections import Counter
from typing import Callable, Sequence

from smmile.runner.outputs import allow_csv_fields
from smmile.scoring.exact_match import (REQUIRED_COLUMNS, ResultFileError, exclude_problems, parse_result_csv,
                                        read_csv_bytes, read_result_csv)
from smmile.scoring.naming import judge_record_path


def _clean_records(path: str, content: bytes) -> int:
    """Number of data records of a CSV that parses cleanly; raises ``ResultFileError`` otherwise."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"{path}: cannot read CSV ({exc})") from None
    allow_csv_fields(len(text) + 1)  # an answer of any length reads back (runner.outputs)
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
    return read_whole_hashed(csv_path, required)[0]


def content_sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def read_whole_hashed(csv_path: str | os.PathLike, required: Sequence[str] = REQUIRED_COLUMNS):
    """``read_whole`` and the sha256 of the bytes it read: ``(frame, sha256)``."""
    path = os.fspath(csv_path)
    content = read_csv_bytes(path)
    return _whole(path, content, required), content_sha256(content)


def _whole(path: str, content: bytes, required: Sequence[str]):
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


def check_judgement(csv_path: str | os.PathLike, judged: dict, frame=None) -> None:
    """Raise ``ResultFileError`` (one line naming both files) unless the ``_evaluationllm.json`` dict
    ``judged`` is a judgement of the CSV as it is now (module docstring). ``frame``: the CSV already read.
    A CSV that cannot be read is not compared (scoring it reports its own problem)."""
    path = os.fspath(csv_path)
    json_name = os.path.basename(path)[:-len(".csv")] + "_evaluationllm.json"
    try:
        recorded = json.loads(judge_record_path(path).read_text(encoding="utf-8")).get("result_sha256")
    except (OSError, ValueError, AttributeError):
        recorded = None
    try:
        content = read_csv_bytes(path) if isinstance(recorded, str) else None
        if frame is None and content is None:
            frame = read_result_csv(path)
    except ResultFileError:
        return  # no CSV to compare with (its own problem is reported where it is scored)
    if content is not None:
        now = content_sha256(content)
        if now != recorded:
            raise ResultFileError(f"{path}: its {json_name} judged other content (sha256 {recorded[:12]}, the "
                                  f"CSV is now {now[:12]}); judge scores refused, judge it again")
        return
    kept, _ = exclude_problems(frame)
    ids = {str(pid) for pid in kept["problem_id"]}
    judged_ids = {str(pid) for pid in judged.get("problem_accuracies", {})}
    rows = judged.get("total_examples")
    if judged_ids != ids or (isinstance(rows, int) and rows != len(kept)):
        other = len(judged_ids - ids)
        raise ResultFileError(f"{path}: its {json_name} judged other rows ({len(judged_ids)} problem(s), {rows} "
                              f"row(s), {other} not in the CSV; the CSV has {len(ids)} problem(s), {len(kept)} "
                              "row(s)); judge scores refused, judge it again")
