"""The torchvision-less processor fallback on a hub-style folder layout, and the attention choice."""

from __future__ import annotations

import json
import os
import shutil

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("transformers")

import tiny_models  # noqa: E402


def test_hub_layout_fallback(tmp_path):
    """Hub Qwen2.5-VL folders name the processor in preprocessor_config.json and ship chat_template.json."""
    from smmile.models.hf.processor import load_processor

    try:
        import torchvision  # noqa: F401
        pytest.skip("torchvision installed: AutoProcessor works as is")
    except ImportError:
        pass
    src = tiny_models.cached("qwen2_5_vl")
    dst = tmp_path / "hub"
    shutil.copytree(src, dst)
    (dst / "processor_config.json").unlink()
    pre = json.loads((dst / "preprocessor_config.json").read_text())
    (dst / "preprocessor_config.json").write_text(json.dumps({**pre, "processor_class": "Qwen2_5_VLProcessor"}))
    template = (dst / "chat_template.jinja").read_text()
    (dst / "chat_template.jinja").unlink()
    (dst / "chat_template.json").write_text(json.dumps({"chat_template": template}))
    proc = load_processor(str(dst), max_pixels=28 * 28 * 8)
    assert type(proc).__name__ == "Qwen2_5_VLProcessor" and proc.video_processor is None
    assert proc.chat_template == template and proc.image_processor.size["longest_edge"] == 28 * 28 * 8
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Q"}]}]
    assert "<|image_pad|>" in proc.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)


def test_attention_choice():
    from smmile.environment import flash_attn_unusable
    from smmile.models.hf.backend import choose_attention

    impl, why = choose_attention("flash_attention_2", explicit=False)
    assert impl == ("flash_attention_2" if not flash_attn_unusable() else "sdpa") and why
    assert choose_attention("eager", explicit=True)[0] == "eager"
    assert choose_attention(None, explicit=False)[0] == "sdpa"
