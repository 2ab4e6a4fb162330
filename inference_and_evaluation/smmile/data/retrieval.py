"""Embeddings for retrieved demonstrations: a CLIP-style model loaded with transformers (image and text), any other
transformers encoder for text (mean pooled), or an open_clip model (``open_clip:<name>``, e.g. BiomedCLIP's
``open_clip:hf-hub:microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224``, an optional install). Vectors are
L2-normalised, cached on disk per encoder and modality under the sha256 of what was embedded."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import numpy as np

from ..errors import MissingDependency, UserError
from ..fsguard import atomic_path
from ..protocol.problem import ImageRef

log = logging.getLogger(__name__)
OPEN_CLIP = "open_clip:"
BATCH = 16


def _key(item) -> str:
    return hashlib.sha256(item.data if isinstance(item, ImageRef) else str(item).encode()).hexdigest()


class Encoder:
    """``ref``: a local folder or hub id transformers loads, or ``open_clip:<model>``."""

    def __init__(self, ref: str):
        self.ref = ref
        if ref.startswith(OPEN_CLIP):
            try:
                import open_clip
            except ImportError:
                raise MissingDependency("open_clip_torch", why=f"--encoder {ref}") from None
            self.model, _, self.preprocess = open_clip.create_model_and_transforms(ref[len(OPEN_CLIP):])
            self.tokenizer, self.clip = open_clip.get_tokenizer(ref[len(OPEN_CLIP):]), "open_clip"
        else:
            from transformers import AutoConfig, AutoImageProcessor, AutoModel, AutoTokenizer

            try:
                config = AutoConfig.from_pretrained(ref)
            except (OSError, ValueError) as exc:
                raise UserError(f"--encoder {ref}: not a model transformers can load ({exc})") from None
            self.clip = "clip" if hasattr(config, "vision_config") and hasattr(config, "text_config") else None
            self.model = AutoModel.from_pretrained(ref).eval()
            self.tokenizer = AutoTokenizer.from_pretrained(ref)
            if self.clip:
                self.preprocess = AutoImageProcessor.from_pretrained(ref)
        self.fingerprint = self._fingerprint()

    def _fingerprint(self) -> str:
        folder = Path(self.ref)
        h = hashlib.sha256(self.ref.encode())
        if folder.is_dir():
            for f in sorted(folder.glob("*.json")) + sorted(folder.glob("*.safetensors")):
                h.update(f.name.encode() + f.read_bytes() if f.suffix == ".json" else str(f.stat().st_size).encode())
        return h.hexdigest()[:16]

    def _embed(self, modality: str, batch: list) -> np.ndarray:
        import torch

        with torch.no_grad():
            if self.clip == "open_clip":
                if modality == "image":
                    pixels = torch.stack([self.preprocess(im.load().convert("RGB")) for im in batch])
                    return self.model.encode_image(pixels).float().numpy()
                return self.model.encode_text(self.tokenizer(batch)).float().numpy()
            if modality == "image":
                pixels = self.preprocess([im.load().convert("RGB") for im in batch], return_tensors="pt")
                out = self.model.get_image_features(pixel_values=pixels["pixel_values"])
            else:
                tokens = self.tokenizer(list(batch), padding=True, truncation=True, return_tensors="pt")
                if not self.clip:  # a text encoder: its last hidden states, mean pooled
                    hidden = self.model(**tokens).last_hidden_state
                    mask = tokens["attention_mask"].unsqueeze(-1).float()
                    return ((hidden * mask).sum(1) / mask.sum(1).clamp(min=1)).float().numpy()
                out = self.model.get_text_features(input_ids=tokens["input_ids"],
                                                   attention_mask=tokens["attention_mask"])
            # ``get_*_features`` return a tensor (or, in some versions, an output with ``pooler_output``)
            return getattr(out, "pooler_output", out).float().numpy()

    def embed(self, modality: str, items: list) -> np.ndarray:
        """L2-normalised vectors of ``items`` (ImageRefs or texts), read from / added to the disk cache."""
        root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "smmile" / "embeddings"
        path = Path(os.environ.get("SMMILE_EMBEDDING_DIR", root)) / f"{self.fingerprint}-{modality}.npz"
        cached = dict(np.load(path)) if path.is_file() else {}
        keys = [_key(x) for x in items]
        todo = list(dict.fromkeys(k for k in keys if k not in cached))
        if todo:
            first = {k: x for k, x in zip(keys, items)}
            for i in range(0, len(todo), BATCH):
                chunk = todo[i:i + BATCH]
                vectors = self._embed(modality, [first[k] for k in chunk])
                cached.update({k: v / max(np.linalg.norm(v), 1e-12) for k, v in zip(chunk, vectors)})
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                with open(tmp, "wb") as f:
                    np.savez(f, **cached)
            log.info(f"embedded {len(todo)} new {modality}(s) with {self.ref} (cache {path})")
        return np.stack([cached[k] for k in keys]).astype(np.float32)

    def describe(self) -> dict:
        return {"encoder": self.ref, "fingerprint": self.fingerprint, "family": self.clip or "text (mean pooled)"}


def similarity(encoder: Encoder, modality: str, queries: list, candidates: list) -> np.ndarray:
    """Cosine similarities, queries x candidates; ``both``: the mean of the image and text similarities."""
    if modality == "both":
        return (similarity(encoder, "image", [q[0] for q in queries], [c[0] for c in candidates]) +
                similarity(encoder, "text", [q[1] for q in queries], [c[1] for c in candidates])) / 2
    return encoder.embed(modality, queries) @ encoder.embed(modality, candidates).T
