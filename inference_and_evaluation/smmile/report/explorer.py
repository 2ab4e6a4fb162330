"""The problem explorer's data: every problem of each results folder's dataset with its images, examples,
flags and every model's answers and scores (the report's own ``scoring.scores`` records, so the explorer counts
what the tables count), as one compact JSON payload for the page's script. MCQA letters follow the order of the
problem's distinct answers (spec §2.1-2.2). Every image is stored once, as a JPEG thumbnail (by content hash);
one larger than that is also written beside the page (``images/<hash>.<ext>``) and loaded only when clicked.
Images are streamed (a batch of rows at a time, thumbnails made in worker processes): the encoded images of a
whole dataset (632 MB for SMMILE++) are never in memory together."""

from __future__ import annotations

import base64
import hashlib
import io
import os
from collections import deque
from dataclasses import replace
from functools import partial
from typing import Iterator

from smmile.protocol.extract import EXTRACTION_FAILED
from smmile.protocol.problem import ORIENTATION, Problem
from smmile.report import names
from smmile.record.result_csv import ResultFileError, csv_sha256
from smmile.report.build import model_order
from smmile.report.explorer_prompts import StoredImage, run_prompts
from smmile.scoring import statistics, stratify
from smmile.scoring.metrics import METRICS, judged

THUMB_SIZE = 320  # longest side, pixels
THUMB_QUALITY = 82
FULL_SIZE = 2048  # longest side of the full-resolution image, pixels (larger ones are downscaled)
FULL_QUALITY = 88  # JPEG quality of a downscaled (or re-encoded) full-resolution image
FULL_DIR = "images"  # beside the page
SHOWN_AS_IS = {"JPEG": ".jpg", "PNG": ".png", "WEBP": ".webp", "GIF": ".gif"}  # formats every browser shows
CORRECT_AT = 0.5  # a fractional judge score (several rows of one problem) counts as correct from here
INVALID_OPTION = "INVALID_OPTION:"  # protocol.outputs.mcqa_fields: a letter that names no option
CHUNK = 32  # images per thumbnail job
SHOWN = [name for name, m in METRICS.items() if m.paper]  # the metrics whose per-problem outcome the explorer shows
IN_FLIGHT = 8  # thumbnail jobs submitted and not yet collected, at most (their images are held meanwhile)


class Strings:
    """Each distinct text once; entries refer to it by index."""

    def __init__(self):
        self._index: dict[str, int] = {}

    @property
    def items(self) -> list[str]:
        return list(self._index)

    def add(self, text) -> int:
        text = _text(text)
        return -1 if text is None else self._index.setdefault(text, len(self._index))


def read_dataset(source) -> list:
    """The problems at ``source`` (``data.load.Source``) as ``load_problems`` gives them, each image a
    ``StoredImage``."""
    from smmile.data.load import iter_records
    from smmile.data.schema import group, image_of, row_order

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
    """Each distinct image of the datasets once (by content hash, in dataset order) and its thumbnail."""

    def __init__(self, datasets: list):
        digests = (row.image.digest for problems in datasets for problem in problems for row in problem.rows
                   if row.image is not None)
        self._index = {digest: i for i, digest in enumerate(dict.fromkeys(digests))}
        self._uris: dict[bytes, str] = {}
        self._full: dict[bytes, str] = {}

    def __len__(self) -> int:
        return len(self._index)

    def index(self, ref) -> int:
        return -1 if ref is None else self._index.get(ref.digest, -1)  # -1: not in the dataset (shown as missing)

    def make(self, sources: list, pool, full_dir: str) -> None:
        """The thumbnails, made on ``pool`` while ``sources`` are read again (at most IN_FLIGHT chunks wait at
        once), and the full-resolution images in ``full_dir`` (stale files there removed)."""
        from smmile.data.load import iter_records
        from smmile.data.schema import image_of

        pending: deque = deque()
        chunk: dict[bytes, bytes] = {}
        queued: set = set()
        os.makedirs(full_dir, exist_ok=True)

        def send() -> None:
            pending.append((list(chunk), pool.submit(partial(thumbnails, full_dir=full_dir), list(chunk.items()))))
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
        remove_unnamed(full_dir, set(self._full.values()))

    def _collect(self, digests: list, handle) -> None:
        for digest, (uri, full) in zip(digests, handle.result()):
            self._uris[digest] = uri
            if full:
                self._full[digest] = full

    def full_names(self) -> list[str]:
        """Per image its full-resolution file relative to the page ("" when there is none)."""
        return [f"{FULL_DIR}/{self._full[digest]}" if digest in self._full else "" for digest in self._index]

    def uris(self) -> Iterator[str]:
        """The thumbnails' data URIs ("" for an image that could not be decoded)."""
        return (self._uris.get(digest, "") for digest in self._index)


def _jpeg(data: bytes, side: int, quality: int, **resample) -> tuple[bytes, tuple, str | None]:
    """The image upright (turned by its EXIF orientation as ``ImageRef.load`` turns it for the model), on white, at
    most ``side`` pixels long, as JPEG; and the image's size and format."""
    from PIL import Image, ImageOps

    with Image.open(io.BytesIO(data)) as img:
        size, fmt, orientation = img.size, img.format, img.getexif().get(ORIENTATION)
        img.draft("RGB", (side, side))
        img.thumbnail((side, side), **resample)
        rgba = (ImageOps.exif_transpose(img) if orientation is not None else img).convert("RGBA")
    flat = Image.new("RGB", rgba.size, (255, 255, 255))
    flat.paste(rgba, mask=rgba.getchannel("A"))
    buffer = io.BytesIO()
    flat.save(buffer, format="JPEG", quality=quality, optimize=True)
    return buffer.getvalue(), size, fmt


def thumbnails(chunk: list[tuple[bytes, bytes]], full_dir: str) -> list[tuple[str, str]]:
    """Per ``(digest, encoded image)``: its JPEG thumbnail's data URI and the name of its full-resolution file
    in ``full_dir`` ("" when the image is no larger than its thumbnail)."""
    out = []
    for digest, data in chunk:
        try:
            thumb, size, fmt = _jpeg(data, THUMB_SIZE, THUMB_QUALITY)
            uri = "data:image/jpeg;base64," + base64.b64encode(thumb).decode("ascii")
        except Exception:  # an undecodable image is shown as missing, not a failed report
            out.append(("", ""))
            continue
        full = ""
        if max(size) > THUMB_SIZE:
            try:
                full = full_image(digest, data, size, fmt, full_dir)
            except Exception:  # the thumbnail is still shown
                full = ""
        out.append((uri, full))
    return out


def full_image(digest: bytes, data: bytes, size: tuple, fmt: str | None, full_dir: str) -> str:
    """The image's file name in ``full_dir`` (by content hash, written once): the dataset's bytes when a browser
    shows them at most FULL_SIZE, else a JPEG of at most FULL_SIZE."""
    from PIL import Image

    from smmile.fsguard import atomic_write_bytes

    if fmt in SHOWN_AS_IS and max(size) <= FULL_SIZE:
        name, encoded = digest.hex()[:32] + SHOWN_AS_IS[fmt], data
    else:
        encoded = _jpeg(data, FULL_SIZE, FULL_QUALITY, resample=Image.Resampling.LANCZOS)[0]
        name = digest.hex()[:32] + ".jpg"
    path = os.path.join(full_dir, name)
    if not (os.path.isfile(path) and os.path.getsize(path) == len(encoded)):
        atomic_write_bytes(path, encoded)
    return name


def remove_unnamed(full_dir: str, keep: set) -> None:
    """Remove the files an earlier report wrote into ``full_dir`` that this page does not name."""
    for name in os.listdir(full_dir):
        stem, ext = os.path.splitext(name)
        if name not in keep and len(stem) == 32 and all(c in "0123456789abcdef" for c in stem) \
                and ext in SHOWN_AS_IS.values():
            os.remove(os.path.join(full_dir, name))


# -- problems -----------------------------------------------------------------------------------------
def flag_text(value) -> str | None:
    """A flag's value as a person reads it: yes / no for booleans, None (not shown) when unknown."""
    text = _text(value) or ""
    if text in ("True", "False"):
        return "yes" if text == "True" else "no"
    return None if text.strip() in ("", "None", "nan", "NaN") else text.strip()


# -- answers ---------------------------------------------------------------------------------------------
UNRECORDED_JUDGE = "unrecorded judge"
QUESTION_COLUMNS = ("final_question", "original_question", "question")
GOLD_COLUMNS = ("true_answer", "correct_answer")


def first_rows(frame) -> dict:
    """problem_id -> its first row ({} without a frame: a judge JSON without its CSV)."""
    rows: dict = {}
    for row in [] if frame is None else frame.to_dict("records"):
        rows.setdefault(str(row["problem_id"]), row)
    return rows


def _scores(series) -> dict:
    if series is None:
        return {}
    return {str(k): (None if v != v else round(float(v), 4)) for k, v in series.items()}


def _text(value) -> str | None:
    return None if value is None or (isinstance(value, float) and value != value) else str(value)


def asked(rows: dict) -> dict:
    """problem_id -> (question, gold answer) as the result file gives them (None where it has no column)."""
    def first(row: dict, columns: tuple) -> str | None:
        return _text(next((row[c] for c in columns if c in row), None))

    return {pid: (first(row, QUESTION_COLUMNS), first(row, GOLD_COLUMNS)) for pid, row in rows.items()}


def open_answers(rows: dict | None, scores: dict, replies: dict, strings: Strings, jury: dict | None = None) -> dict:
    """problem_id -> [answer, exact match, judge, judge's reply] and, for a jury, [[vote (0/1/None), reply] per
    member]; ``rows`` None: the judge's problems without answers (a judge JSON without its CSV)."""
    em, llm = _scores(scores.get("EM")), _scores(scores.get("LLM"))
    out = {}
    for pid, row in (dict.fromkeys(llm, {}) if rows is None else rows).items():
        reply, status = replies.get(pid, (None, None))
        judged = strings.add(reply if status in (None, "ok") else f"[{status}] {reply or ''}".strip())
        out[pid] = [strings.add(row.get("generated_answer")), em.get(pid), llm.get(pid), judged]
        if (jury or {}).get(pid) and llm.get(pid) is not None:
            out[pid].append([[m.get("value") if m.get("value") in (0, 1) else None, strings.add(m.get("reply"))]
                             for m in jury[pid]])
    return out


def mcqa_choice(letter, answer) -> tuple[str | None, str | None]:
    """(letter, option text) of an MCQA row in words: the extractor's and the scripts' codes explained."""
    letter, answer = _text(letter), _text(answer)
    if letter == EXTRACTION_FAILED or answer == EXTRACTION_FAILED:
        return "no letter found in the reply", None
    if letter == "ERROR" or (answer or "").startswith("ERROR"):
        return "the request failed", (answer or "").removeprefix("ERROR:").strip() or None
    if answer is not None and answer.startswith(INVALID_OPTION):
        return f"“{letter}”, not one of the options", None
    if letter is not None and letter.strip() == "":
        return "no letter found in the reply", None
    return letter, answer


def mcqa_answers(rows: dict, scores: dict, strings: Strings) -> dict:
    correct = _scores(scores.get("MCQA"))
    out = {}
    for pid, row in rows.items():
        letter = row.get("selected_option", row.get("extracted_answer"))
        letter, option = mcqa_choice(letter, row.get("generated_answer"))
        out[pid] = [strings.add(letter), strings.add(option), correct.get(pid)]
    return out


def prompt_entry(prompt, strings: Strings, images: Images) -> dict:
    """A Prompt (``explorer_prompts``) as the page reads it: ``m`` [[role, [text index | [image index]]]],
    ``t`` the query turn, ``o`` [[letter, option]] as displayed, ``n`` a note."""
    entry = {"t": strings.add(prompt.target)}
    if prompt.messages is not None:
        entry["m"] = [[strings.add(role), [[images.index(part[1])] if isinstance(part, tuple) else strings.add(part)
                                            for part in parts]] for role, parts in prompt.messages]
    if prompt.options:
        entry["o"] = [[strings.add(letter), strings.add(text)] for letter, text in prompt.options]
    if prompt.note:
        entry["n"] = strings.add(prompt.note)
    return entry


def result_entries(rset, set_index: int, results: list, models: dict, strings: Strings, problems: dict,
                   images: Images) -> tuple[dict, dict, dict]:
    """The set's result files appended to ``results`` (the payload's entries, every set's) and, per problem id,
    {result index: answer}, the question and gold answer the files give, and {result index: prompt entry} (runs
    with a journal)."""
    by_source: dict = {}
    for record in rset.records:
        by_source.setdefault(record.source, (record, {}))[1][record.metric] = record.scores
    answers, from_csv, prompts = {}, {}, {}
    for source in sorted(by_source):
        record, scores = by_source[source]
        fmt, rows = record.result.fmt, first_rows(record.frame)
        if fmt == "mcqa":
            found, judges = mcqa_answers(rows, scores, strings), []
        else:
            by_judge = any(judged(metric) for metric in scores)
            found = open_answers(None if record.frame is None else rows, scores, record.result.replies, strings,
                                 record.result.jury if by_judge else None)
            judges = (record.result.judges() or [UNRECORDED_JUDGE]) if by_judge else []
        for pid, pair in asked(rows).items():
            from_csv.setdefault(pid, pair)
        index = len(results)
        models.setdefault(record.model, len(models))
        entry = {"set": set_index, "model": models[record.model], "mode": record.mode, "fmt": fmt,
                 "metrics": sorted(m for m in scores if m in SHOWN), "sha": content_hash(source)}
        if judges:
            entry["judges"] = judges
        results.append(entry)
        for pid, answer in found.items():
            answers.setdefault(pid, {})[index] = answer
        for pid, prompt in run_prompts(record.result, problems).items():
            prompts.setdefault(pid, {})[index] = prompt_entry(prompt, strings, images)
    return answers, from_csv, prompts


def content_hash(path: str) -> str:
    """The sha256 of a result file's bytes ("" when it cannot be read): a review is tied to what it reviewed."""
    try:
        return csv_sha256(path)
    except (OSError, ResultFileError):
        return ""


def review_key(results: list[dict], models: list[str]) -> str:
    """The report's result set as one hash (model, mode, format and content of every result): the page keeps its
    reviews under it, so a report with other results shows none of them."""
    ids = sorted(f"{models[r['model']]}|{r['mode']}|{r['fmt']}|{r['sha']}" for r in results)
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()[:32]


# -- the payload -----------------------------------------------------------------------------------------
def set_problems(set_index: int, by_id: dict, flags: list[str], answers: dict, strings: Strings, images: Images,
                 from_csv: dict, prompts: dict) -> list[dict]:
    """The dataset's problems in dataset order, then ids only the results have (as the result files give them,
    ``csv: 1``, in the order they first name them); answers and prompts attached."""
    entries = []
    for pid in list(by_id) + [pid for pid in answers if pid not in by_id]:
        entry = {"id": pid, "set": set_index, "base": statistics.base_problem_ids([pid])[0]}
        problem = by_id.get(pid)
        if problem is None:
            question, gold = from_csv.get(pid) or (None, None)
            entry.update(q=strings.add(question), gold=strings.add(gold), csv=1)
        else:
            query = problem.query
            values = {flag: flag_text(v) for flag, v in stratify.problem_labels(problem, flags, "ICL").items()}
            entry.update(q=strings.add(query.question), gold=strings.add(query.answer), img=images.index(query.image),
                         fv=[strings.add(values.get(flag)) for flag in flags],
                         ex=[[images.index(r.image), strings.add(r.question), strings.add(r.answer)]
                             for r in problem.examples],
                         opts=[strings.add(a) for a in dict.fromkeys(problem.answers())])
        entry["ans"] = {str(k): v for k, v in sorted(answers.get(pid, {}).items())}
        if pid in prompts:
            entry["pr"] = {str(k): v for k, v in sorted(prompts[pid].items())}
        entries.append(entry)
    return entries


def build(sets: list, datasets: list | None, images: Images, loaded: list | None) -> dict:
    """The explorer payload for ``sets`` (report.build.ReportSet) with their problems (``datasets[i]``, possibly
    empty; None: no dataset at all); ``loaded[i]``: what the page says about set i's dataset. Its ``images``
    entry is ``images`` itself: the page writes the thumbnails into its JSON one at a time."""
    datasets = datasets if datasets is not None else [[] for _ in sets]
    strings, models = Strings(), {}
    flags = list(dict.fromkeys(f for problems in datasets for f in stratify.valid_flags(problems)))
    results, problems = [], []
    for index, (rset, dataset) in enumerate(zip(sets, datasets)):
        by_id = {p.problem_id: p for p in dataset}
        answers, from_csv, prompts = result_entries(rset, index, results, models, strings, by_id, images)
        problems += set_problems(index, by_id, flags, answers, strings, images, from_csv, prompts)
    ordered = model_order([{"model": m} for m in models])
    first_seen = list(models)
    for result in results:
        result["model"] = ordered.index(first_seen[result["model"]])
    loaded = loaded or [None] * len(sets)
    return {"version": 2, "correct_at": CORRECT_AT, "review_key": review_key(results, ordered),
            "sets": [{"slug": s.slug, "label": s.label, "dataset": bool(d), "source": loaded[i]}
                     for i, (s, d) in enumerate(zip(sets, datasets))],
            "models": [{"key": k, "name": names.display(k)} for k in ordered],
            "metrics": {m: names.metric(m) for m in SHOWN},
            "flags": [{"name": f, "label": names.flag(f)} for f in flags],
            "results": results, "problems": problems, "strings": strings.items,
            "images": images}


def unmatched(payload: dict) -> list[str]:
    """A warning per results folder whose answers name problems its dataset does not have (a wrong
    --dataset shows every problem twice: once with images, once with the answers)."""
    warnings = []
    for index, s in enumerate(payload["sets"]):
        if not s["dataset"]:
            continue
        missing = [p["id"] for p in payload["problems"] if p["set"] == index and p.get("csv")]
        if missing:
            warnings.append(f"{len(missing)} problem(s) of {s['label']} are not in its dataset (first: {missing[0]}); "
                            "the explorer shows them without images or examples (wrong --dataset?)")
    return warnings
