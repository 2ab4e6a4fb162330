"""A model preset, and `Lazy`: a class named by module and name (both literals, so static tools can follow it),
imported only by `load()`; its text ``"hf.families:QwenFamily"`` is what manifests, journal keys and --backend carry."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ..generation import GenerationSettings, RunSettings
from ..identity import ModelIdentity, identity_for_tag

PACKAGE = "smmile.models."


class Lazy(str):
    """A class named by (module, class name); equal to, and hashed as, its text ``"<module>:<Class>"``."""

    def __new__(cls, module: str, name: str):
        text = super().__new__(cls, f"{module.removeprefix(PACKAGE)}:{name}")
        text.module, text.name = module, name
        return text

    def __getnewargs__(self):  # pickling (Ray ships presets to its workers) and copying
        return self.module, self.name

    def load(self):
        return getattr(importlib.import_module(self.module), self.name)


def load_symbol(path: str):
    """The class a preset names: a ``Lazy``, or a ``module:Attr`` text (``--backend``, a manifest), the module
    relative to smmile.models, or absolute when it is not found there. None: no such module or attribute."""
    if isinstance(path, Lazy):
        return path.load()
    module, _, attr = path.partition(":")
    for name in (PACKAGE + module, module):
        try:
            found = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise  # the module is there; something it imports is not
            continue
        if hasattr(found, attr):
            return getattr(found, attr)
        break
    return None


@dataclass(frozen=True)
class Preset:
    name: str  # what users type: --model / --models / --model_name / --baseline
    tag: str  # model token in result file names (result_<tag>_<mode>_<format>.csv)
    family: str  # the Family: a Lazy (its text "module:Class", relative to smmile.models)
    backend: str  # the default Backend: a Lazy, or a "module:Class" text (--backend)
    model_id: str = ""  # hub id / API model / deployment
    family_args: dict = field(default_factory=dict)
    settings: RunSettings = RunSettings()  # what the original script loaded the model with (dtype, attention)
    generation: GenerationSettings = GenerationSettings()  # over the family's (`Family.GENERATION`)
    notes: str = ""
    # names in scoring and reports; None = the paper's identity of `tag` (smmile.identity.PAPER_MODELS)
    identity: ModelIdentity | None = None

    def __post_init__(self) -> None:
        if self.identity is None:
            object.__setattr__(self, "identity", identity_for_tag(self.tag, self.model_id))

