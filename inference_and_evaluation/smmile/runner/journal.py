"""The runner's journal: an `AppendLog` of one record per finished problem, each checked to be the runner's."""

from __future__ import annotations

from dataclasses import fields

from ..appendlog import AppendLog
from ..models.base import Response

# Record format of the runner's journals: 2 = backend responses + planned items (rows derived when written).
# Format 1 (no "v") held derived CSV rows; such journals are refused, never silently reused or dropped.
RESPONSES_FORMAT = 2


class Journal(AppendLog):
    """`version`: when set, every record must carry `"v": version` (older journals are refused) and, for
    `RESPONSES_FORMAT`, the runner's fields."""

    def wrong_fields(self, rec: dict) -> str | None:
        """What is wrong with a record of the runner's format, or None."""
        if self.version != RESPONSES_FORMAT:
            return None
        expected = {"index": int, "problem_id": str, "status": str, "response": dict, "item": dict}
        for name, kind in expected.items():
            if not isinstance(rec.get(name), kind):
                found = type(rec.get(name)).__name__ if name in rec else "missing"
                return f"its {name!r} is {found}, not {kind.__name__}"
        if rec["status"] not in ("ok", "error"):
            return f"its status is {rec['status']!r}, not 'ok' or 'error'"
        unknown = set(rec["response"]) - {f.name for f in fields(Response)}
        if unknown:
            return f"its response has fields no backend writes: {', '.join(sorted(unknown))}"
        checks = {"text": (str, type(None)), "error": (str, type(None)), "usage": (dict, type(None)),
                  "seconds": (int, float, type(None)), "extra": (dict, type(None))}
        for name, kinds in checks.items():
            if name in rec["response"] and not isinstance(rec["response"][name], kinds):
                return f"its response's {name!r} is {type(rec['response'][name]).__name__}"
        return None
