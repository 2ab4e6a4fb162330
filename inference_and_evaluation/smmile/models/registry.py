"""The model registry: the presets of ``presets_hf`` and ``presets_api``, the baselines below, and the presets
made on first use for a prefixed name (``hf:<id>``, ``vllm:<id>``: ``preset.MAKERS``)."""

from __future__ import annotations

from ..errors import UserError
from ..identity import ModelIdentity, identity_for_model_id, identity_for_tag, valid_identity
from . import presets_api, presets_hf  # their tables register themselves; they import no heavy package
from .preset import MAKERS, PRESETS, Lazy, Preset, load_symbol, register

MODEL_PREFIXES = tuple(MAKERS)  # `--model hf:<hub id or path>`: presets made on first use (presets_hf.preset_for)

BASELINE = Lazy("smmile.models.baselines", "BaselineFamily"), Lazy("smmile.models.baselines", "BaselineBackend")
register(
    Preset("random", "random", *BASELINE, "random", family_args={"kind": "random"},
           notes="random ICL answer (open) / random option letter (MCQA)"),
    Preset("majority", "majority", *BASELINE, "majority", family_args={"kind": "majority"},
           notes="most frequent ICL answer / its letter"),
)


def get(name: str) -> Preset:
    if name not in PRESETS and name.startswith(MODEL_PREFIXES):
        register(MAKERS[next(p for p in MAKERS if name.startswith(p))](name))  # any checkpoint: `hf:<id>`, `vllm:<id>`
    if name not in PRESETS:
        raise UserError(f"unknown model preset {name!r}; known presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]


def names() -> list[str]:
    return sorted(PRESETS)


def identity_from_manifest(manifest: dict) -> ModelIdentity | None:
    """A run manifest's model identity (None: it names no model), from ``model.identity``, else the registered
    preset ``model.preset``, else ``model.tag`` (``model.model_id`` as display), else ``model.model_id``."""
    model = manifest.get("model") if isinstance(manifest, dict) else None
    if not isinstance(model, dict):
        return None
    found = valid_identity(model.get("identity"))
    if found:
        return found
    preset = model.get("preset")
    if isinstance(preset, str) and preset:
        try:
            return get(preset).identity
        except UserError:
            pass
    model_id = model.get("model_id") if isinstance(model.get("model_id"), str) else None
    tag = model.get("tag")
    if isinstance(tag, str) and tag:
        return identity_for_tag(tag, model_id)
    if isinstance(preset, str) and preset:
        return identity_for_model_id(model_id or preset)
    return identity_for_model_id(model_id) if model_id else None
