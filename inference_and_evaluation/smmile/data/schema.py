"""The SMMILE row schema (spec §1.2) and the check run on every load."""

from __future__ import annotations

from ..errors import UserError

REQUIRED_COLUMNS = ("problem_id", "order", "question", "answer", "image")
OPTIONAL_COLUMNS = ("image_url",)
FLAG_VOCABULARY = {
    "flag_answer_format": ["multiple choice", "free response", "binary(yes/no)", "numerical"],
    "flag_image_type": [
        "Photograph", "X-Ray", "Staining", "ECG", "CT", "Fundus Photograph", "Other", "EEG",
        "Ultrasound", "MRI", "Text", "Mammogram", "Illustration",
    ],
    "flag_cognitive_process": ["reasoning classification", "classification/diagnosis", "regression/quantitative"],
    "flag_rarity": ["common", "uncommon", "None"],
    "flag_difficulty_llms": ["hard", "medium"],
}
SPECIALITIES = ["dermatology", "radiology", "other", "pathology", "ophthalmology", "surgery"]


def check_columns(columns: list[str], source: str) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise UserError(
            f"dataset {source} is missing column(s) {', '.join(missing)} "
            f"(an SMMILE dataset needs {', '.join(REQUIRED_COLUMNS)})"
        )


def flag_columns(columns: list[str]) -> list[str]:
    """Stratification columns in feature order: every `flag_*` column (spec §1.2)."""
    return [c for c in columns if c.split("_")[0] == "flag"]
