"""The settings of a run, typed, from the command line to the backend: `GenerationSettings` (what can change an
answer's text; in the manifest and the journal key) and `RunSettings` (how the model is loaded or the server
reached). A field left `None` is not set: the layer below decides, and at the bottom the backend, server or
checkpoint keeps its default, as the original scripts did for what they did not pass. Precedence: a command-line
flag, the preset, the family's faithful default."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

MAX_NEW_TOKENS = 512  # the original scripts' generation budget (local models, GPT-4o, Claude)


def _set(obj) -> dict[str, Any]:
    """The fields of a settings object that are set (not None, not an empty tuple), in field order."""
    return {f.name: getattr(obj, f.name) for f in fields(obj) if getattr(obj, f.name) not in (None, ())}


class _Layer:
    def over(self, base):
        """`base` with every field this layer sets in its place."""
        return replace(base, **_set(self))

    @classmethod
    def from_flags(cls, flags, **aliases: str):
        """The fields a parsed command line (an argparse namespace) sets, read by their names (`aliases`: field
        name -> another flag name read when the field's own flag is not set)."""
        values = {}
        for f in fields(cls):
            value = getattr(flags, f.name, None)
            if value is None and f.name in aliases:
                value = getattr(flags, aliases[f.name], None)
            if value is not None:
                values[f.name] = tuple(value) if isinstance(value, list) else value
        return cls(**values)


@dataclass(frozen=True)
class GenerationSettings(_Layer):
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
        return {k: list(v) if k == "stop" else v for k, v in _set(self).items()}


@dataclass(frozen=True)
class RunSettings(_Layer):
    """How a run loads its model (local backends) or reaches its server (API backends). The fields a run sets are
    in its manifest; those not in its backend's `RUN_ONLY`, in its journal key."""

    # local models (transformers, vLLM) and the families' script choice
    dtype: str | None = None
    device_map: str | None = None
    attn_implementation: str | None = None
    cache_dir: str | None = None
    model_revision: str | None = None
    image_backend: str | None = None
    tensor_parallel_size: int | None = None
    max_model_len: int | None = None  # vLLM engine arguments (library callers, benchmarks/gpu_check.py)
    gpu_memory_utilization: float | None = None
    enforce_eager: bool | None = None
    script: str | None = None  # LLaVA / LLaVA-Med: "open" (the open-only script) or "mcqa" (the _mcqa one)
    score_options: bool | None = None  # --score-options
    # API and server models
    api_model: str | None = None
    base_url: str | None = None
    concurrency: int | str | None = None
    max_retries: int | None = None
    timeout: float | None = None
    max_consecutive_failures: int | None = None
    max_cost: float | None = None
    price: str | None = None
    prices: str | None = None
    allow_key_for_host: tuple[str, ...] = ()
    batch: bool | None = None
    poll_interval: float | None = None
    batch_deployment: str | None = None
    deadline: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The fields that are set, tuples as lists (the manifest's `settings`)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in _set(self).items()}
