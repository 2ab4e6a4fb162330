"""docs/architecture.md §3 "Extending it", done from outside the library: a provider (its class and its short name),
a model family (its class and its preset), an analysis (its module and its entry) each work end to end with only
the registrations the doc names, and no other file of the library changed. (The metric's worked example, NOANS, is
tests/test_run_record.py.)"""

from __future__ import annotations

import csv
import json

import pytest

from smmile.analysis import analyze_run
from smmile.cli import main as smmile
from smmile.cli.baselines import main as baselines
from smmile.errors import UserError
from smmile.models import registry
from smmile.models.api.backend import ApiBackend
from smmile.models.api.chat_family import ApiChatFamily
from smmile.models.preset import Lazy, Preset

SENT: list[dict] = []  # what the provider was asked, as rendered for its wire


class EchoBackend(ApiBackend):
    """A provider: no SDK, no key; each request rendered to a plain dict, and answered "1"."""

    name = provider = "echo"

    def make_client(self):
        return SENT

    def render(self, req, images) -> dict:
        return {"model": self.model, "messages": req.messages, "images": len(images), **req.sampling("max_tokens")}

    async def send(self, client, wire: dict) -> tuple[str, dict]:
        client.append(wire)
        return "1", {"input_tokens": 3, "output_tokens": 1}


class TerseFamily(ApiChatFamily):
    """A family: the chat layout with a system prompt of its own and a shorter output cap."""

    name = "terse"

    def __init__(self, protocol: str = "paper"):
        super().__init__(answer_role="assistant", protocol=protocol)
        self.style = type(self.style)(**{**vars(self.style), "system": "Answer in one word."})

    def request(self, item):
        req = super().request(item)
        req.max_tokens = 8
        return req


@pytest.fixture
def echo(monkeypatch):
    SENT.clear()
    monkeypatch.setitem(registry.BACKENDS, "echo", Lazy(__name__, "EchoBackend"))
    yield SENT


def rows(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_a_provider_is_its_class_and_its_short_name(tmp_path, echo, capsys):
    out = tmp_path / "results"
    assert smmile(["run", "--model", "gpt-4o", "--backend", "echo", "--dataset", "demo", "--inference_mode", "0-shot",
                   "--task_format", "open", "--output-dir", str(out)]) == 0, capsys.readouterr().err
    found = rows(out / "result_gpt-4o_0-shot_open.csv")
    assert len(found) == len(echo) > 0 and {r["generated_answer"] for r in found} == {"1"}
    assert echo[0]["model"] == "gpt-4o" and echo[0]["images"] == 1
    manifest = json.loads((out / "result_gpt-4o_0-shot_open.manifest.json").read_text())
    assert manifest["model"]["backend"] == f"{__name__}:EchoBackend"
    echo.clear()
    assert smmile(["judge", str(out), "--judge-backend", "echo", "--judge-model", "any"]) == 0, capsys.readouterr().err
    assert 0 < len(echo) <= len(found)  # one request per distinct (question, gold, answer)
    assert "correct answer" in json.dumps(echo[0]["messages"]) and echo[0]["model"] == "any"  # the judge's prompt
    assert smmile(["stats", str(out), "--out", str(tmp_path / "stats"), "--n-boot", "20"]) == 0
    table = (tmp_path / "stats" / "stats_estimates.csv").read_text()
    assert ",LLM," in table and ",EM," in table


def test_a_family_is_its_class_and_its_preset(tmp_path, echo, monkeypatch, capsys):
    monkeypatch.setitem(registry.PRESETS, "terse", Preset("terse", "terse", Lazy(__name__, "TerseFamily"),
                                                          registry.BACKENDS["echo"], "terse-1"))
    out = tmp_path / "results"
    assert smmile(["run", "--model", "terse", "--dataset", "demo", "--inference_mode", "ICL", "--task_format", "open",
                   "--output-dir", str(out)]) == 0, capsys.readouterr().err
    assert {r["generated_answer"] for r in rows(out / "result_terse_ICL_open.csv")} == {"1"}
    assert {json.dumps(w["messages"][0]) for w in echo} == {json.dumps({"role": "system",
                                                                        "content": "Answer in one word."})}
    assert {w["max_tokens"] for w in echo} == {8}


def test_an_analysis_is_its_module_and_its_entry(tmp_path, monkeypatch, capsys):
    class Mine:
        """An analysis module: its names and `analyse`; this one only says what it was given."""

        ANALYSES = ("mine",)

        @staticmethod
        def analyse(kind, sets, settings, notes):
            raise UserError(f"{kind} was given {sorted(sets)} with {settings['n_boot']} resamples")

    monkeypatch.setattr(analyze_run, "MODULES", (*analyze_run.MODULES, Mine))
    monkeypatch.setattr(analyze_run, "ANALYSES", (*analyze_run.ANALYSES, "mine"))
    out = tmp_path / "results"
    assert baselines(["--baseline", "majority", "--dataset", "demo", "--output-dir", str(out)]) == 0
    capsys.readouterr()
    assert smmile(["analyze", "mine", f"base={out}", "--out", str(tmp_path / "a"), "--n-boot", "30"]) == 2
    assert capsys.readouterr().err.strip().endswith("mine was given ['base'] with 30 resamples")
