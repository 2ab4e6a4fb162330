"""What the API front doors send (spec §3.9, §3.10, §3.12, §3.13), checked on the wire of a local fake server."""

from __future__ import annotations

import base64
import csv
import io
import json

import pytest
from PIL import Image

from api_server import Action, FakeApi
from smmile.cli import api_models
from smmile.data.load import load_problems
from smmile.protocol import templates as T

pytestmark = pytest.mark.server
SENTINEL = "sk-SENTINEL-7f3a9c2e-do-not-leak"


@pytest.fixture
def keys(monkeypatch):
    for var in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_VERSION", "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "OLLAMA_HOST", "OLLAMA_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", SENTINEL)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SENTINEL)
    return monkeypatch


@pytest.fixture(scope="module")
def problems(demo_dir):
    return load_problems(str(demo_dir / "smmile"))


def rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def decode(b64: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(b64)))


def by_query(requests, problems, text_of):
    """Map each request to its problem through the query turn's image (unique per problem)."""
    sizes = {p.query.image.size: p for p in problems}
    return [(sizes[decode(text_of(r)).size], r) for r in requests]


def test_gpt4o_azure_paper_protocol(keys, tmp_path, problems):
    with FakeApi() as api:
        keys.setenv("AZURE_OPENAI_ENDPOINT", api.url)
        assert api_models.openai_main(["--model", "gpt-4o", "--dataset", "demo", "--output-dir", str(tmp_path)]) == 0
        reqs = api.requests("azure")
    assert len(reqs) == len(problems)
    for r in reqs:
        assert r["path"] == "/openai/deployments/gpt-4o/chat/completions"
        assert r["query"]["api-version"] == ["2024-05-01-preview"]
        assert r["headers"]["api-key"] == SENTINEL
        body = r["body"]
        assert (body["model"], body["temperature"], body["max_tokens"], body["logprobs"]) == ("gpt-4o", 0.0, 512, True)
        msgs = body["messages"]
        assert msgs[0] == {"role": "system", "content": T.API_SYSTEM}
        n_icl = (len(msgs) - 2) // 2
        assert [m["role"] for m in msgs[1:]] == ["user", "system"] * n_icl + ["user"]
        for m in msgs[1:]:
            if m["role"] == "user":
                text, image = m["content"]
                assert text["type"] == "text" and image["type"] == "image_url"
                assert image["image_url"]["detail"] == "high"
                assert image["image_url"]["url"].startswith("data:image/png;base64,")
                assert decode(image["image_url"]["url"].split(",", 1)[1]).mode in ("RGB", "RGBA")
            else:  # the ICL answer, as a system turn of text parts (spec §3.13, KEEP)
                assert m["content"][0]["type"] == "text" and len(m["content"]) == 1
    pairs = by_query(reqs, problems, lambda r: r["body"]["messages"][-1]["content"][1]["image_url"]["url"].split(",")[1])
    for problem, r in pairs:
        msgs = r["body"]["messages"]
        assert msgs[-1]["content"][0]["text"] == problem.query.question
        assert [m["content"][0]["text"] for m in msgs[2:-1:2]] == [e.answer for e in problem.examples]
        sent = [decode(m["content"][1]["image_url"]["url"].split(",")[1]) for m in msgs[1::2]]
        assert [im.size for im in sent] == [row.image.size for row in problem.rows]  # never resized


def test_gpt4o_corrected_sends_assistant_turns(keys, tmp_path):
    with FakeApi() as api:
        keys.setenv("AZURE_OPENAI_ENDPOINT", api.url)
        api_models.openai_main(["--model", "gpt-4o", "--dataset", "demo", "--output-dir", str(tmp_path),
                             "--protocol", "corrected"])
        roles = {m["role"] for r in api.requests() for m in r["body"]["messages"][1:]}
    assert roles == {"user", "assistant"}


def test_plain_openai_when_only_openai_key(keys, tmp_path):
    keys.delenv("AZURE_OPENAI_API_KEY")
    keys.setenv("OPENAI_API_KEY", SENTINEL)
    with FakeApi() as api:
        rc = api_models.openai_main(["--model", "gpt-4o", "--dataset", "demo", "--output-dir", str(tmp_path),
                                  "--inference_mode", "0-shot", "--base-url", api.url + "/v1",
                                  "--allow-key-for-host", "127.0.0.1"])
        reqs = api.requests()
    assert rc == 0 and {r["protocol"] for r in reqs} == {"openai"}
    assert reqs[0]["headers"]["authorization"] == f"Bearer {SENTINEL}"
    assert [m["role"] for m in reqs[0]["body"]["messages"]] == ["system", "user"]


def test_claude_messages(keys, tmp_path, problems):
    with FakeApi() as api:
        rc = api_models.anthropic_main(["--dataset", "demo", "--output-dir", str(tmp_path), "--base-url", api.url,
                                        "--allow-key-for-host", "127.0.0.1"])
        reqs = api.requests("anthropic")
    assert rc == 0 and len(reqs) == len(problems)
    for r in reqs:
        body = r["body"]
        assert body["model"] == "claude-3-7-sonnet-20250219"
        assert (body["max_tokens"], body["temperature"], body["system"]) == (512, 0.0, T.API_SYSTEM)
        msgs = body["messages"]
        assert [m["role"] for m in msgs] == ["user", "assistant"] * ((len(msgs) - 1) // 2) + ["user"]
        for m in msgs:
            if m["role"] == "assistant":
                assert isinstance(m["content"], str)  # plain-string answers
            else:
                text, image = m["content"]
                assert text["type"] == "text" and image["type"] == "image"
                assert image["source"]["type"] == "base64" and image["source"]["media_type"] == "image/png"
                assert decode(image["source"]["data"]).format == "PNG"
    assert (tmp_path / "result_claude-3-7-sonnet_ICL_open.csv").exists()


def test_api_mcqa_rows_use_e2_and_literal_extraction_failed(keys, tmp_path):
    replies = iter(["<answer>B</answer>", "I cannot tell from this.", "???"] * 100)
    with FakeApi(reply=lambda rec: next(replies)) as api:
        keys.setenv("AZURE_OPENAI_ENDPOINT", api.url)
        api_models.openai_main(["--model", "gpt-4o", "--dataset", "demo", "--output-dir", str(tmp_path),
                             "--task_format", "mcqa", "--concurrency", "1"])
        prompts = [r["body"]["messages"][-1]["content"][0]["text"] for r in api.requests()]
    assert all("Please select the best answer from the following options:" in p for p in prompts)
    out = rows(tmp_path / "result_gpt-4o_ICL_mcqa.csv")
    assert list(out[0]) == ["problem_id", "final_question", "true_answer", "correct_option", "selected_option",
                            "is_correct", "generated_answer", "full_response"]
    first, second, third = out[0], out[1], out[2]
    assert first["selected_option"] == "B" and first["full_response"] == "<answer>B</answer>"
    assert second["selected_option"] == "I"  # E2's standalone-capital fallback (KEEP)
    assert third["selected_option"] == "EXTRACTION_FAILED" and third["generated_answer"] == "EXTRACTION_FAILED"
    assert third["is_correct"] == "False"


def test_error_rows_are_never_answers(keys, tmp_path):
    with FakeApi(script=lambda rec: Action("status", 400, message="content filter")) as api:
        keys.setenv("AZURE_OPENAI_ENDPOINT", api.url)
        rc = api_models.openai_main(["--model", "gpt-4o", "--dataset", "demo", "--output-dir", str(tmp_path),
                                  "--task_format", "mcqa", "--max-retries", "0"])
        n = len(api.requests())
    assert rc == 1 and n == 24  # a 400 is not retried
    for row in rows(tmp_path / "result_gpt-4o_ICL_mcqa.csv"):
        assert row["generated_answer"].startswith("ERROR: API Request Failed - ")
        assert "content filter" in row["generated_answer"]
        assert row["selected_option"] == "ERROR" and row["is_correct"] == "False"


def test_textonly_open_script_prompts(keys, tmp_path, problems):
    with FakeApi(reply=lambda rec: "Black.") as api:
        rc = api_models.textonly_main(["--dataset", "demo", "--output-dir", str(tmp_path), "--base-url", api.url])
        bodies = [r["body"] for r in api.requests("ollama")]
    assert rc == 0
    assert (tmp_path / "result_llama33textonly_ICL.csv").exists()  # no _open suffix (spec §3.9)
    expected = set()
    for p in problems:
        shots = "".join(f"{e.question} {e.answer}\n" for e in p.examples)
        expected.add("You are an expert medical question-answering system. Here are some examples of questions and "
                     f'associated answers: \n{shots}Your task is to provide an answer to the following question: '
                     f'"{p.query.question}".')
    for body in bodies:
        assert body["model"] == "llama3.3" and "options" not in body  # server defaults
        assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"
        assert "images" not in body["messages"][0]
    assert {b["messages"][0]["content"] for b in bodies} == expected
    assert {r["generated_answer"] for r in rows(tmp_path / "result_llama33textonly_ICL.csv")} == {"Black."}


def test_textonly_mcqa_followup_turn(keys, tmp_path, problems):
    def reply(rec):
        return "<answer>A</answer>" if len(rec["body"]["messages"]) == 3 else "1 2 3"  # no letter in turn 1

    with FakeApi(reply=reply) as api:
        rc = api_models.textonly_mcqa_main(["--dataset", "demo", "--output-dir", str(tmp_path), "--base-url", api.url])
        reqs = api.requests("ollama")
    assert rc == 0
    followups = [r["body"]["messages"] for r in reqs if len(r["body"]["messages"]) == 3]
    assert len(followups) == len(problems) - 1  # never for the last problem (spec §9.29)
    for msgs in followups:
        assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
        assert msgs[1]["content"] == "1 2 3" and msgs[2]["content"] == T.TEXTONLY_FOLLOW_UP
        assert msgs[0]["content"].startswith("You are an expert medical question-answering system. Here are some "
                                             "examples of questions and associated answers: \n\nQuestion: ")
    out = rows(tmp_path / "result_llama33textonly_ICL_mcqa.csv")
    assert out[0]["full_response"] == f"1 2 3\n\nUser: {T.TEXTONLY_FOLLOW_UP}\n\nAssistant: <answer>A</answer>"
    assert out[0]["selected_option"] == "A"
    assert out[-1]["full_response"] == "1 2 3" and out[-1]["selected_option"] == "EXTRACTION_FAILED"
    assert out[-1]["generated_answer"] == "INVALID_OPTION:EXTRACTION_FAILED"
    assert (tmp_path / "accuracy_summary_llama33textonly_ICL_mcqa.txt").read_text().startswith("Model: llama33textonly\n")
    manifest = json.loads((tmp_path / "result_llama33textonly_ICL_mcqa.manifest.json").read_text())
    assert manifest["usage"]["requests"] == 2 * len(problems) - 1


def test_served_model_through_smmile_run(keys, tmp_path):
    from smmile.cli.run import main

    with FakeApi() as api:
        rc = main(["--backend", "openai-compatible", "--base-url", api.url + "/v1", "--model", "acme/vlm:7b",
                   "--dataset", "demo", "--output-dir", str(tmp_path), "--inference_mode", "0-shot"])
        reqs = api.requests("openai")
    assert rc == 0 and reqs
    assert {r["body"]["model"] for r in reqs} == {"acme/vlm:7b"}
    assert reqs[0]["headers"]["authorization"] == "Bearer EMPTY"
    assert [m["role"] for m in reqs[0]["body"]["messages"]] == ["system", "user"]
    assert (tmp_path / "result_acme-vlm-7b_0-shot_open.csv").exists()


def test_textonly_preset_through_openai_compatible(keys, tmp_path):
    from smmile.cli.run import main

    with FakeApi(reply=lambda rec: "White.") as api:
        rc = main(["--backend", "openai-compatible", "--base-url", api.url + "/v1", "--model", "llama33textonly",
                   "--api-model", "gemma", "--dataset", "demo", "--output-dir", str(tmp_path), "--max-tokens", "8"])
        reqs = api.requests("openai")
    assert rc == 0
    body = reqs[0]["body"]
    assert body["model"] == "gemma" and body["max_tokens"] == 8
    assert [m["role"] for m in body["messages"]] == ["user"] and isinstance(body["messages"][0]["content"], str)
