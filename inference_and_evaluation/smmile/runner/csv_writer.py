"""Output files: result CSVs in the original's format and accuracy summaries."""

from __future__ import annotations

import csv
import io
import sys
import time


def csv_text(columns: list[str], rows: list[dict]) -> str:
    """What `pandas.DataFrame.to_csv(index=False)` writes for string/bool cells."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(columns)
    for row in rows:
        # None and NaN as empty cells
        writer.writerow(["" if v is None or (isinstance(v, float) and v != v) else str(v)
                         for v in (row.get(c) for c in columns)])
    return buf.getvalue()


def allow_csv_fields(size: int) -> None:
    """Let the ``csv`` module read back a field of ``size`` characters (``csv_text`` writes answers of any length;
    the default limit is 131,072). The limit is process-wide, so it is only ever raised (no race between threads)."""
    if csv.field_size_limit() < size:
        csv.field_size_limit(min(size, sys.maxsize))


def accuracy_summary(display: str, mode: str, fmt: str, correct: int, n: int) -> str:
    """`accuracy_summary_*.txt` (spec §2.7)."""
    acc = f"{correct / n:.4f} ({correct}/{n})" if n else "0.0 (no valid results)"
    return (f"Model: {display}\nInference Mode: {mode}\nTask Format: {fmt}\nAccuracy: {acc}\n"
            f"Total Examples: {n}\nTimestamp: {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
