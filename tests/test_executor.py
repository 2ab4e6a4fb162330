"""The one journaled executor (smmile.runner.executor) of inference and judging: plan, skip what is journaled,
run the rest through a backend, append records of the runner's journal format."""

import json

from smmile.models import base
from smmile.models.base import Response
from smmile.runner.executor import RESPONSES_FORMAT, Executor, Journal, Work


class Backend(base.Backend):
    """generate(work, on_done) as every backend has it; answers by `rule(request)`; `stop_after` mimics a
    backend that stops launching requests (circuit breaker, --max-cost)."""

    def __init__(self, rule, stop_after=None):
        self.rule, self.stop_after, self.asked = rule, stop_after, []

    def generate(self, work, on_done):
        for item, request in work[:self.stop_after]:
            self.asked.append(request)
            reply = self.rule(request)
            on_done(item, Response(error=reply[6:]) if reply.startswith("error:") else Response(text=reply))


def planned(*requests):
    return {f"k-{r}": Work(r, {"index": i, "problem_id": f"p{i}", "item": {"asked": r}}, f"k-{r}")
            for i, r in enumerate(requests)}


def test_records_are_the_runner_journal_format(tmp_path):
    journal = Journal(tmp_path / "j.jsonl", version=RESPONSES_FORMAT)
    records = Executor(journal, planned("a", "b")).run(Backend(lambda r: r.upper()))
    lines = [json.loads(x) for x in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert [line["key"] for line in lines] == ["k-a", "k-b"] and records == {line["key"]: line for line in lines}
    assert set(lines[0]) == {"v", "key", "index", "problem_id", "item", "request", "status", "response", "time"}
    assert (lines[0]["v"], lines[0]["status"], lines[0]["response"]["text"]) == (RESPONSES_FORMAT, "ok", "A")
    assert lines[1]["item"] == {"asked": "b"} and lines[1]["problem_id"] == "p1"
    assert Journal(tmp_path / "j.jsonl", version=RESPONSES_FORMAT).records() == records  # the strict reader agrees


def test_only_ok_non_empty_replies_are_reused(tmp_path):
    path = tmp_path / "j.jsonl"
    replies = {"a": "yes", "b": "", "c": "error:boom"}
    first = Backend(lambda r: replies[r])
    Executor(Journal(path, version=RESPONSES_FORMAT), planned("a", "b", "c")).run(first)
    again = Executor(Journal(path, version=RESPONSES_FORMAT), planned("a", "b", "c"))
    assert again.pending == ["k-b", "k-c"] and set(again.records) == {"k-a"}
    second = Backend(lambda r: "fixed")
    records = again.run(second)
    assert second.asked == ["b", "c"] and again.fresh == {"k-b", "k-c"}
    assert {k: r["response"]["text"] for k, r in records.items()} == {"k-a": "yes", "k-b": "fixed", "k-c": "fixed"}
    assert len(path.read_text().splitlines()) == 5  # the failure and the empty reply stay on record


def test_an_empty_answer_can_be_an_answer(tmp_path):
    path = tmp_path / "j.jsonl"
    Executor(Journal(path, version=RESPONSES_FORMAT), planned("a")).run(Backend(lambda r: ""))
    assert Executor(Journal(path, version=RESPONSES_FORMAT), planned("a"), empty_is_answer=True).pending == []


def test_a_backend_that_stops_leaves_the_rest_unanswered(tmp_path):
    executor = Executor(Journal(tmp_path / "j.jsonl", version=RESPONSES_FORMAT), planned("a", "b", "c"))
    records = executor.run(Backend(lambda r: "ok", stop_after=1))
    assert list(records) == ["k-a"] and executor.pending == ["k-b", "k-c"]


def test_the_backend_gets_the_planned_item_back(tmp_path):
    class Item:
        pass

    item, seen = Item(), []

    class Echo(base.Backend):
        def generate(self, work, on_done):
            for it, request in work:
                seen.append(it)
                on_done(it, Response(text=request))

    work = {"k": Work("req", {"index": 0, "problem_id": "p0", "item": {}}, item)}
    assert Executor(None, work).run(Echo())["k"]["response"]["text"] == "req" and seen == [item]


def test_without_a_journal_nothing_is_read_or_written(tmp_path):
    backend = Backend(lambda r: "x")
    Executor(None, planned("a")).run(backend)
    Executor(None, planned("a")).run(backend)
    assert backend.asked == ["a", "a"] and not list(tmp_path.iterdir())
