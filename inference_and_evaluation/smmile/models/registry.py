"""The model registry: one row per preset, resolved lazily (a backend's packages load only when used)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ..errors import UserError
from ..identity import ModelIdentity, identity_for_model_id, identity_for_tag, valid_identity


@dataclass(frozen=True)
class Preset:
    name: str  # what users type: --model / --models / --model_name / --baseline
    tag: str  # model token in result file names (result_<tag>_<mode>_<format>.csv)
    family: str  # "module:Class" of the Family, relative to smmile.models
    backend: str  # "module:Class" of the default Backend, relative to smmile.models
    model_id: str = ""  # hub id / API model / deployment
    family_args: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)  # dtype, max_new_tokens, attention, ...
    notes: str = ""
    # names in scoring and reports; None = the paper's identity of `tag` (smmile.identity.PAPER_MODELS)
    identity: ModelIdentity | None = None

    def __post_init__(self) -> None:
        if self.identity is None:
            object.__setattr__(self, "identity", identity_for_tag(self.tag, self.model_id))


PRESETS: dict[str, Preset] = {}
MODEL_PREFIXES = ("hf:", "vllm:")  # `--model hf:<hub id or path>`: presets made on first use


def register(*presets: Preset) -> None:
    for p in presets:
        PRESETS[p.name] = p


register(
    Preset("random", "random", "baselines:BaselineFamily", "baselines:BaselineBackend", "random",
           family_args={"kind": "random"}, notes="random ICL answer (open) / random option letter (MCQA)"),
    Preset("majority", "majority", "baselines:BaselineFamily", "baselines:BaselineBackend", "majority",
           family_args={"kind": "majority"}, notes="most frequent ICL answer / its letter"),
)


def get(name: str) -> Preset:
    _load_all()
    if name not in PRESETS and name.startswith(MODEL_PREFIXES):
        register(load_symbol("hf.generic:preset_for")(name))  # any checkpoint: `hf:<id>`, `vllm:<id>`
    if name not in PRESETS:
        raise UserError(f"unknown model preset {name!r}; known presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]


def load_symbol(path: str):
    """`module:Attr`, the module relative to smmile.models, or absolute when it is not found there."""
    module, _, attr = path.partition(":")
    try:
        mod = importlib.import_module(f"smmile.models.{module}")
    except ModuleNotFoundError as exc:
        if exc.name is None or not f"smmile.models.{module}".startswith(exc.name):
            raise
        mod = importlib.import_module(module)
    return getattr(mod, attr)


# Preset tables of other backends register themselves on import; their modules import no heavy package.
_PRESET_MODULES = ("presets_hf", "presets_api")


def _load_all() -> None:
    for mod in _PRESET_MODULES:
        try:
            importlib.import_module(f"smmile.models.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"smmile.models.{mod}":
                raise


def names() -> list[str]:
    _load_all()
    return sorted(PRESETS)


def _registered_preset(name: str) -> Preset | None:
    try:
        return get(name)
    except UserError:
        return None


def identity_from_manifest(manifest: dict) -> ModelIdentity | None:
    """A run manifest's model identity, or None when it names no model.

    In this order: ``model.identity`` (the four fields); the registered preset ``model.preset``;
    ``model.tag`` (with ``model.model_id`` as display for models outside the paper); ``model.model_id``.
    """
    model = manifest.get("model") if isinstance(manifest, dict) else None
    if not isinstance(model, dict):
        return None
    found = valid_identity(model.get("identity"))
    if found:
        return found
    preset = model.get("preset")
    registered = _registered_preset(preset) if isinstance(preset, str) and preset else None
    if registered is not None:
        return registered.identity
    model_id = model.get("model_id") if isinstance(model.get("model_id"), str) else None
    tag = model.get("tag")
    if isinstance(tag, str) and tag:
        return identity_for_tag(tag, model_id)
    if isinstance(preset, str) and preset:
        return identity_for_model_id(model_id or preset)
    return identity_for_model_id(model_id) if model_id else None
