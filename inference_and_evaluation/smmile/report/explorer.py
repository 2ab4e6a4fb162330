"""The problem explorer's data: every problem of each results folder's dataset with its images, examples,
flags and every model's answers and scores, as one compact JSON payload for the page's script.

* Problems come from the dataset (``smmile.data.load.load_problems``: hub id, local path or demo); ids a
  result file has but the dataset lacks are shown from the CSV alone (question and gold answer).
  SMMILE++ permutations keep their ``base`` id, and the page groups them.
* Answers: open format ``generated_answer`` with its exact-match and judge scores and the judge's raw
  reply (``<stem>_judgements.jsonl``); MCQA the letter with its option text (the CSV's, else the
  problem's answer that carries that letter: letters follow the order of the problem's distinct
  answers, spec §2.1-2.2) and whether it was correct. Answers and scores come from the
  report's own ``smmile.scoring.stats`` records (each CSV read once), so the explorer counts what the
  tables count.
* Every text is stored once (``strings``), every image once as a JPEG thumbnail (``images``, by content
  hash, so SMMILE++ shares the images of its permutations).
* The images are streamed: ``read_dataset`` reads a dataset a batch of rows at a time and keeps only each
  image's content hash; ``Images.make`` reads it again the same way and has the thumbnails made in worker
  processes, a few chunks at a time; the page receives them one by one (``Images.uris``). The encoded
  images of a whole dataset (632 MB for SMMILE++ with its real images) are never in memory together.
"""

from __future__ import annotations

import base64
import io
import json
import os
from collections import deque
from dataclasses import dataclass, replace
from typing import Iterator

from smmile.protocol.problem import Problem
from smmile.report import names
from smmile.report.build import model_order
from smmile.scoring import bootstrap, stratify
from smmile.scoring.naming import judgements_path

THUMB_SIZE = 320  # longest side, pixels
THUMB_QUALITY = 82
CORRECT_AT = 0.5  # a fractional judge score (several rows of one problem) counts as correct from here
CHUNK = 32  # images per thumbnail job
IN_FLIGHT = 8  # thumbnail jobs submitted and not yet collected, at most (their images are held meanwhile)


class Strings:
    """Each distinct text once; entries refer to it by index."""

    def __init__(self):
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, text) -> int:
        if text is None or (isinstance(text, float) and text != text):
            return -1
        text = str(text)
        if text not in self._index:
            self._index[text] = len(self.items)
            self.items.append(text)
        return self._index[text]


@dataclass(frozen=True)
class StoredImage:
    """An image of a dataset as the explorer keeps it: its content hash (the bytes stay in the dataset)."""

    digest: bytes


def read_dataset(source) -> list:
    """The problems of the dataset at ``source`` (``smmile.data.load.Source``), as ``load_problems`` gives
    them but each image a ``StoredImage``; read a batch of rows at a time."""
    from smmile.data.load import group, image_of, iter_records, row_order

    records, stored = [], {}
    for batch in iter_records(source):
        for record in batch:
            ref = image_of(record)
            if ref is not None:
                pid = str(record["problem_id"])
                stored[(pid, row_order(record["order"], pid))] = StoredImage(ref.digest)  # as group() orders
            records.append({**record, "image": None})
    return [Problem(p.problem_id, tuple(replace(r, image=stored.get((p.problem_id, r.order))) for r in p.rows))
            for p in group(records)]


class Images:
    """Each distinct image of the datasets once (by content hash, in dataset order: problems, then rows)
    and its thumbnail (``make``)."""

    def __init__(self, datasets: list):
        digests = (row.image.digest for problems in datasets for problem in problems for row in problem.rows
                   if row.image is not None)
        self._index = {digest: i for i, digest in enumerate(dict.fromkeys(digests))}
        self._uris: dict[bytes, str] = {}

    def __len__(self) -> int:
        return len(self._index)

    def index(self, ref) -> int:
        return -1 if ref is None else self._index[ref.digest]

    def make(self, sources: list, pool) -> None:
        """The thumbnails, made on ``pool`` while the datasets at ``sources`` are read again a batch of rows
        at a time (file order); at most IN_FLIGHT chunks of images wait for their thumbnails at once."""
        from smmile.data.load import image_of, iter_records

        pending: deque = deque()
        chunk: dict[bytes, bytes] = {}
        queued: set = set()

        def send() -> None:
            pending.append((list(chunk), pool.submit(thumbnails, list(chunk.values()))))
            chunk.clear()
            while len(pending) > IN_FLIGHT:
                self._collect(*pending.popleft())

        for source in dict.fromkeys(sources):
            for batch in iter_records(source):
                for record in batch:
                    ref = image_of(record)
                    if ref is None or ref.digest not in self._index or ref.digest in queued:
                        continue
                    queued.add(ref.digest)
                    chunk[ref.digest] = ref.data
                    if len(chunk) == CHUNK:
                        send()
        if chunk:
            send()
        while pending:
            self._collect(*pending.popleft())

    def _collect(self, digests: list, handle) -> None:
        self._uris.update(zip(digests, handle.result()))

    def uris(self) -> Iterator[str]:
        """The thumbnails' data URIs in index order ("" for an image that could not be read or decoded)."""
        return (self._uris.get(digest, "") for digest in self._index)


def thumbnails(chunk: list[bytes]) -> list[str]:
    """JPEG data URIs, longest side at most THUMB_SIZE (never enlarged); transparency on white."""
    from PIL import Image

    out = []
    for data in chunk:
        try:
            with Image.open(io.BytesIO(data)) as img:
                img.draft("RGB", (THUMB_SIZE, THUMB_SIZE))
                img.thumbnail((THUMB_SIZE, THUMB_SIZE))
                rgba = img.convert("RGBA")
            flat = Image.new("RGB", rgba.size, (255, 255, 255))
            flat.paste(rgba, mask=rgba.getchannel("A"))
            buffer = io.BytesIO()
            flat.save(buffer, format="JPEG", quality=THUMB_QUALITY, optimize=True)
            out.append("data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"))
        except Exception:  # an undecodable image is shown as missing, not a failed report
            out.append("")
    return out


# -- problems -----------------------------------------------------------------------------------------
def flag_values(problem, flags: list[str]) -> dict:
    return {flag: str(value) for flag, value in stratify.problem_labels(problem, flags, "ICL").items()}


def problem_entry(pid: str, set_index: int, problem, flags: list[str], strings: Strings, images: Images) -> dict:
    base = bootstrap.base_problem_ids([pid])[0]
    entry = {"id": pid, "set": set_index, "base": base}
    if problem is None:
        return entry
    query = problem.query
    values = flag_values(problem, flags)
    entry.update(q=strings.add(query.question), gold=strings.add(query.answer), img=images.index(query.image),
                 fv=[strings.add(values.get(flag)) for flag in flags],
                 ex=[[images.index(r.image), strings.add(r.question), strings.add(r.answer)] for r in problem.examples],
                 opts=[strings.add(a) for a in dict.fromkeys(problem.answers())])
    return entry


# -- answers ---------------------------------------------------------------------------------------------
def judge_replies(csv_path: str) -> dict:
    """problem_id -> (reply, status) from the judge's replies file (first row of a problem)."""
    path = judgements_path(csv_path)
    found: dict = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line) if line.strip() else None
                if isinstance(record, dict):
                    found.setdefault(str(record.get("problem_id")), (record.get("reply"), record.get("status")))
    except (OSError, ValueError):
        pass
    return found


def _first_rows(frame, columns: list[str]) -> dict:
    """problem_id -> {column: value} of its first row (plain Python values; missing columns -> None)."""
    ids = [str(i) for i in frame["problem_id"]]
    values = [frame[c].tolist() if c in frame.columns else [None] * len(ids) for c in columns]
    rows: dict = {}
    for i, pid in enumerate(ids):
        if pid not in rows:
            rows[pid] = dict(zip(columns, (v[i] for v in values)))
    return rows


def _scores(series) -> dict:
    """problem_id -> score rounded to 4 digits (NaN -> None)."""
    if series is None:
        return {}
    return {str(k): (None if v != v else round(float(v), 4)) for k, v in series.items()}


def open_answers(frame, scores: dict, replies: dict, strings: Strings) -> dict:
    em, llm = _scores(scores.get("EM")), _scores(scores.get("LLM"))
    out = {}
    for pid, row in _first_rows(frame, ["generated_answer"]).items():
        reply, status = replies.get(pid, (None, None))
        judged = strings.add(reply if status in (None, "ok") else f"[{status}] {reply or ''}".strip())
        out[pid] = [strings.add(row["generated_answer"]), em.get(pid), llm.get(pid), judged]
    return out


def mcqa_answers(frame, scores: dict, strings: Strings) -> dict:
    letter_column = next((c for c in ("selected_option", "extracted_answer") if c in frame.columns), "selected_option")
    correct = _scores(scores.get("MCQA"))
    out = {}
    for pid, row in _first_rows(frame, [letter_column, "generated_answer"]).items():
        out[pid] = [strings.add(row[letter_column]), strings.add(row["generated_answer"]), correct.get(pid)]
    return out


def result_entries(rset, set_index: int, models: dict, strings: Strings) -> tuple[list[dict], dict]:
    """The set's result files (``results`` entries) and, per problem id, {result index: answer}."""
    by_source: dict = {}
    for record in rset.records:
        by_source.setdefault(record.source, (record, {}))[1][record.metric] = record.scores
    results, answers = [], {}
    for source in sorted(by_source):
        record, scores = by_source[source]
        fmt = record.result.fmt if record.result is not None else ("mcqa" if "MCQA" in scores else "open")
        found = (mcqa_answers(record.frame, scores, strings) if fmt == "mcqa" else
                 open_answers(record.frame, scores, judge_replies(source), strings))
        index = len(results)
        models.setdefault(record.model, len(models))
        results.append({"set": set_index, "model": models[record.model], "mode": record.mode, "fmt": fmt,
                        "file": os.path.basename(source), "metrics": sorted(scores)})
        for pid, answer in found.items():
            answers.setdefault(pid, {})[index] = answer
    return results, answers


# -- the payload -----------------------------------------------------------------------------------------
def set_problems(rset, set_index: int, problems: list, flags: list[str], answers: dict, strings: Strings,
                 images: Images) -> list[dict]:
    """The dataset's problems in dataset order, then ids only the results have; answers attached."""
    by_id = {p.problem_id: p for p in problems}
    ids = list(by_id) + [pid for pid in answers if pid not in by_id]
    entries = []
    for pid in ids:
        entry = problem_entry(pid, set_index, by_id.get(pid), flags, strings, images)
        entry["ans"] = {str(k): v for k, v in sorted(answers.get(pid, {}).items())}
        entries.append(entry)
    return entries


def build(sets: list, datasets: list, images: Images) -> dict:
    """The explorer payload for ``sets`` (report.build.ReportSet) with their loaded problems
    (``datasets[i]``: a list of Problem, possibly empty) and their ``Images``. Its ``images`` entry is
    ``images`` itself: the page writes the thumbnails (``Images.uris``) into its JSON one at a time
    (``explorer_page.section``)."""
    strings, models = Strings(), {}
    flags = list(dict.fromkeys(f for problems in datasets for f in stratify.valid_flags(problems)))
    results, problems = [], []
    for index, (rset, dataset) in enumerate(zip(sets, datasets)):
        found, answers = result_entries(rset, index, models, strings)
        offset = len(results)
        results += found
        answers = {pid: {k + offset: v for k, v in a.items()} for pid, a in answers.items()}
        problems += set_problems(rset, index, dataset, flags, answers, strings, images)
    ordered = names_order(models)
    first_seen = list(models)
    for result in results:
        result["model"] = ordered.index(first_seen[result["model"]])
    return {"version": 1, "correct_at": CORRECT_AT,
            "sets": [{"slug": s.slug, "label": s.label} for s in sets],
            "models": [{"key": k, "name": names.display(k)} for k in ordered],
            "metrics": {m: names.metric(m) for m in names.METRICS},
            "flags": [{"name": f, "label": names.flag(f)} for f in flags],
            "results": results, "problems": problems, "strings": strings.items,
            "images": images}


def names_order(models: dict) -> list[str]:
    """Model keys in the paper's row order."""
    return model_order([{"model": m} for m in models])


def unmatched(payload: dict) -> list[str]:
    """A warning per results folder whose answers name problems its dataset does not have (a wrong
    --dataset shows every problem twice: once with images, once with the answers)."""
    warnings = []
    for index, s in enumerate(payload["sets"]):
        missing = [p["id"] for p in payload["problems"] if p["set"] == index and "q" not in p]
        if missing:
            warnings.append(f"{len(missing)} problem(s) of {s['label']} are not in its dataset (first: {missing[0]}); "
                            "the explorer shows them without images or examples (wrong --dataset?)")
    return warnings
