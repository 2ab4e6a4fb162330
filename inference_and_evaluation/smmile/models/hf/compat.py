"""Where the transformers versions smmile runs under differ in their API: the paper's 4.51.0 and 4.46.3
(requirements-paper*.lock) and 5.x (requirements.lock). Every version check lives here; callers ask for the
keyword arguments of the version installed. The names each release took are in docs/reproducing-the-paper.md."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def transformers_version() -> tuple[int, int]:
    """(major, minor) of the installed transformers."""
    import transformers

    major, minor = transformers.__version__.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def dtype_kwargs(dtype) -> dict:
    """`from_pretrained`'s dtype argument: `dtype` from 4.56 on, `torch_dtype` before (4.51.0 passes an unknown
    `dtype` on to the model's __init__, which raises TypeError)."""
    return {"dtype": dtype} if transformers_version() >= (4, 56) else {"torch_dtype": dtype}


def chat_template_processor_kwargs(kwargs: dict) -> dict:
    """Processor arguments of `apply_chat_template(tokenize=True)`: 5.x takes them as `processor_kwargs={...}`,
    4.x as keyword arguments (it warns about and ignores a `processor_kwargs` it does not know)."""
    if not kwargs:
        return {}
    return {"processor_kwargs": dict(kwargs)} if transformers_version() >= (5, 0) else dict(kwargs)


def image_processor_backend(image_backend: str) -> dict:
    """`AutoImageProcessor.from_pretrained`'s pick of pil|torchvision: 5.x `backend=`, 4.x `use_fast=`."""
    if transformers_version() >= (5, 0):
        return {"backend": image_backend}
    return {"use_fast": image_backend == "torchvision"}


def image_token_id(config) -> int:
    """The image placeholder's token id of a LLaVA config: `image_token_id` in 5.x, `image_token_index` in 4.x."""
    return config.image_token_id if transformers_version() >= (5, 0) else config.image_token_index


LLAVA_4X_NAMES = (("model.language_model.", "language_model.model."), ("lm_head.", "language_model.lm_head."),
                  ("model.vision_tower.", "vision_tower.vision_model."),
                  ("model.multi_modal_projector.", "multi_modal_projector."))


def llava_weight_name(name: str) -> str:
    """A `LlavaForConditionalGeneration` weight named as from 4.52 on (`model.language_model.*`, `lm_head.*`, ...),
    renamed to the installed version's layout (4.51 and before: `language_model.model.*`, `language_model.lm_head.*`,
    `vision_tower.vision_model.*`, `multi_modal_projector.*`)."""
    if transformers_version() >= (4, 52):
        return name
    return next((old + name[len(new):] for new, old in LLAVA_4X_NAMES if name.startswith(new)), name)


def mm_processor_backend_passes_through() -> bool:
    """Whether vLLM's `mm_processor_kwargs={"backend": ...}` reaches only the image processor (5.x); 4.x would hand
    `use_fast` to the tokenizer too."""
    return transformers_version() >= (5, 0)
