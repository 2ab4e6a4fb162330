"""`--model vllm:<path>` on CPU, with a stand-in `vllm` module (the real one needs CUDA; benchmarks/gpu_check.sh
runs it for real): one `LLM.chat` call for the run, the HF path's conversations, template and greedy sampling."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

pytest.importorskip("transformers")

import tiny_generic as tg  # noqa: E402
import tiny_models  # noqa: E402
from test_anymodel_runs import demo_ids, local_tag, smmile_run  # noqa: E402
from test_hf_frontdoors import read_csv  # noqa: E402
from test_hf_vllm import FakeVLLM, fake_vllm  # noqa: E402,F401 - fake_vllm: the fixture


def _placeholders(conv):
    return [{**m, "content": [{"type": "image"} if p["type"] == "image_pil" else p for p in m["content"]]}
            for m in conv]


def test_one_chat_call_with_the_hf_conversations(fake_vllm, tmp_path, capsys):
    from smmile.data.load import load_for_run
    from smmile.runner.run import RunSpec, Runner

    path = tg.cached("idefics3")
    assert smmile_run(f"vllm:{path}", tmp_path, "ICL", "mcqa") == 0, capsys.readouterr().err
    calls = fake_vllm.generation_calls()
    assert len(calls) == 1 and len(calls[0]["messages"]) == 4  # every problem of the run in one call
    assert calls[0]["params"] == {"max_tokens": 4, "n": 1, "temperature": 0.0}  # HF greedy decoding
    assert calls[0]["chat_template"] == (path / "chat_template.jinja").read_text()
    assert calls[0]["add_generation_prompt"] is True
    engine = fake_vllm.engines[0]
    assert engine["limit_mm_per_prompt"] == {"image": 11} and engine["dtype"] == "float32"
    # the conversations and images of the HF path (same family requests, same template)
    dataset = str(tiny_models.demo_subset(4))
    runner = Runner(RunSpec(model=f"hf:{path}", mode="ICL", fmt="mcqa", dataset=dataset, output_dir=tmp_path))
    requests = [runner.family.request(it) for it in runner.plan(load_for_run(dataset))]
    assert [_placeholders(c) for c in calls[0]["messages"]] == [r.messages for r in requests]
    sent = [p["image_pil"] for m in calls[0]["messages"][0] for p in m["content"] if p["type"] == "image_pil"]
    assert [np.asarray(img).tolist() for img in sent] == [np.asarray(img).tolist() for img in requests[0].load_images()]
    stem = f"result_{local_tag(path)}_ICL_mcqa"
    _, rows = read_csv(tmp_path / f"{stem}.csv")
    assert [r["problem_id"] for r in rows] == demo_ids() and {r["selected_option"] for r in rows} == {"A"}
    m = json.loads((tmp_path / f"{stem}.manifest.json").read_text())
    assert m["model"]["backend"] == "vllm_chat:VLLMChatBackend" and m["model"]["identity"]["key"] == local_tag(path)
    assert m["backend"]["calls"][0]["api"] == "LLM.chat" and m["backend"]["chat_template"] == "processor"
    assert all(c["ok"] for c in m["backend"]["capabilities"]["checks"].values())
    assert m["backend"]["capabilities"]["layout"] == {"system": "system-turn", "examples": "turns"}


def test_0shot_starts_vllm_for_one_image(fake_vllm, tmp_path):
    assert smmile_run(f"vllm:{tg.cached('qwen3_vl')}", tmp_path, "0-shot", "open") == 0
    assert fake_vllm.engines[0]["limit_mm_per_prompt"] == {"image": 1}
    stem = f"result_{local_tag(tg.cached('qwen3_vl'))}_0-shot_open"
    checks = json.loads((tmp_path / f"{stem}.manifest.json").read_text())["backend"][
        "capabilities"]["checks"]
    assert checks["several_images_in_one_turn"] == {"ok": None,
                                                    "detail": "not probed: vLLM runs with 1 image(s) per prompt"}
    assert checks["one_image"]["ok"] is True


def test_one_image_model_icl_is_refused(monkeypatch, tmp_path, capsys):
    fake = FakeVLLM(keeps=1)
    monkeypatch.setitem(sys.modules, "vllm", fake)
    path = tg.cached("idefics3")
    assert smmile_run(f"vllm:{path}", tmp_path, "ICL", "open") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: vllm:{path} takes one image per prompt (image 11 of 11 does not reach the model); ICL needs up to "
        "11 images per prompt: run it with --inference_mode 0-shot")
    assert fake.generation_calls() == []


def test_engine_refusing_the_image_count_is_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "vllm", FakeVLLM(max_images=1))
    path = tg.cached("idefics3")
    assert smmile_run(f"vllm:{path}", tmp_path, "ICL", "open") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: vLLM cannot start {path} for 11 image(s) per prompt: ValueError: this model only supports at most "
        "1 image items; a model that takes one image per prompt runs with --inference_mode 0-shot")
    assert smmile_run(f"vllm:{path}", tmp_path, "0-shot", "open") == 0


def test_missing_vllm_is_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "vllm", None)
    assert smmile_run(f"vllm:{tg.cached('idefics3')}", tmp_path, "ICL", "open") == 2
    assert "pip install" in capsys.readouterr().err.strip().splitlines()[-1]
