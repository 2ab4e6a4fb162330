"""The SMMILE row schema (spec §1.2), the check run on every load, and the rows grouped into Problems."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UserError
from ..protocol.problem import ImageRef, Problem, Row

REQUIRED_COLUMNS = ("problem_id", "order", "question", "answer", "image")
FLAG_VOCABULARY = {
    "flag_answer_format": ["multiple choice", "free response", "binary(yes/no)", "numerical"],
    "flag_image_type": ["Photograph", "X-Ray", "Staining", "ECG", "CT", "Fundus Photograph", "Other", "EEG",
                        "Ultrasound", "MRI", "Text", "Mammogram", "Illustration"],
    "flag_cognitive_process": ["reasoning classification", "classification/diagnosis", "regression/quantitative"],
    "flag_rarity": ["common", "uncommon", "None"],
    "flag_difficulty_llms": ["hard", "medium"],
}
SPECIALITY_COLUMN, FORMAT_COLUMN = "speciality", "flag_answer_format"  # the strata variants draw within
SPECIALITIES = ["dermatology", "radiology", "other", "pathology", "ophthalmology", "surgery"]
MANIFEST = "variant_manifest.json"  # beside the parquet files of a variant dataset: how it was made
DROPPED = "image_dropped"  # column marking an image removed on purpose by a diagnostic variant (value "true")
PERM_SUFFIX = re.compile(r"_perm_\d+$")  # the permutations of one SMMILE++ problem: <id>_perm_<k>


def check_columns(columns: list[str], source: str) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise UserError(f"dataset {source} is missing column(s) {', '.join(missing)} "
                        f"(an SMMILE dataset needs {', '.join(REQUIRED_COLUMNS)})")


def flag_columns(columns: list[str]) -> list[str]:
    """Stratification columns in feature order: every `flag_*` column (spec §1.2)."""
    return [c for c in columns if c.split("_")[0] == "flag"]


def base_id(problem_id: str) -> str:
    return PERM_SUFFIX.sub("", problem_id)


def image_of(record: dict) -> ImageRef | None:
    return _image(record["image"], str(record["problem_id"]), record.get("order"))


def _image(value, problem_id: str, order=None) -> ImageRef | None:
    if value is None:
        return None
    if isinstance(value, dict):
        data, path = value.get("bytes"), value.get("path")
        if data is None and path and Path(path).is_file():
            data = Path(path).read_bytes()
        if data is None:
            return None
        return ImageRef(bytes(data), name=path or "")
    if isinstance(value, (bytes, bytearray)):
        return ImageRef(bytes(value))
    where = f"problem {problem_id}" + (f", row order {order}" if order is not None else "")
    raise UserError(f"{where}: the image cell holds a {type(value).__name__}, not an image (the `image` column "
                    "holds {bytes, path} structs or encoded bytes); fix that row of the dataset")


def row_order(value, problem_id: str) -> int:
    """`order` as an integer: stored as text ("10") or a whole float it sorts as the number ("10" before "9"
    would make row 9 the query)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    raise UserError(f"problem {problem_id}: order {value!r} is not an integer (the `order` column numbers the rows "
                    "of a problem, the query last); fix that row of the dataset")


def group(records: list[dict]) -> list[Problem]:
    """Group by problem_id (first-appearance order), sort by `order` as an integer (spec §1.3)."""
    chunks: dict[str, list[Row]] = {}
    seen: set[tuple[str, int]] = set()
    for rec in records:
        pid = str(rec["problem_id"])
        order = row_order(rec["order"], pid)
        if (pid, order) in seen:
            # else the query would also be one of its own ICL examples (its answer given away)
            raise UserError(f"problem {pid}: two rows with order {order}; the dataset holds this problem "
                            "twice (a second copy of a parquet file, or two datasets merged)")
        seen.add((pid, order))
        other = {k: v for k, v in rec.items() if k not in REQUIRED_COLUMNS + ("image_url",)}
        question, answer = _text(rec, "question", pid, order), _text(rec, "answer", pid, order)
        chunks.setdefault(pid, []).append(Row(pid, order, question, answer,
                                              _image(rec["image"], pid, order), rec.get("image_url"), other))
    return [Problem(pid, tuple(sorted(rows, key=lambda r: r.order))) for pid, rows in chunks.items()]


def _text(record: dict, column: str, problem_id: str, order: int) -> str:
    """A question or answer cell as text: UTF-8 bytes decoded; a null cell or other bytes refused, naming the row."""
    value, where = record[column], f"problem {problem_id}, row order {order}"
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise UserError(f"{where}: the {column} cell holds bytes that are not UTF-8 text (starting "
                            f"{bytes(value)[:16]!r}); store the column as UTF-8 text") from None
    if value is None or (isinstance(value, float) and value != value):
        raise UserError(f"{where}: the {column} cell is empty (null); every row needs a {column}; fix that row of "
                        "the dataset")
    return value
