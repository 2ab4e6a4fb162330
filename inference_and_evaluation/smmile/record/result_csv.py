"""A result CSV read whole, or refused in one line (``ResultFileError``). The CSV is read with pandas' default NA
semantics, as the original did (``normalize_answer`` turns NaN into ``"nan"``)."""

from __future__ import annotations

import csv
import hashlib
import io
import os
from typing import Sequence

from smmile.protocol.outputs import SCORED as REQUIRED_COLUMNS
from smmile.runner.csv_writer import allow_csv_fields


EXCLUDED_PROBLEM_IDS: frozenset = frozenset()  # the original's (empty) exclusion set


class ResultFileError(ValueError):
    """A result file cannot be scored; the message is one line naming it."""


def first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def read_csv_bytes(path: str) -> bytes:
    if os.path.isdir(path):
        raise ResultFileError(f"{path}: is a directory, not a CSV file")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise ResultFileError(f"{path}: file not found") from None
    except OSError as exc:
        raise ResultFileError(f"{path}: cannot read CSV ({first_line(exc)})") from None


def parse_result_csv(path: str, content: bytes, required: Sequence[str] = REQUIRED_COLUMNS):
    import pandas as pd

    try:
        frame = pd.read_csv(io.BytesIO(content))
    except pd.errors.EmptyDataError:
        raise ResultFileError(f"{path}: empty file (no header)") from None
    except (UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise ResultFileError(f"{path}: cannot read CSV ({first_line(exc)})") from None
    check_columns(frame, required, path)
    return frame


def read_result_csv(csv_path: str | os.PathLike, required: Sequence[str] = REQUIRED_COLUMNS):
    path = os.fspath(csv_path)
    return parse_result_csv(path, read_csv_bytes(path), required)


def raw_text(csv_path: str | os.PathLike, column: str):
    """``column`` per problem id as the CSV's text (no NA reading: the answer ``None`` stays ``"None"``), or None
    when the file cannot be read."""
    import pandas as pd

    try:
        raw = pd.read_csv(csv_path, usecols=["problem_id", column], dtype=str, keep_default_na=False)
    except (OSError, ValueError):
        return None
    return raw.groupby("problem_id", sort=False)[column].first()


def check_columns(frame, required: Sequence[str], path: str) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ResultFileError(f"{path}: missing required column(s): {', '.join(missing)}")


def _clean_records(path: str, content: bytes) -> int:
    """Number of data records of a CSV that parses cleanly; ``ResultFileError`` otherwise."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"{path}: cannot read CSV ({exc})") from None
    allow_csv_fields(len(text) + 1)  # an answer of any length reads back (runner.csv_writer)
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


def content_sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def csv_sha256(csv_path: str | os.PathLike) -> str:
    return content_sha256(read_csv_bytes(os.fspath(csv_path)))


def read_whole(csv_path: str | os.PathLike, required: Sequence[str] = REQUIRED_COLUMNS):
    return read_whole_hashed(csv_path, required)[0]


def read_whole_hashed(csv_path: str | os.PathLike, required: Sequence[str] = REQUIRED_COLUMNS):
    """(frame, sha256 of the bytes) of a result CSV that is whole: it parses cleanly (a final line break, no
    stray quote), pandas reads as many rows as there are records, and there is at least one."""
    path = os.fspath(csv_path)
    content = read_csv_bytes(path)
    frame = parse_result_csv(path, content, required)
    records = _clean_records(path, content)
    if records != len(frame):
        raise ResultFileError(f"{path}: {records} CSV records but pandas read {len(frame)} rows")
    if not len(frame):
        raise ResultFileError(f"{path}: no rows (header only)")
    return frame, content_sha256(content)


def exclude_problems(frame):
    """(kept frame, excluded count) after the original's (empty) exclusion set."""
    keep = ~frame["problem_id"].isin(list(EXCLUDED_PROBLEM_IDS))
    return frame[keep].reset_index(drop=True), int((~keep).sum())
