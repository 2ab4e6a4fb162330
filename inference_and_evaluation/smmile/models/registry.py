"""The one registry of models: every preset (the tables of ``presets_hf`` and ``presets_api``, the baselines
below, and those made on first use for a prefixed name: ``hf:<id>``, ``vllm:<id>``) and every backend by its short
name. Each names its classes by ``Lazy`` (static tools follow them; imported on use); `build_backend` builds every
backend."""

from __future__ import annotations

from ..errors import UserError
from ..identity import ModelIdentity, identity_for_model_id, identity_for_tag, model_token, valid_identity
from . import presets_api, presets_hf  # tables only; they import no heavy package
from .preset import Lazy, Preset, load_symbol

MODEL_PREFIXES = tuple(presets_hf.PREFIXES)  # `--model hf:<hub id or path>`: presets made on first use
BACKENDS = {**presets_api.BACKENDS, **presets_hf.BACKENDS}  # `--backend` short names

BASELINE = Lazy("smmile.models.baselines", "BaselineFamily"), Lazy("smmile.models.baselines", "BaselineBackend")
BASELINES = (
    Preset("random", "random", *BASELINE, "random", family_args={"kind": "random"},
           notes="random ICL answer (open) / random option letter (MCQA)"),
    Preset("majority", "majority", *BASELINE, "majority", family_args={"kind": "majority"},
           notes="most frequent ICL answer / its letter"),
)
PRESETS: dict[str, Preset] = {p.name: p for p in (*presets_hf.PRESETS, *presets_api.PRESETS, *BASELINES)}


def register(*presets: Preset) -> None:
    for p in presets:
        PRESETS[p.name] = p


def get(name: str) -> Preset:
    if name not in PRESETS and name.startswith(MODEL_PREFIXES):
        register(presets_hf.preset_for(name))  # any checkpoint: `hf:<id>`, `vllm:<id>`
    if name not in PRESETS:
        raise UserError(f"unknown model preset {name!r}; known presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]


def names() -> list[str]:
    return sorted(PRESETS)


def served_model(model: str) -> Preset:
    """A preset for a model the paper never ran, served behind an OpenAI-compatible API (`--model NAME`)."""
    if model not in PRESETS:
        register(Preset(model, model_token(model), presets_api.CHAT, BACKENDS["openai-compatible"], model,
                        family_args={"answer_role": "assistant"},
                        notes="served model: GPT-4o/Claude chat layout (system prompt, text before image), "
                              "ICL answers as assistant turns, temperature 0, max_tokens 512, Template A + E2"))
    return PRESETS[model]


def backend_path(name: str | None) -> str | None:
    """The class text of a backend named by its short name (`--backend hf`), else `name` (``module:Class``)."""
    return BACKENDS.get(name, name) if name else name


def backend_class(name: str) -> type:
    path = backend_path(name)
    found = load_symbol(path)
    if found is None:
        raise UserError(f"unknown backend {name!r}: a short name ({', '.join(BACKENDS)}) or module:Class")
    return found


def build_family(preset: Preset, settings, protocol: str):
    """The preset's family, given the run's `RunSettings` (and protocol) that its constructor takes (`SETTINGS`)."""
    cls = load_symbol(preset.family)
    values = {"protocol": protocol, **settings.as_dict()}
    return cls(**preset.family_args, **{k: values[k] for k in cls.SETTINGS if k in values})


def build_backend(name: str, preset: Preset | None = None, spec=None, settings=None, generation=None):
    """The one place a backend is built: `name` a short name or ``module:Class``; `settings` (`RunSettings`) and
    `generation` resolved by the caller, or from `preset` and `spec` as the runner does."""
    return backend_class(name)(preset, spec, settings, generation)


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
