"""`--model hf:<id>` / `vllm:<id>` without loading a model: presets and names, layouts, probe decisions."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from smmile.errors import UserError
from smmile.models import registry
from smmile.models.hf import probe
from smmile.models.hf.probe import Check, Layout, Probe, fold_examples, fold_system, run_probe


def _t(text):
    return {"type": "text", "text": text}


IMG = {"type": "image"}
ICL = [{"role": "system", "content": [_t("Be a doctor.")]},
       {"role": "user", "content": [IMG, _t("Q1?")]}, {"role": "assistant", "content": [_t("A1")]},
       {"role": "user", "content": [IMG, _t("Q2?")]}, {"role": "assistant", "content": [_t("A2")]},
       {"role": "user", "content": [IMG, _t("Query?")]}]


def test_hub_id_preset_names_backends_and_identity():
    hf = registry.get("hf:HuggingFaceTB/SmolVLM-Instruct")
    vl = registry.get("vllm:HuggingFaceTB/SmolVLM-Instruct")
    assert hf.model_id == vl.model_id == "HuggingFaceTB/SmolVLM-Instruct"
    assert hf.tag == vl.tag == "HuggingFaceTB-SmolVLM-Instruct"  # result_<tag>_<mode>_<format>.csv
    assert hf.backend == "hf.generic_backend:GenericHFBackend" and vl.backend == "vllm_chat:VLLMChatBackend"
    assert hf.family == vl.family == "hf.generic:GenericFamily"
    assert (hf.identity.key, hf.identity.display) == ("HuggingFaceTB-SmolVLM-Instruct", "HuggingFaceTB/SmolVLM-Instruct")
    assert registry.get("hf:HuggingFaceTB/SmolVLM-Instruct") is hf  # made once


def test_local_folder_is_named_after_the_folder(tmp_path):
    folder = tmp_path / "Tiny VLM (v2)"
    folder.mkdir()
    preset = registry.get(f"hf:{folder}/")
    short = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:6]  # two folders of one name: two names
    assert preset.model_id == f"{folder}/" and preset.tag == f"Tiny-VLM-v2-{short}"
    assert (preset.identity.key, preset.identity.display, preset.identity.latex) == (
        f"Tiny-VLM-v2-{short}", f"Tiny VLM (v2) #{short}", f"Tiny-VLM-v2-{short}")


@pytest.mark.parametrize("name", ["hf:", "vllm:  "])
def test_prefix_without_a_model_is_a_user_error(name):
    with pytest.raises(UserError, match="expected hf:<hub id or local path>"):
        registry.get(name)


def test_backend_flag_with_a_prefix_is_one_line(capsys):
    from smmile.cli import run as cli

    assert cli.main(["--model", "hf:org/model", "--backend", "vllm", "--dataset", "demo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--backend is not used with --model hf:<id>" in err[0]


def test_generic_family_prompt_is_the_served_models():
    """Template A for MCQA, E2 extraction, EXTRACTION_FAILED kept literally, the answer stripped."""
    from smmile.data.load import load_problems
    from smmile.models.base import Response
    from smmile.models.hf.generic import GenericFamily
    from smmile.protocol.items import Item, Rngs
    from smmile.protocol.templates import API_SYSTEM, TEMPLATE_A

    problem = max(load_problems("demo"), key=lambda p: len(p.rows))
    family = GenericFamily()
    item = Item(0, problem, "ICL", "mcqa")
    family.plan(item, Rngs())
    assert item.target.startswith(TEMPLATE_A.split("{question}")[0] + problem.query.question)
    req = family.request(item)
    assert req.messages[0] == {"role": "system", "content": [_t(API_SYSTEM)]}
    assert req.messages[1] == {"role": "user", "content": [IMG, _t(problem.examples[0].question)]}
    assert req.messages[2] == {"role": "assistant", "content": [_t(problem.examples[0].answer)]}
    assert req.messages[-1] == {"role": "user", "content": [IMG, _t(item.target)]}
    assert len(req.images) == len(problem.rows) and req.gen == {"max_new_tokens": 512, "do_sample": False}
    letter = item.correct
    row = family.row(item, Response(text=f"\n <think>x</think><answer>{letter}</answer> \n"))
    assert (row["selected_option"], row["is_correct"]) == (letter, True)
    assert row["full_response"] == f"<think>x</think><answer>{letter}</answer>"
    failed = family.row(item, Response(text="no idea"))
    assert failed["selected_option"] == failed["generated_answer"] == "EXTRACTION_FAILED"
    assert list(row) == ["problem_id", "final_question", "true_answer", "correct_option", "selected_option",
                         "is_correct", "generated_answer", "full_response"]


def test_images_are_made_rgb_on_white():
    from PIL import Image

    from smmile.models.hf.generic import rgb_on_white

    clear = Image.new("RGBA", (4, 4), (10, 20, 30, 0))
    assert rgb_on_white(0, clear).getpixel((0, 0)) == (255, 255, 255)
    assert rgb_on_white(0, Image.new("L", (4, 4), 7)).getpixel((0, 0)) == (7, 7, 7)


def test_fold_system_opens_the_first_user_turn():
    out = fold_system(ICL)
    assert out[0] == {"role": "user", "content": [IMG, _t("Be a doctor.\n\nQ1?")]}
    assert out[1:] == ICL[2:]
    assert fold_system(ICL[1:]) == ICL[1:]


def test_fold_examples_makes_one_user_turn():
    out = fold_examples(ICL)
    assert out == [ICL[0], {"role": "user", "content": [IMG, _t("Q1?\nAnswer: A1"), IMG, _t("Q2?\nAnswer: A2"),
                                                        IMG, _t("Query?")]}]
    assert Layout("first-user-turn", "one-turn").apply(ICL) == [
        {"role": "user", "content": [IMG, _t("Be a doctor.\n\nQ1?\nAnswer: A1"), IMG, _t("Q2?\nAnswer: A2"), IMG,
                                     _t("Query?")]}]


def _probe(**checks) -> Probe:
    base = {k: Check(True) for k in ("system_role", "assistant_role", "images_in_earlier_turns",
                                     "several_images_in_one_turn", "one_image")}
    base.update({k: Check(v, "why") if v is not True else Check(True) for k, v in checks.items()})
    return Probe(base, "p1", 5)


def test_layout_decisions():
    assert _probe().layout("ICL") == Layout("system-turn", "turns")
    assert _probe(system_role=False).layout("ICL") == Layout("first-user-turn", "turns")
    assert _probe(images_in_earlier_turns=False).layout("ICL") == Layout("system-turn", "one-turn")
    assert _probe(images_in_earlier_turns=None).layout("ICL") == Layout("system-turn", "turns")  # unknown: OOM
    one = _probe(images_in_earlier_turns=False, several_images_in_one_turn=False)
    assert one.layout("ICL") is None and one.layout("0-shot") == Layout("system-turn", "turns")
    assert one.max_images() == 1 and _probe().max_images() == 5
    assert one.refusal("hf:x") == ("hf:x takes one image per prompt (why); ICL needs up to 5 images per prompt: "
                                   "run it with --inference_mode 0-shot")


def _renderer(refuse: str = ""):
    def render(messages):
        if refuse and any(m["role"] == refuse for m in messages):
            raise ValueError(f"{refuse} role not supported")
        return "|".join(p.get("text", "<image>") for m in messages for p in m["content"])
    return render


def _scorer(used):
    """Scores from the images a fake model uses (`used(images)` -> the ones that reach it)."""
    def score(messages, images):
        return np.array([float(np.asarray(img).mean()) for img in used(images)] + [0.0])
    return score


def _images(n):
    from PIL import Image

    return [Image.new("RGB", (8, 8), (30 * i, 10, 10)) for i in range(n)]


def _run(render, score, n=3):
    icl = (ICL[:1] + ICL[1:2 * n] if n > 1 else ICL[:2], _images(n))
    return run_probe(render, score, "p1", icl, ([ICL[0], ICL[-1]], _images(1)))


def test_probe_all_images_reach():
    result = _run(_renderer(), _scorer(lambda imgs: imgs))
    assert all(c.ok for c in result.checks.values()) and result.layout("ICL") == Layout()
    assert result.as_dict("ICL")["max_images_per_prompt"] == 3


def test_probe_one_image_kept_is_refused_for_icl():
    """A model that silently keeps the first image only (BLIP-2's processor): ICL refused, 0-shot runs."""
    result = _run(_renderer(), _scorer(lambda imgs: imgs[:1]))
    assert result.checks["images_in_earlier_turns"] == Check(False, "image 3 of 3 does not reach the model")
    assert result.checks["several_images_in_one_turn"].ok is False and result.checks["one_image"].ok
    assert result.layout("ICL") is None and result.layout("0-shot") == Layout()


def test_probe_template_refusals_choose_fallbacks():
    result = _run(_renderer(refuse="system"), _scorer(lambda imgs: imgs))
    assert result.checks["system_role"].detail == "chat template: ValueError: system role not supported"
    assert result.layout("ICL") == Layout("first-user-turn", "turns")
    result = _run(_renderer(refuse="assistant"), _scorer(lambda imgs: imgs))
    assert result.checks["assistant_role"].ok is False
    assert result.checks["images_in_earlier_turns"] == Check(False, "no assistant role")
    assert result.layout("ICL") == Layout("system-turn", "one-turn")


def test_probe_out_of_memory_is_unknown_not_refused():
    def score(messages, images):
        if len(images) > 1:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2 GiB")
        return np.zeros(2)

    result = run_probe(_renderer(), score, "p1", (ICL, _images(3)), ([ICL[0], ICL[-1]], _images(1)),
                       is_oom=lambda e: "out of memory" in str(e))
    assert result.checks["images_in_earlier_turns"] == Check(None, "out of memory while probing")
    assert result.layout("ICL") == Layout()
    assert result.checks["one_image"].ok is False  # the fake's scores never change


def test_image_limits_and_template_source():
    class Tok:
        chat_template = {"default": "T", "tool_use": "U"}

    class ImageProcessor:
        size = {"longest_edge": 364}
        max_image_size = None
        do_image_splitting = True

    class Processor:
        chat_template = None
        tokenizer = Tok()
        image_processor = ImageProcessor()
        image_seq_len = 81

    assert probe.chat_template(Processor()) == ("T", "tokenizer")
    assert probe.image_limits(Processor()) == {"image_processor.size": {"longest_edge": 364},
                                               "image_processor.do_image_splitting": True,
                                               "processor.image_seq_len": 81}
    Processor.tokenizer = None
    assert probe.chat_template(Processor()) == (None, "none")


def test_model_class_from_the_auto_mapping_else_the_config_architectures(tmp_path):
    pytest.importorskip("transformers")
    import transformers
    from transformers import AutoModelForImageTextToText, Idefics3Config, LlamaConfig

    from smmile.models.hf.generic_backend import model_class_for

    Idefics3Config().save_pretrained(tmp_path / "vlm")
    assert model_class_for(str(tmp_path / "vlm")) is AutoModelForImageTextToText
    cfg = LlamaConfig(num_hidden_layers=1, hidden_size=8, intermediate_size=8, num_attention_heads=1)
    cfg.architectures = ["LlamaForCausalLM"]
    cfg.save_pretrained(tmp_path / "other")  # a model type the image-text-to-text mapping does not know
    assert model_class_for(str(tmp_path / "other")) is transformers.LlamaForCausalLM
    cfg.architectures = ["NotInTransformers"]
    cfg.save_pretrained(tmp_path / "other")
    with pytest.raises(UserError, match=r"has no image-text-to-text class for .*architectures \['NotInTransformers'\]"):
        model_class_for(str(tmp_path / "other"))


def test_a_query_image_that_does_not_reach_the_model_is_a_warning(capsys):
    result = _run(_renderer(), lambda messages, images: np.zeros(2))
    assert result.checks["one_image"] == Check(False, "image 1 of 1 does not reach the model")
    result.run_layout("0-shot", "hf:x")  # the run goes on, with a warning
    assert capsys.readouterr().err.startswith("[smmile] warning: the query image does not reach the model")
