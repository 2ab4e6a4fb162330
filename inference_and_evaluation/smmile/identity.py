"""Who a result belongs to: one ``ModelIdentity`` per model, from the run to the report.

Four names, each for one audience (spec §4.3, §7.2, §7.4):

* ``key`` — the row key of variance_analysis, ``smmile stats`` and the report (``qwen72B``,
  ``llava_7b``, ``text only``, ``my-model``). Unique per model.
* ``scoring_name`` — what evaluate_EM / evaluate_LLMJudge / stratify write into their outputs
  (``qwen72B``, ``llava_7B``, ``llama33textonly (baseline)``), byte-identical to the original's for
  the paper's models.
* ``display`` — a plain human name for reports and figures (``Qwen2.5-VL-72B``, ``Text only*``).
* ``latex`` — the name in LaTeX tables (``Text only$^*$``, ``LLaVA-Med$^{**}$``).

``PAPER_MODELS`` is the one table of the paper's models, keyed by the file-name tag of their result
files (``result_<tag>_<mode>...csv``). Presets take their identity from it by tag
(``models.registry.Preset.identity``); scoring reads it from a run's manifest
(``models.registry.identity_from_manifest``: a manifest may name a preset), or from the original's file-name rules
for files without one (``scoring.naming.identity_from_name``).

A row key is shown by ``display(key)``: the identity ``learn``ed from the results read (the report learns those of
every result, so a model outside the paper keeps the name its run recorded), else the paper's, else the key itself.

Models outside the paper (``identity_for_model_id``): every run of characters other than ASCII
letters, digits, ``.`` and ``-`` becomes one ``-``, leading and trailing ``-`` are dropped (an empty
result becomes ``model``); that token is the key, the scoring name and the file tag of served models
(``org/Some-Model`` -> ``org-Some-Model``); ``display`` keeps the id as given; ``latex`` is the key
with LaTeX special characters escaped.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

FIELDS = ("key", "scoring_name", "display", "latex")
UNKNOWN = "unknown"


@dataclass(frozen=True)
class ModelIdentity:
    key: str
    scoring_name: str
    display: str
    latex: str

    def as_dict(self) -> dict:
        """The four fields, as a run manifest records them under ``model.identity``."""
        return asdict(self)


def _paper(tag: str, scoring_name: str, display: str, latex: str | None = None, key: str | None = None):
    return tag, ModelIdentity(key or tag, scoring_name, display, latex or display)


# tag -> identity. Scoring names: spec §4.3; LaTeX names: spec §7.4 (the published spellings, including
# "LLaVa-v1.6" and "Onevision"); keys: spec §7.2 (the tag, llama33textonly renamed "text only").
PAPER_MODELS: dict[str, ModelIdentity] = dict((
    _paper("qwen3B", "qwen3B", "Qwen2.5-VL-3B"),
    _paper("qwen7B", "qwen7B", "Qwen2.5-VL-7B"),
    _paper("qwen32B", "qwen32B", "Qwen2.5-VL-32B"),
    _paper("qwen72B", "qwen72B", "Qwen2.5-VL-72B"),
    _paper("llama32_vision_90b", "llama32_vision_90b", "Llama-3.2-Vision-90B"),
    _paper("MedVLM-R1", "MedVLM-R1", "MedVLM-R1"),
    _paper("medgemma_4b", "medgemma_4b", "MedGemma 4B Multimodal"),
    _paper("llava_7b", "llava_7B", "LLaVA-v1.5-7B"),
    _paper("llava_13b", "llava_13B", "LLaVA-v1.5-13B"),
    _paper("llavanext_7b", "llavanext_7B", "LLaVA-v1.6-Mistral-7B", "LLaVa-v1.6-Mistral-7B"),
    _paper("llavaonevision_7b", "llavaonevision_7B", "LLaVA-OneVision-7B", "LLaVA-Onevision-7B"),
    _paper("llavaonevision_0.5b", "llavaonevision_0.5B", "LLaVA-OneVision-0.5B", "LLaVA-Onevision-0.5B"),
    _paper("llavamed", "llavamed_7B", "LLaVA-Med**", "LLaVA-Med$^{**}$"),
    _paper("gpt-4o", "gpt-4o", "GPT-4o"),
    _paper("claude-3-7-sonnet", "claude-3-7-sonnet", "Claude 3.7 Sonnet"),
    _paper("llama33textonly", "llama33textonly (baseline)", "Text only*", "Text only$^*$", key="text only"),
    _paper("random", "random (baseline)", "Random"),
    _paper("majority", "majority (baseline)", "Majority"),
))
BY_KEY: dict[str, ModelIdentity] = {identity.key: identity for identity in PAPER_MODELS.values()}

_NOT_TOKEN = re.compile(r"[^A-Za-z0-9.-]+")
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "{": r"\{",
                  "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def model_token(model_id: str) -> str:
    """The sanitised token of a model id (module docstring); also the file tag of served models."""
    return _NOT_TOKEN.sub("-", model_id).strip("-") or "model"


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters (``_`` is not among them: the tables turn it into ``-``)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def latex_for_key(key: str) -> str:
    """LaTeX name of a table row key: the paper's name, else the key with ``_`` -> ``-`` (spec §7.4) and
    the LaTeX special characters escaped."""
    known = BY_KEY.get(key)
    return known.latex if known else latex_escape(key.replace("_", "-"))


def identity_for_tag(tag: str, model_id: str | None = None) -> ModelIdentity:
    """The paper's identity of ``tag``, else one named after the tag (display: the model id if given); its
    ``key`` is spec §7.2's row key of a file-name token, its ``scoring_name`` spec §4.3's name."""
    if tag in PAPER_MODELS:
        return PAPER_MODELS[tag]
    return ModelIdentity(tag, tag, (model_id or "").strip() or tag, latex_for_key(tag))


def identity_for_model_id(model_id: str) -> ModelIdentity:
    """Identity of a model outside the paper (``--model NAME`` of a served model, a hub id)."""
    token = model_token(model_id)
    return ModelIdentity(token, token, model_id.strip() or token, latex_for_key(token))


_learned: dict[str, ModelIdentity] = {}


def learn(identities) -> None:
    """Remember the identities of the results read (key -> identity; the first one seen wins)."""
    for identity in identities:
        if identity is not None:
            _learned.setdefault(identity.key, identity)


def identity_for_key(key: str) -> ModelIdentity | None:
    """The identity of a row key: the one learned, else the paper's (None for a key never seen)."""
    return _learned.get(key) or BY_KEY.get(key)


def display(key: str) -> str:
    """Plain display name of a row key: ``text only`` -> ``Text only*``, ``qwen72B`` -> ``Qwen2.5-VL-72B``."""
    found = identity_for_key(key)
    return found.display if found else str(key)


def key_for_scoring(name: str) -> str:
    """The row key of a stratify / evaluate_EM model name (``llava_7B`` -> ``llava_7b``)."""
    for known in list(_learned.values()) + list(PAPER_MODELS.values()):
        if known.scoring_name == name:
            return known.key
    return name


def valid_identity(value) -> ModelIdentity | None:
    """The identity a manifest recorded (``ModelIdentity.as_dict``), or None unless all four fields are strings."""
    if isinstance(value, dict) and all(isinstance(value.get(f), str) and value.get(f) for f in FIELDS):
        return ModelIdentity(*(value[f] for f in FIELDS))
    return None
