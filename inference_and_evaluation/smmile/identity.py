"""Who a result belongs to: one ``ModelIdentity`` per model, from the run to the report, with four names: ``key``
(the row key of variance_analysis, stats and the report, spec §7.2), ``scoring_name`` (what the scoring scripts
write, spec §4.3), ``display`` and ``latex`` (spec §7.4). ``PAPER_MODELS``, keyed by a result's file-name tag, is
the one table of the paper's models; a model outside it gets its id as a token (``org/M`` -> ``org-M``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .fsguard import read_json

FIELDS = ("key", "scoring_name", "display", "latex")
UNKNOWN = "unknown"
WEIGHT_SUFFIXES = (".safetensors", ".bin")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelIdentity:
    key: str
    scoring_name: str
    display: str
    latex: str


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
    """Every run of characters other than ASCII letters, digits, ``.`` and ``-`` becomes one ``-``."""
    return _NOT_TOKEN.sub("-", model_id).strip("-") or "model"


def latex_for_key(key: str) -> str:
    """LaTeX name of a table row key: the paper's name, else the key with ``_`` -> ``-`` (spec §7.4), escaped."""
    known = BY_KEY.get(key)
    return known.latex if known else "".join(_LATEX_SPECIAL.get(ch, ch) for ch in key.replace("_", "-"))


def identity_for_tag(tag: str, model_id: str | None = None) -> ModelIdentity:
    """The paper's identity of ``tag``, else one named after the tag (display: the model id if given); its
    ``key`` is spec §7.2's row key of a file-name token, its ``scoring_name`` spec §4.3's name."""
    return PAPER_MODELS.get(tag) or ModelIdentity(tag, tag, (model_id or "").strip() or tag, latex_for_key(tag))


def identity_for_model_id(model_id: str) -> ModelIdentity:
    """Identity of a model outside the paper (``--model NAME`` of a served model, a hub id)."""
    token = model_token(model_id)
    return ModelIdentity(token, token, model_id.strip() or token, latex_for_key(token))


def checkpoint_origin(folder: str | Path, hub_id: str, cache_dir: str | None = None) -> dict | None:
    """Which revision of hub id `hub_id` the checkpoint folder is (None: another checkpoint): the Hugging Face
    cache's snapshot of it (``.../models--Org--Name/snapshots/<revision>``); a folder `smmile convert` made from it
    whose weights still have the sha256 its record (``smmile_*.json``) names; or a folder (a copy, a ``--local-dir``
    download) whose weight files are those of a snapshot cached in `cache_dir` or the default cache: same names,
    sizes and sha256 (the hub names each weight blob by its sha256)."""
    path = Path(folder).expanduser().resolve()
    repo = "models--" + hub_id.replace("/", "--")
    if path.parent.name == "snapshots" and path.parent.parent.name == repo:
        return {"hub_id": hub_id, "revision": path.name, "recognised_by": "hub cache snapshot"}
    for record in sorted(path.glob("smmile_*.json")):
        data = read_json(record) or {}
        source, hashes = data.get("source"), data.get("weights_sha256")
        if isinstance(source, dict) and source.get("hub_id") == hub_id and isinstance(hashes, dict) and hashes:
            log.info(f"checking that {path} holds the weights {record.name} records (converted from {hub_id})")
            if weight_hashes(path) == hashes:
                return {"hub_id": hub_id, "revision": source.get("revision"),
                        "recognised_by": f"converted from it ({record.name}; weights sha256 unchanged)"}
    for snapshot in _cached_snapshots(repo, cache_dir):
        if snapshot.resolve() != path and _same_weights(path, snapshot, hub_id):
            return {"hub_id": hub_id, "revision": snapshot.name, "recognised_by": "weights sha256"}
    return None


def weight_hashes(folder: str | Path) -> dict[str, str]:
    """``file name -> sha256`` of a checkpoint folder's weight files (what `smmile convert` records)."""
    return {f.name: _sha256(f) for f in sorted(Path(folder).iterdir()) if f.name.endswith(WEIGHT_SUFFIXES)}


def _cached_snapshots(repo: str, cache_dir: str | None) -> list[Path]:
    roots = [Path(cache_dir).expanduser()] if cache_dir else []
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    hf_home = os.environ.get("HF_HOME") or os.path.join(cache_home, "huggingface")  # huggingface_hub's order
    roots.append(Path(os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
                      or Path(hf_home) / "hub"))
    return sorted(s for root in roots if (root / repo / "snapshots").is_dir()
                  for s in (root / repo / "snapshots").iterdir() if s.is_dir())


def _same_weights(folder: Path, snapshot: Path, hub_id: str) -> bool:
    theirs = {f.name: f for f in snapshot.iterdir() if f.name.endswith(WEIGHT_SUFFIXES)}
    ours = {f.name: f for f in folder.iterdir() if f.name.endswith(WEIGHT_SUFFIXES)} if folder.is_dir() else {}
    if not theirs or set(ours) != set(theirs) or not all(f.is_file() for f in theirs.values()) \
            or any(ours[n].stat().st_size != theirs[n].stat().st_size for n in ours):  # a snapshot half downloaded
        return False
    size = sum(f.stat().st_size for f in ours.values())
    log.info(f"checking whether {folder} holds the weights of {hub_id} ({snapshot.name[:12]}): sha256 of "
             f"{size / 1e9:.1f} GB")
    return all(_sha256(ours[n]) == _blob_sha256(theirs[n]) for n in sorted(ours))


def _blob_sha256(cached: Path) -> str:
    """A cached file's sha256: the name of the blob it links to (LFS files), else computed."""
    blob = cached.resolve().name
    return blob if re.fullmatch(r"[0-9a-f]{64}", blob) else _sha256(cached)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            digest.update(chunk)
    return digest.hexdigest()


def checkpoint_identity(folder: str | Path, preset: ModelIdentity | None = None) -> ModelIdentity:
    """Names of a local checkpoint folder: its name and a short hash of its resolved path, so two folders named
    ``checkpoint-500`` never share a file, a table row or a label; a preset run on it (`preset`) is named beside."""
    path = Path(folder).expanduser().resolve()
    short = hashlib.sha256(str(path).encode()).hexdigest()[:6]
    token = f"{model_token(path.name)}-{short}"
    display = f"{path.name or token} #{short}" + (f" ({preset.display} preset)" if preset else "")
    return ModelIdentity(token, token, display, latex_for_key(token))


_learned: dict[str, ModelIdentity] = {}


def learn(identities) -> None:
    """Remember the identities of the results read (key -> identity; the first one seen wins)."""
    for identity in identities:
        if identity is not None:
            _learned.setdefault(identity.key, identity)


def display(key: str) -> str:
    """Display name of a row key: the identity learned from the results read, else the paper's, else the key."""
    found = _learned.get(key) or BY_KEY.get(key)
    return found.display if found else str(key)


def key_for_scoring(name: str) -> str:
    """The row key of a stratify / evaluate_EM model name (``llava_7B`` -> ``llava_7b``)."""
    return next((known.key for known in [*_learned.values(), *PAPER_MODELS.values()] if known.scoring_name == name),
                name)


def valid_identity(value) -> ModelIdentity | None:
    """The identity a manifest recorded (its ``FIELDS``), or None unless all four fields are strings."""
    if isinstance(value, dict) and all(isinstance(value.get(f), str) and value.get(f) for f in FIELDS):
        return ModelIdentity(*(value[f] for f in FIELDS))
    return None
