"""Loading a checkpoint's processor, with an image-only fallback where the video processor needs torchvision.

transformers 5's `AutoProcessor` builds the video processor of Qwen2-VL / Qwen2.5-VL / LLaVA-OneVision, which needs
torchvision; without it the same processor class is built with `video_processor=None` (said once in the log).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger("smmile.hf")
_warned: set[str] = set()


IMAGE_BACKENDS = ("pil", "torchvision", "auto")


def requested_image_backend(flag: str | None, protocol: str) -> str:
    """--image-backend when given; else under `paper` the PIL ("slow") image processors the paper's transformers
    4.46.3 / 4.51.0 used by default, under `corrected` whatever transformers picks (torchvision where installed)."""
    return flag or ("pil" if protocol == "paper" else "auto")


def load_processor(path: str, *, image_backend: str = "auto", min_pixels: int | None = None,
                   max_pixels: int | None = None, **hub):
    """The checkpoint's processor; with `image_backend` pil|torchvision its image processor is loaded again with that
    backend (AutoProcessor cannot take it: transformers 5 would hand it to the tokenizer and the video processor)."""
    from transformers import AutoProcessor

    try:
        proc = AutoProcessor.from_pretrained(path, **hub)
    except (ImportError, ValueError) as exc:
        if "torchvision" not in str(exc).lower():
            raise
        proc = image_only_processor(path, image_backend, **hub)
    else:
        if image_backend != "auto":
            proc.image_processor = load_image_processor(path, image_backend, **hub)
    if min_pixels or max_pixels:
        set_pixel_limits(proc.image_processor, min_pixels, max_pixels)
    return proc


def load_image_processor(path: str, image_backend: str, **hub):
    """AutoImageProcessor with the requested backend (`compat.image_processor_backend`)."""
    from transformers import AutoImageProcessor

    from .compat import image_processor_backend

    pick = {} if image_backend == "auto" else image_processor_backend(image_backend)
    return AutoImageProcessor.from_pretrained(path, **pick, **hub)


def describe_image_processor(image_processor, requested: str) -> dict:
    """Its backend: 'pil' or 'torchvision' (transformers 5 says so itself; 4.x fast processors end in 'Fast')."""
    name, backend = type(image_processor).__name__, getattr(image_processor, "backend", None)
    if not isinstance(backend, str):
        backend = "torchvision" if name.endswith("Fast") else "pil"
    return {"class": name, "backend": backend, "requested": requested}


def set_pixel_limits(image_processor, min_pixels: int | None = None, max_pixels: int | None = None) -> None:
    """--min-pixels/--max-pixels for Qwen-family image processors (both the v4 and v5 attribute names)."""
    size = dict(getattr(image_processor, "size", None) or {})
    for attr, key, value in (("min_pixels", "shortest_edge", min_pixels), ("max_pixels", "longest_edge", max_pixels)):
        if value:
            size[key] = value
            if getattr(image_processor, attr, None) is not None:  # transformers 4.x keeps both
                setattr(image_processor, attr, value)
    image_processor.size = size


def _processor_class_name(path: str, **hub) -> str:
    for name in ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json"):
        data = _read_json(path, name, **hub)
        if data.get("processor_class"):
            return data["processor_class"]
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    model_type = _read_json(path, "config.json", **hub).get("model_type", "")
    return PROCESSOR_MAPPING_NAMES[model_type]


def _read_json(path: str, name: str, **hub) -> dict:
    local = Path(path) / name
    if local.is_file():
        return json.loads(local.read_text())
    if Path(path).is_dir():
        return {}
    try:
        from huggingface_hub import hf_hub_download

        return json.loads(Path(hf_hub_download(path, name, **hub)).read_text())
    except Exception:
        return {}


def image_only_processor(path: str, image_backend: str = "auto", **hub):
    from unittest import mock

    import transformers
    from transformers import AutoTokenizer
    from transformers.processing_utils import ProcessorMixin

    cls_name = _processor_class_name(path, **hub)
    if cls_name not in _warned:
        _warned.add(cls_name)
        log.warning("torchvision is not installed: building %s without its video processor (image-only use; "
                    "install torchvision to use AutoProcessor as is)", cls_name)
    cls = getattr(transformers, cls_name)
    extra = {k: v for k, v in _read_json(path, "processor_config.json", **hub).items()
             if k not in ("processor_class", "image_processor", "video_processor", "chat_template")}
    tokenizer = AutoTokenizer.from_pretrained(path, **hub)
    image_processor = load_image_processor(path, image_backend, **hub)
    jinja = Path(path) / "chat_template.jinja"
    template = jinja.read_text() if jinja.is_file() else (
        _read_json(path, "chat_template.json", **hub).get("chat_template") or getattr(tokenizer, "chat_template", None))
    with mock.patch.object(ProcessorMixin, "check_argument_for_proper_class", lambda self, name, arg: None):
        return cls(image_processor=image_processor, tokenizer=tokenizer, video_processor=None, chat_template=template,
                   **extra)
