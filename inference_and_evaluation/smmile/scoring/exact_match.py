"""Exact-match scoring of open-format result CSVs (spec §4.4, §4.5), and reading a result CSV whole. The CSV is
read with pandas' default NA semantics, as the original did (``normalize_answer`` turns NaN into ``"nan"``).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import string
from typing import Any, Sequence

from smmile.fsguard import read_json
from smmile.protocol.outputs import SCORED as REQUIRED_COLUMNS
from smmile.runner.outputs import allow_csv_fields
from smmile.scoring.naming import get_model_info, judge_record_path

EXCLUDED_PROBLEM_IDS: frozenset = frozenset()  # the original's (empty) exclusion set
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_WHITESPACE = re.compile(r"\s+")


class ResultFileError(ValueError):
    """A result file cannot be scored; the message is one line naming it."""


def normalize_answer(value: Any) -> str:
    """§4.4: str() non-strings (NaN → "nan"), lowercase, drop ASCII punctuation, collapse whitespace."""
    text = value if isinstance(value, str) else str(value)
    return _WHITESPACE.sub(" ", text.lower().translate(_PUNCTUATION)).strip()


def read_result_csv(csv_path: str | os.PathLike, required: Sequence[str] = REQUIRED_COLUMNS):
    path = os.fspath(csv_path)
    return parse_result_csv(path, read_csv_bytes(path), required)


def read_csv_bytes(path: str) -> bytes:
    if os.path.isdir(path):
        raise ResultFileError(f"{path}: is a directory, not a CSV file")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise ResultFileError(f"{path}: file not found") from None
    except OSError as exc:
        raise ResultFileError(f"{path}: cannot read CSV ({_first_line(exc)})") from None


def parse_result_csv(path: str, content: bytes, required: Sequence[str] = REQUIRED_COLUMNS):
    import pandas as pd

    try:
        frame = pd.read_csv(io.BytesIO(content))
    except pd.errors.EmptyDataError:
        raise ResultFileError(f"{path}: empty file (no header)") from None
    except (UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise ResultFileError(f"{path}: cannot read CSV ({_first_line(exc)})") from None
    check_columns(frame, required, path)
    return frame


def check_columns(frame, required: Sequence[str], path: str) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ResultFileError(f"{path}: missing required column(s): {', '.join(missing)}")


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def flexible_matches(frame) -> list[bool]:
    truth, generated = (frame[c].map(normalize_answer) for c in ("true_answer", "generated_answer"))
    return [bool(x) for x in (truth == generated)]


def problem_accuracies(frame, matches: Sequence[bool]) -> dict:
    """Mean match ×100 per problem_id, in groupby (sorted problem_id) order."""
    scored = frame.assign(_match=list(matches))
    means = scored.groupby("problem_id")["_match"].mean() * 100
    return {plain(k): float(v) for k, v in means.items()}


def plain(value: Any) -> Any:
    """numpy scalar → Python scalar (so json.dump accepts it)."""
    return value.item() if hasattr(value, "item") else value


def exclude_problems(frame):
    """(kept frame, excluded count) after the original's (empty) exclusion set."""
    keep = ~frame["problem_id"].isin(list(EXCLUDED_PROBLEM_IDS))
    return frame[keep].reset_index(drop=True), int((~keep).sum())


def summarize(frame, matches: Sequence[bool], model: str, mode: str, original_count: int,
              excluded_count: int, extra: dict | None = None) -> dict:
    """The §4.5 statistics dict in its exact key order; ``extra`` (the judge's ``llm_err_count``) goes right
    after ``excluded_count``, as §5 orders it."""
    total = len(frame)
    correct = int(sum(matches))
    stats = {"model": model, "inference_mode": mode, "total_examples": total,
             "original_count": original_count, "excluded_count": excluded_count}
    stats.update(extra or {})
    stats.update({
        "correct_examples": correct,
        "accuracy": correct / total * 100 if total > 0 else 0,
        "err_count": sum("ERROR" in str(v) for v in frame["generated_answer"]),  # case-sensitive
        "problem_accuracies": problem_accuracies(frame, matches),
        "incorrect_examples": [plain(pid) for pid, ok in zip(frame["problem_id"], matches) if not ok],
        "word_count": float(frame["generated_answer"].map(lambda v: len(str(v).split())).mean()),  # NaN: "nan", 1
    })
    return stats


def calculate_exact_match(csv_path: str | os.PathLike, strict: bool = False, *, model: str | None = None,
                          mode: str | None = None, frame=None) -> dict:
    """Score one open-format result CSV; ``model`` / ``mode`` default to its file name's (§4.3)."""
    if model is None or mode is None:
        info = get_model_info(csv_path)
        model, mode = model or info.model, mode or info.mode
    raw = read_result_csv(csv_path) if frame is None else frame
    kept, excluded = exclude_problems(raw)
    # strict: raw cell equality (NaN never equals anything)
    matches = [bool(x) for x in (kept["true_answer"] == kept["generated_answer"])] if strict else flexible_matches(kept)
    return summarize(kept, matches, model, mode, len(raw), excluded)


def json_text(obj: Any) -> str:
    """Default ``json.dump`` text (no indent, no trailing newline), as the original wrote its JSONs."""
    return json.dumps(obj)


def _clean_records(path: str, content: bytes) -> int:
    """Number of data records of a CSV that parses cleanly; ``ResultFileError`` otherwise."""
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


def content_sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


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


def check_judgement(csv_path: str | os.PathLike, judged: dict, frame=None) -> None:
    """``ResultFileError`` unless ``judged`` judged the CSV as it is now: the sha256 its judge record holds,
    else (the published outputs) the problem ids and row count. An unreadable CSV is not compared."""
    path = os.fspath(csv_path)
    json_name = os.path.basename(path)[:-len(".csv")] + "_evaluationllm.json"
    recorded = (read_json(judge_record_path(path)) or {}).get("result_sha256")
    try:
        content = read_csv_bytes(path) if isinstance(recorded, str) else None
        if frame is None and content is None:
            frame = read_result_csv(path)
    except ResultFileError:
        return
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
