"""One model identity (smmile/identity.py): the paper's table, presets, manifests, models outside the paper."""

import pytest

from smmile import identity
from smmile.identity import ModelIdentity
from smmile.models import registry
from smmile.record import naming

# Spec §4.3 (scoring names), §7.2 (row keys) and §7.4 (LaTeX names), copied from the spec, per file tag.
SPEC = {
    "qwen3B": ("qwen3B", "qwen3B", "Qwen2.5-VL-3B"),
    "qwen7B": ("qwen7B", "qwen7B", "Qwen2.5-VL-7B"),
    "qwen32B": ("qwen32B", "qwen32B", "Qwen2.5-VL-32B"),
    "qwen72B": ("qwen72B", "qwen72B", "Qwen2.5-VL-72B"),
    "llama32_vision_90b": ("llama32_vision_90b", "llama32_vision_90b", "Llama-3.2-Vision-90B"),
    "MedVLM-R1": ("MedVLM-R1", "MedVLM-R1", "MedVLM-R1"),
    "medgemma_4b": ("medgemma_4b", "medgemma_4b", "MedGemma 4B Multimodal"),
    "llava_7b": ("llava_7b", "llava_7B", "LLaVA-v1.5-7B"),
    "llava_13b": ("llava_13b", "llava_13B", "LLaVA-v1.5-13B"),
    "llavanext_7b": ("llavanext_7b", "llavanext_7B", "LLaVa-v1.6-Mistral-7B"),
    "llavaonevision_7b": ("llavaonevision_7b", "llavaonevision_7B", "LLaVA-Onevision-7B"),
    "llavaonevision_0.5b": ("llavaonevision_0.5b", "llavaonevision_0.5B", "LLaVA-Onevision-0.5B"),
    "llavamed": ("llavamed", "llavamed_7B", "LLaVA-Med$^{**}$"),
    "gpt-4o": ("gpt-4o", "gpt-4o", "GPT-4o"),
    "claude-3-7-sonnet": ("claude-3-7-sonnet", "claude-3-7-sonnet", "Claude 3.7 Sonnet"),
    "llama33textonly": ("text only", "llama33textonly (baseline)", "Text only$^*$"),
    "random": ("random", "random (baseline)", "Random"),
    "majority": ("majority", "majority (baseline)", "Majority"),
}


@pytest.mark.parametrize("tag", sorted(SPEC))
def test_paper_table_matches_the_spec_and_the_file_name_rules(tag):
    key, scoring_name, latex = SPEC[tag]
    found = identity.PAPER_MODELS[tag]
    assert (found.key, found.scoring_name, found.latex) == (key, scoring_name, latex)
    name = f"result_{tag}_ICL_open.csv"
    assert naming.identity_from_name(name) == found  # the fallback for files without a manifest agrees
    assert naming.get_model_info(name).model == scoring_name and naming.extract_model_info(name).model == key


def test_keys_are_unique_and_every_preset_has_the_identity_of_its_tag():
    assert len({i.key for i in identity.PAPER_MODELS.values()}) == len(identity.PAPER_MODELS)
    for name in registry.names():
        preset = registry.get(name)
        if preset.tag in SPEC:
            assert preset.identity is identity.PAPER_MODELS[preset.tag], name
    assert registry.get("llama33textonly_mcqa").identity.key == "text only"
    assert registry.get("qwen72B").identity.display == "Qwen2.5-VL-72B"


def test_models_outside_the_paper():
    some = identity.identity_for_model_id("org/Some-Model")
    assert some == ModelIdentity("org-Some-Model", "org-Some-Model", "org/Some-Model", "org-Some-Model")
    assert identity.identity_for_model_id("my model_v2").key == "my-model-v2"
    assert identity.identity_for_model_id("///").key == "model"
    from smmile.models import presets_api

    # what registry.served_model builds for `smmile run --backend openai-compatible --model "acme/VL 7B"`
    served = registry.Preset("acme/VL 7B", identity.model_token("acme/VL 7B"), presets_api.CHAT,
                             presets_api.BACKENDS["openai-compatible"], "acme/VL 7B")
    assert served.tag == "acme-VL-7B" and served.identity == identity.identity_for_model_id("acme/VL 7B")


def test_file_name_fallback_keeps_models_without_a_preset_as_today():
    for tag in ("aya_vision_32b", "llama4_17b"):
        found = naming.identity_from_name(f"result_{tag}_few-shot.csv")
        assert (found.key, found.scoring_name, found.display) == (tag, tag, tag)
        assert found.latex == tag.replace("_", "-")
    odd = naming.identity_from_name("result_my&model_ICL.csv")
    assert odd.key == "my&model" and odd.scoring_name == "unknown" and odd.latex == r"my\&model"
    assert naming.identity_from_name("notes.csv").key == "unknown"


def test_identity_from_manifest_in_order_of_preference():
    full = {"key": "k", "scoring_name": "s", "display": "d", "latex": "l"}
    assert registry.identity_from_manifest({"model": {"identity": full, "tag": "qwen7B"}}) == ModelIdentity(**full)
    assert registry.identity_from_manifest({"model": {"preset": "llama33textonly_mcqa"}}).key == "text only"
    assert registry.identity_from_manifest({"model": {"preset": "qwen7B", "tag": "x"}}).key == "qwen7B"
    # a served model: its preset is not registered in a new process, its tag and model id are in the manifest
    served = registry.identity_from_manifest({"model": {"preset": "org/M", "tag": "org-M", "model_id": "org/M"}})
    assert served == identity.identity_for_model_id("org/M")
    assert registry.identity_from_manifest({"model": {"model_id": "a/b"}}).key == "a-b"
    assert registry.identity_from_manifest({"model": {"preset": "not-registered"}}).key == "not-registered"
    half = {"model": {"identity": {"key": "k"}, "tag": "random"}}  # incomplete identity: ignored
    assert registry.identity_from_manifest(half).key == "random"
    for bad in ({}, {"model": None}, {"model": {}}, [], None):
        assert registry.identity_from_manifest(bad) is None
