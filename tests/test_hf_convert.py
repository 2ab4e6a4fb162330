"""`smmile convert llava-med`: a tiny checkpoint in the ORIGINAL LLaVA-Med layout, converted and checked."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("transformers")

import tiny_models  # noqa: E402
from smmile.cli import main as smmile_main  # noqa: E402
from smmile.models.hf.compat import dtype_kwargs, image_token_id, llava_weight_name  # noqa: E402

pytestmark = pytest.mark.paper_env  # LLaVA-Med's front doors run the converted checkpoint under the LLaVA lock


def test_convert_llava_med(tmp_path, capsys):
    import torch
    from safetensors.torch import load_file
    from transformers import AutoProcessor, LlavaForConditionalGeneration, MistralConfig, MistralForCausalLM

    src = tiny_models.cached("llavamed_original")
    dst = tmp_path / "hf"
    assert smmile_main(["convert", "llava-med", str(src), str(dst)]) == 0
    assert "Converted" in capsys.readouterr().out
    model = LlavaForConditionalGeneration.from_pretrained(dst, **dtype_kwargs(torch.float32)).eval()
    proc = AutoProcessor.from_pretrained(dst)
    assert proc.tokenizer.convert_tokens_to_ids("<image>") == image_token_id(model.config)
    assert json.loads((dst / "smmile_llavamed.json").read_text())["image_aspect_ratio"] == "pad"

    original = load_file(str(src / "model.safetensors"))
    state = model.state_dict()  # the installed transformers' names for the 4.52+ layout (compat)
    proj = llava_weight_name("model.multi_modal_projector.")
    assert torch.equal(state[f"{proj}linear_1.weight"], original["model.mm_projector.0.weight"])
    assert torch.equal(state[f"{proj}linear_2.bias"], original["model.mm_projector.2.bias"])

    cfg = json.loads((src / "config.json").read_text())
    keep = {k: v for k, v in cfg.items() if not k.startswith(("mm_", "image_", "tune_")) and k != "architectures"}
    keep.pop("model_type", None)
    lm = MistralForCausalLM(MistralConfig(**keep)).eval()
    lm.load_state_dict({k: v for k, v in original.items() if not k.startswith("model.mm_projector")})
    ids = torch.tensor([[1, 5, 17, 42, 99, 7]])
    with torch.inference_mode():
        a = lm(input_ids=ids).logits
        # text only, through the decoder and lm_head (4.46.3's Llava forward needs an image)
        b = model.get_output_embeddings()(model.get_decoder()(input_ids=ids).last_hidden_state)[..., : a.shape[-1]]
    assert torch.allclose(a, b, atol=1e-5)


def test_convert_refuses_a_non_checkpoint(tmp_path, capsys):
    assert smmile_main(["convert", "llava-med", str(tmp_path), str(tmp_path / "out")]) == 2
    assert "no config.json" in capsys.readouterr().err
