"""The metric "the model refused or failed to answer" (``NOANS``, registered in ``scoring.metrics``): 1 for an item
whose raw response is a refusal (a content filter, a refusal finish reason), an error or nothing at all, else 0;
read from the journaled response where the run recorded one, else from the CSV text (the published outputs). The
same kinds are the refused/failed/empty counts of ``smmile stats`` and the report (``metrics.failure_series``)."""

from __future__ import annotations

from typing import Mapping

FAILURE_KINDS = ("refused", "failed", "empty")
REFUSAL_MARKERS = ("responsibleaipolicyviolation", "content_filter", "content management policy")
TEXT_COLUMNS = ("generated_answer", "full_response", "selected_option")


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def row_failure(row: Mapping) -> str:
    """One CSV row, in this precedence: ``refused`` (a content filter is mentioned), ``failed`` (``ERROR``,
    spec §3), ``empty`` (a blank response) or ``""``."""
    texts = {c: _text(row[c]) for c in TEXT_COLUMNS if c in row}
    response = "full_response" if "full_response" in row else "generated_answer"
    if any(marker in " ".join(texts.values()).lower() for marker in REFUSAL_MARKERS):
        return "refused"
    if any(texts.get(c, "").lstrip().startswith("ERROR") for c in ("generated_answer", "full_response")) \
            or texts.get("selected_option", "").strip() == "ERROR":
        return "failed"
    return "empty" if response in texts and not texts[response].strip() else ""


def row_failures(frame) -> list[str]:
    """``row_failure`` of every row of a result frame."""
    return [row_failure(row) for row in frame.to_dict("records")]


def response_failure(response: Mapping) -> str:
    """``refused`` (the error or a finish reason names a content filter or a refusal), ``failed`` (any other
    error), ``empty`` (a null or blank text) or ``""`` for one journaled response."""
    extra = response.get("extra") or {}  # where backends put the provider's finish reason
    reasons = " ".join(str(extra.get(k) or "") for k in ("finish_reason", "stop_reason")).lower()
    said = f"{response.get('error') or ''} {reasons}".lower()
    if any(marker in said for marker in REFUSAL_MARKERS) or "refusal" in reasons:
        return "refused"
    if response.get("error") is not None:
        return "failed"
    return "" if (response.get("text") or "").strip() else "empty"


def failure_kind(response: Mapping | None, row: Mapping) -> str:
    """The item's failure kind: from its journaled response, else from its CSV row."""
    return response_failure(response) if response is not None else row_failure(row)


def no_answer(item: Mapping | None, response: Mapping | None, row: Mapping) -> float:
    """The scorer of ``NOANS``: 1.0 when the model refused or failed to answer."""
    return float(failure_kind(response, row) != "")
