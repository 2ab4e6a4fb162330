"""The transformers backend: lazy loading, padded batch generation, per-problem error capture.

Batch size 1 (default) is what the originals did. With `--batch-size N` the problems of a window of 4N are sorted by
prompt size and generated N at a time with left padding; greedy outputs equal batch size 1 (tested on tiny models).
A batch that fails is retried one problem at a time, so an error (CUDA OOM included) is recorded for its problem only.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from ...environment import flash_attn_unusable
from ...errors import UserError
from ..base import Backend, Response
from . import preflight
from .compat import dtype_kwargs
from .request import PAD_FROM_TOKENIZER, HFRequest

log = logging.getLogger(__name__)

WINDOW = 4  # batches per length-sorting window
DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16", "half": "float16",
          "float32": "float32", "fp32": "float32", "auto": "auto"}


def say(msg: str) -> None:
    log.info(f"[smmile] {msg}")


def report_image_processor(info: dict) -> None:
    say(f"image processor: {info['class']} (backend {info['backend']}, requested {info['requested']})")
    if info["requested"] != "auto" and info["backend"] != info["requested"]:
        say(f"warning: the {info['requested']} image processor backend was requested, but transformers offers only "
            f"{info['class']} ({info['backend']}) for this checkpoint; pixel values may differ from the paper's")


def choose_attention(requested: str | None, explicit: bool) -> tuple[str, str]:
    """(implementation, why). The original's flash_attention_2 falls back to sdpa when flash-attn is unusable."""
    if explicit and requested:
        return requested, "requested with --attn-implementation"
    if requested == "flash_attention_2":
        if not flash_attn_unusable():
            return requested, "as the original"
        return "sdpa", "the original used flash_attention_2, but flash-attn is not importable or no CUDA device"
    return requested or "sdpa", "default"


def is_oom(exc: BaseException) -> bool:
    import torch

    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


def _windows(work: list, batch_size: int):
    """Batches in problem order (batch 1), or length-sorted inside windows of WINDOW batches."""
    if batch_size <= 1:
        for pair in work:
            yield [pair]
        return
    step = batch_size * WINDOW
    for start in range(0, len(work), step):
        window = sorted(work[start:start + step], key=lambda pair: pair[1].size_hint())
        for k in range(0, len(window), batch_size):
            yield window[k:k + batch_size]


class HFBackend(Backend):
    name = "hf"
    SCORES_OPTIONS = True  # `--score-options`: the MCQA letters scored by the model (`options.py`), not generated

    def __init__(self, preset=None, spec=None, settings=None, generation=None):
        super().__init__(preset, spec, settings, generation)
        preflight.require_stack()
        preflight.check_model_path(spec.model_path if spec else None)
        self.path = (spec.model_path if spec else None) or preset.model_id
        self.batch_size = max(1, int(getattr(spec, "batch_size", 1) or 1))
        dtype = self.settings.dtype or "auto"
        self.dtype = DTYPES.get(dtype, dtype)
        explicit = bool(spec and spec.settings.attn_implementation)
        self.attn, why = choose_attention(self.settings.attn_implementation, explicit)
        say(f"attention implementation: {self.attn} ({why})")
        self.device_map = "auto" if self.settings.device_map is None else self.settings.device_map
        self.model = self.processor = None
        self.info = {"backend": self.name, "model_path": str(self.path), "dtype": self.dtype,
                     "attn_implementation": self.attn, "attn_reason": why, "device_map": self.device_map,
                     "batch_size": self.batch_size, "processor": None, "model_class": None}

    def load(self) -> None:
        """A checkpoint that cannot be found or read is a user error (one line); with the hub unreachable (or offline
        mode on) a hub id is loaded from the local cache only."""
        if self.model is not None:
            return
        from ... import hub

        down = preflight.hub_down(str(self.path))
        if down and not hub.offline_requested():
            say(f"the Hugging Face hub is unreachable ({down}): looking for {self.path} in the local cache")
        try:
            with hub.offline_mode() if down else contextlib.nullcontext():
                self._load()
        except (OSError, ValueError, KeyError) as exc:
            if down:
                raise UserError(preflight.not_cached_message(str(self.path), down, self.spec)) from None
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            hint = ("" if self.spec is None or self.spec.model_path
                    else f" ({preflight.local_checkpoint_advice(self.spec)})")
            raise UserError(f"cannot load model {self.path}: {first}{hint}") from None

    def image_backend(self) -> str:
        """--image-backend, else the protocol's default (paper: the PIL processors the paper's versions used)."""
        from .processor import requested_image_backend

        return requested_image_backend(self.settings.image_backend, getattr(self.spec, "protocol", "paper"))

    def _load(self) -> None:
        import torch

        from . import processor as proc_mod

        s = self.settings
        hub = {k: v for k, v in (("cache_dir", s.cache_dir), ("revision", s.model_revision)) if v}
        requested = self.image_backend()
        self.processor = proc_mod.load_processor(self.path, image_backend=requested,
                                                 min_pixels=self.generation.min_pixels,
                                                 max_pixels=self.generation.max_pixels, **hub)
        fallback = getattr(self.processor, "video_processor", True) is None
        self.info["processor"] = type(self.processor).__name__ + (" (image-only, no torchvision)" if fallback else "")
        self.info["image_processor"] = proc_mod.describe_image_processor(self.processor.image_processor, requested)
        report_image_processor(self.info["image_processor"])
        kwargs: dict[str, Any] = {**dtype_kwargs(getattr(torch, self.dtype) if self.dtype != "auto" else "auto"),
                                  "attn_implementation": self.attn, **hub}
        if self.device_map not in (None, "", "none"):
            kwargs["device_map"] = self.device_map
        self.model = self.model_class(**hub).from_pretrained(self.path, **kwargs).eval()
        if self.device_map in (None, "", "none") and torch.cuda.is_available():
            self.model.to("cuda")
        self.info.update(model_class=type(self.model).__name__, model_revision=self.settings.model_revision,
                         model_commit=getattr(self.model.config, "_commit_hash", None))  # resolved hub commit

    def model_class(self, **hub):
        """The class that loads the weights (called once the processor is loaded)."""
        from transformers import AutoModelForImageTextToText

        return AutoModelForImageTextToText

    def close(self) -> None:
        """Free the model (and the CUDA cache) before the next run of the process (`--models all`)."""
        import gc

        self.model = self.processor = None
        gc.collect()
        self._free_memory()

    def generate(self, work: list[tuple[Any, HFRequest]], on_done) -> None:
        if not work:
            return
        self.load()
        for batch in _windows(work, self.batch_size):
            self._run_batch(batch, on_done)

    def _run_batch(self, batch: list, on_done) -> None:
        t0 = time.time()
        reqs = [req for _, req in batch]
        try:
            inputs = self.encode(reqs)
        except Exception as exc:  # noqa: BLE001 - recorded as the problem's error, as the originals did
            return self._fail(batch, exc, "input", on_done)
        scoring = bool(self.settings.score_options)
        try:
            out = self._score(inputs, batch) if scoring else self._generate(inputs, reqs[0].gen)
        except Exception as exc:  # noqa: BLE001
            self._free_memory()
            return self._fail(batch, exc, "oom" if is_oom(exc) else "other", on_done)
        try:
            responses = out if scoring else self.decode(inputs, out, reqs)
        except Exception as exc:  # noqa: BLE001
            return self._fail(batch, exc, "other", on_done)
        seconds = (time.time() - t0) / len(batch)
        for (item, req), response in zip(batch, responses):
            response.seconds = seconds
            on_done(item, response)

    def _fail(self, batch: list, exc: BaseException, kind: str, on_done) -> None:
        if len(batch) > 1:  # find the problem that fails: retry one at a time
            for pair in batch:
                self._run_batch([pair], on_done)
            return
        item, req = batch[0]
        on_done(item, Response(error=req.errors[kind].format(e=exc), extra={"error_kind": kind}))

    def _free_memory(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _generate(self, inputs: dict, gen: dict):
        import torch

        tok = self.processor.tokenizer
        kwargs = {k: (tok.pad_token_id if v == PAD_FROM_TOKENIZER else v) for k, v in gen.items()}
        if self.generation.stop:
            kwargs.update(stop_strings=list(self.generation.stop), tokenizer=tok)
        if self.generation.seed is not None:
            torch.manual_seed(self.generation.seed)
        with torch.inference_mode():
            return self.model.generate(**inputs, **kwargs)

    def _score(self, inputs: dict, batch: list) -> list[Response]:
        from .options import score

        return score(self.model, self.processor.tokenizer, inputs, [item for item, _ in batch])

    def encode(self, reqs: list[HFRequest]) -> dict:
        from .encode import encode

        return self._to_device(encode(self.processor, self.model, reqs))

    def _to_device(self, inputs) -> dict:
        device, dtype = self.model.device, self.model.dtype
        out = {}
        for k, v in dict(inputs).items():
            if hasattr(v, "to"):
                v = v.to(device=device, dtype=dtype) if v.is_floating_point() else v.to(device)
            out[k] = v
        return out

    def decode(self, inputs: dict, out, reqs: list[HFRequest]) -> list[Response]:
        tok = self.processor.tokenizer
        n_in = inputs["input_ids"].shape[1]
        responses = []
        for row, req in zip(out, reqs):
            new = row[n_in:]
            n_new = int(sum(1 for t in new.tolist() if t != tok.pad_token_id))
            text = tok.decode(new, skip_special_tokens=True, **req.decode)
            full = tok.decode(row, skip_special_tokens=True, **req.decode)
            n_prompt = int(inputs["attention_mask"][len(responses)].sum()) if "attention_mask" in inputs else n_in
            responses.append(Response(text=text, full_text=full,
                                      usage={"input_tokens": n_prompt, "output_tokens": n_new}))
        return responses
