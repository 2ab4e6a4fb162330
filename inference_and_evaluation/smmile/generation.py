"""Generation settings: one typed object per run, recorded in the manifest and the journal key. A field left
`None` is not sent (the backend, server or checkpoint keeps its default, as the original scripts did for what they
did not pass). Precedence: a command-line flag, the preset, the family's faithful default."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping

# flag spellings that mean a GenerationSettings field (the API scripts' `max_tokens` is `max_new_tokens`)
ALIASES = {"max_tokens": "max_new_tokens"}


@dataclass(frozen=True)
class GenerationSettings:
    max_new_tokens: int | None = None
    do_sample: bool | None = None  # None: the checkpoint's generation_config decides (HF / vLLM)
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    # image limits: Qwen-family processor pixel bounds; API downscaling (--protocol corrected only)
    min_pixels: int | None = None
    max_pixels: int | None = None
    max_image_side: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """Every field, `stop` as a list (JSON-friendly, stable key order)."""
        out = asdict(self)
        out["stop"] = list(self.stop)
        return out

    def sent(self) -> dict[str, Any]:
        """Only the fields that are set (what a backend passes on)."""
        return {k: v for k, v in self.as_dict().items() if v is not None and v != []}

    def merged(self, overrides: Mapping[str, Any] | None) -> "GenerationSettings":
        """A copy with every non-None override applied (unknown keys are ignored: they are not generation)."""
        values = {}
        for key, value in (overrides or {}).items():
            key = ALIASES.get(key, key)
            if key in _FIELDS and value is not None:
                values[key] = tuple(value) if key == "stop" else value
        return replace(self, **values) if values else self


_FIELDS = {f.name for f in fields(GenerationSettings)}


def resolve_generation(family_default: GenerationSettings, *layers: Mapping[str, Any] | None) -> GenerationSettings:
    """The run's settings: the family's faithful default, then each layer (preset, then flags) on top."""
    gen = family_default
    for layer in layers:
        gen = gen.merged(layer)
    return gen


def split_settings(settings: Mapping[str, Any]) -> tuple[dict, dict]:
    """(generation part, everything else: loading, transport, family options) of a settings mapping."""
    keys = _FIELDS | set(ALIASES)
    return {k: v for k, v in settings.items() if k in keys}, {k: v for k, v in settings.items() if k not in keys}
