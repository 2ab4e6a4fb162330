"""Journal keys: a hash of everything that changes what a backend is asked for one problem (the run's identity,
the problem id, the planned item, the rendered request). A change to prompt rendering gives a new key and a new
model call; a change to how rows are derived from responses does not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from ..protocol.problem import ImageRef


def canonical(obj: Any) -> Any:
    """A JSON-able, deterministic form of a request or settings object (images by content digest)."""
    if isinstance(obj, ImageRef):
        return {"image_sha256": obj.digest.hex()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"__type__": type(obj).__name__,
                **{f.name: canonical(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if isinstance(obj, dict):
        return {str(k): canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(canonical(v) for v in obj)
    if isinstance(obj, bytes):
        return {"bytes_sha256": hashlib.sha256(obj).hexdigest()}
    if callable(obj):  # image preparation steps, follow-up turns: identified by their code's name
        return {"callable": f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"}
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return repr(obj)


def digest(obj: Any, length: int = 24) -> str:
    text = json.dumps(canonical(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]

