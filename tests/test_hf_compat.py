"""smmile.models.hf.compat against the installed transformers (run under the main lock and every paper lock)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("transformers")

import tiny_models  # noqa: E402
from smmile.models.hf import compat  # noqa: E402

pytestmark = pytest.mark.paper_env


def test_dtype_argument_is_the_one_the_installed_from_pretrained_reads():
    """4.51.0 hands an unknown `dtype` to the model's __init__ (TypeError); 5.x reads `dtype`."""
    import torch
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(str(tiny_models.cached("llava")),
                                                        **compat.dtype_kwargs(torch.float16))
    assert model.dtype == torch.float16


def test_llava_weight_names_are_the_installed_layout():
    """The converter's names (the 4.52+ layout) renamed for the installed LlavaForConditionalGeneration."""
    from transformers import AutoConfig, LlavaForConditionalGeneration

    config = AutoConfig.from_pretrained(str(tiny_models.cached("llava")))
    names = set(LlavaForConditionalGeneration(config).state_dict())
    newer = {"model.language_model.norm.weight", "lm_head.weight", "model.multi_modal_projector.linear_1.bias",
             "model.vision_tower.embeddings.patch_embedding.weight"}
    assert {compat.llava_weight_name(n) for n in newer} <= names


def test_chat_template_processor_kwargs_match_the_installed_signature():
    import inspect

    from transformers.processing_utils import ProcessorMixin

    takes_dict = "processor_kwargs" in inspect.signature(ProcessorMixin.apply_chat_template).parameters
    got = compat.chat_template_processor_kwargs({"padding": "longest", "pad_to_multiple_of": 8})
    assert got == ({"processor_kwargs": {"padding": "longest", "pad_to_multiple_of": 8}} if takes_dict
                   else {"padding": "longest", "pad_to_multiple_of": 8})
    assert compat.chat_template_processor_kwargs({}) == {}
