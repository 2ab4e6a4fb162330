"""The work of ``evaluate_LLMJudge.py`` / ``smmile judge`` (spec §5), sent through the API backends (the judge's
flags mapped onto them) and the runner's executor, one journal per judge keyed by the content judged. Additions:
``<stem>_judgements.jsonl`` (every raw reply) and ``<stem>_evaluationllm.manifest.json`` (the judge, its journals,
the CSV's sha256; another judge's results are not replaced without ``--overwrite``).
"""

from __future__ import annotations

import json
import logging
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from smmile.environment import command_line, git_revision
from smmile.errors import UserError
from smmile.fsguard import OutputLock, atomic_write_json, atomic_write_text, check_writable_dir
from smmile.generation import GenerationSettings
from smmile.record import original, verdicts as recorded_verdicts
from smmile.record.naming import (evaluationllm_json_path, judge_patterns, judge_record_path, judgements_path,
                                  question_column)
from smmile.record.result_csv import ResultFileError, content_sha256, exclude_problems, read_whole_hashed
from smmile.record.run_record import RunRecord
from smmile.runner.executor import RESPONSES_FORMAT, Executor, Journal, Work
from smmile.scoring import comparison
from smmile.scoring.exact_match import json_text, problem_accuracies, summarize
from smmile.scoring.judge import (FAILED, MAJORITY, NO_MAJORITY, NO_VERDICT, TIE, UNPARSEABLE, JudgeSettings,
                                  PlannedFrame, check_panel, judge_identity, judgements, jury_identity, label,
                                  plan_frame, tally, jury_judgements)
from smmile.scoring.scores import (Outcome, check_results_dir, find_result_files, problem_count,
                                    refuse_if_none_known, screened)

log = logging.getLogger(__name__)

TITLE, LABEL = "LLM AS A JUDGE", "LLM as a Judge"


@dataclass
class FileJob:
    csv_path: Path
    model: str
    mode: str
    original_count: int
    excluded: int
    frame: object
    planned: PlannedFrame
    sha256: str  # of the CSV bytes these rows were read from


def plan_files(found: list[RunRecord], settings: JudgeSettings, outcome: Outcome) -> list[FileJob]:
    jobs = []
    for result, (raw, csv_sha256) in screened(found, lambda r: read_whole_hashed(r.path),
                                              lambda data: problem_count(data[0]), outcome):
        try:
            question_column(raw.columns)
        except KeyError as exc:
            outcome.fail(f"{result.path}: {exc.args[0]}")
            continue
        frame, excluded = exclude_problems(raw)
        jobs.append(FileJob(result.path, result.identity.scoring_name, result.mode, len(raw), excluded, frame,
                            plan_frame(frame, settings), csv_sha256))
    return jobs


def planned_for(job: FileJob, settings: JudgeSettings) -> PlannedFrame:
    """The file's requests keyed for ``settings`` (a jury's judges share the content and prompts, not the keys)."""
    p = job.planned
    return replace(p, keys=[settings.key(j, prompt) for j, prompt in zip(p.judged, p.prompts)])


@dataclass
class Member:
    """One judge of the run (a jury has several)."""

    settings: JudgeSettings
    backend: object
    identity: dict
    label: str  # backend:model
    executor: object = None
    seen: set = field(default_factory=set)  # keys already met in this run (cached rows)


def other_judge(job: FileJob, identity: dict) -> str | None:
    """Why the file's existing ``_evaluationllm.json`` is another judge's (None: none there, or this judge's)."""
    path = evaluationllm_json_path(job.csv_path)
    if not path.exists():
        return None
    recorded = (original.judge_record(job.csv_path) or {}).get("judge")
    if recorded is None:
        return f"{path.name} was written by an unrecorded judge (e.g. the published outputs)"
    if recorded == identity:
        return None
    diff = ", ".join(f"{k} {recorded.get(k)!r} vs {identity.get(k)!r}" for k in dict.fromkeys([*identity, *recorded])
                     if recorded.get(k) != identity.get(k))
    return f"{path.name} was written by another judge ({diff})"


def lost_problems(job: FileJob) -> str | None:
    """A warning when the existing ``_evaluationllm.json`` holds problems this file no longer has."""
    path = evaluationllm_json_path(job.csv_path)
    try:
        before = set((original.exported(job.csv_path, "llm") or {}).get("problem_accuracies", ()))
    except ResultFileError:
        return None
    lost = before - {str(pid) for pid in job.frame["problem_id"]}
    if not lost:
        return None
    return (f"warning: {path} kept: it holds {len(lost)} problem(s) {job.csv_path.name} no longer has (e.g. "
            f"{', '.join(sorted(lost)[:3])}); not judged. Pass --overwrite to replace it")


def check_existing(jobs: list[FileJob], identity: dict, overwrite: bool, outcome: Outcome) -> list[FileJob]:
    """Before any request: another judge's results refused (nothing sent); files with fuller results set aside."""
    if overwrite:
        return jobs
    conflicts = [c for c in (other_judge(job, identity) for job in jobs) if c]
    if conflicts:
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise UserError(f"{conflicts[0]}{more}; nothing was sent. Pass --overwrite to replace, or judge a copy "
                        "of the folder")
    kept = []
    for job in jobs:
        warning = lost_problems(job)
        if warning:
            outcome.warn(warning)
        else:
            kept.append(job)
    return kept


def write_judgements(job: FileJob, judged) -> None:
    atomic_write_text(judgements_path(job.csv_path), "".join(j.to_json() + "\n" for j in judged))


def write_file_results(job: FileJob, judged, identity: dict, sent: int, members: list[Member]) -> dict:
    """The verdicts beside the rows judged (``record.verdicts``: scoring reads them there), then the exports:
    ``_judgements.jsonl``, the faithful JSON (unparseable or no majority: judged 0, in ``llm_err_count``) and the
    record of who judged and each judge's journal (relative)."""
    unparseable = sum(j.status in (UNPARSEABLE, NO_MAJORITY) for j in judged)
    stats = summarize(job.frame, [j.value == 1 for j in judged], job.model, job.mode, job.original_count,
                      job.excluded, extra={"llm_err_count": unparseable})
    journals = [m.executor.journal for m in members]
    names = [os.path.relpath(j.path, job.csv_path.parent) for j in journals] if all(journals) else None
    rows = [json.loads(j.to_json()) for j in judged]
    recorded_verdicts.write(job.csv_path, job.sha256, identity, names,
                            problem_accuracies(job.frame, [j.value == 1 for j in judged]), rows)
    write_judgements(job, judged)
    atomic_write_text(evaluationllm_json_path(job.csv_path), json_text(stats))
    atomic_write_json(judge_record_path(job.csv_path), {
        "evaluation_file": evaluationllm_json_path(job.csv_path).name, "result_file": job.csv_path.name,
        "result_sha256": job.sha256, "judge": identity,
        **({"journals": names} if names else {}),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": command_line(),
        "smmile_git_revision": git_revision(),
        "counts": {"rows": len(judged), "requests_sent": sent, "cache_hits": sum(j.cached for j in judged),
                   "unparseable": unparseable,
                   **({"jury": tally(judged), "jury_unparseable": {m.label: sum(
                       j.meta["jury"][i]["status"] == UNPARSEABLE for j in judged) for i, m in enumerate(members)}}
                      if len(members) > 1 else {})}})
    return stats


def finish_file(job: FileJob, members: list[Member], identity, outcome: Outcome) -> dict | None:
    """Verdicts for one file; its results are written only when every judge replied to every row."""
    per_judge = [judgements(planned_for(job, m.settings), m.executor.records, m.executor.fresh, m.settings, m.seen)
                 for m in members]
    sent = sum(not j.cached for judged in per_judge for j in judged)
    judged = jury_judgements(per_judge, [m.label for m in members])
    failed = [(m.label, j) for m, rows in zip(members, per_judge) for j in rows if j.status == FAILED]
    if failed:
        write_judgements(job, judged)
        who = f" by {failed[0][0]}" if len(members) > 1 else ""
        outcome.fail(f"{job.csv_path}: {len(failed)} of {len(judged) * len(members)} judge request(s) failed{who} "
                     f"({failed[0][1].error}); results not written, rerun to retry")
        return None
    stats = write_file_results(job, judged, identity, sent, members)
    _print_report(stats, judged, sent, per_judge if len(members) > 1 else None)
    if judged and stats["llm_err_count"] == len(judged):  # 0 % that says nothing about the model
        outcome.fail(f"{job.csv_path}: no parseable judge reply ({len(judged)} of {len(judged)} unparseable, "
                     f"scored as incorrect); read the raw replies in {judgements_path(job.csv_path).name} and "
                     "check the judge model")
    return stats


def _print_report(stats, judged, sent: int, per_judge=None) -> None:
    what = "judge replies without a jury majority" if per_judge else "badly formatted judge replies"
    extra = [f"Number of correct answers (judge): {stats['correct_examples']}",
             f"Number of {what}: {stats['llm_err_count']}"]
    print(comparison.format_file_report(stats, TITLE, LABEL, extra))
    unparseable = sum(j.status == UNPARSEABLE for rows in (per_judge or [judged]) for j in rows)
    cached = sum(j.cached for j in judged)  # replies from the judge's journal: none on a first run, not said then
    print(f"Judge requests sent: {sent}{f'; cache hits: {cached}' if cached else ''}; "
          f"unparseable replies: {unparseable} (counted as incorrect)")
    if per_judge:
        t = tally(judged)
        print(f"Jury of {len(per_judge)}: {t[MAJORITY]} row(s) with a strict majority, {t[TIE]} tie(s), "
              f"{t[NO_VERDICT]} without a parseable verdict (no majority: judged 0, counted above)")


def judge_backends() -> tuple[str, ...]:
    """`--judge-backend` choices: one name per backend of the registry (aliases and local models left out)."""
    from smmile.models import presets_hf, registry

    first: dict[str, str] = {}
    for name, path in registry.BACKENDS.items():
        if name not in presets_hf.BACKENDS:
            first.setdefault(path, name)
    return tuple(first.values())


def checked_settings(settings: JudgeSettings) -> JudgeSettings:
    """``openai`` with a ``--judge-base-url`` that is not OpenAI's own endpoint is an OpenAI-compatible server
    (key ``OPENAI_COMPATIBLE_API_KEY``) unless the inference backends' key rule lets ``OPENAI_API_KEY`` go there."""
    from smmile.models.api.secrets import key_may_go_to, url_has_credentials

    if settings.base_url and url_has_credentials(settings.base_url):  # before anything could write it
        raise UserError("--judge-base-url must not carry credentials (user:password@ or ?query); API keys come "
                        "from the environment only")
    if settings.backend == "openai" and not key_may_go_to(settings.base_url, ("api.openai.com",),
                                                          settings.allow_key_for_host,
                                                          os.environ.get("OPENAI_BASE_URL")):
        if os.environ.get("OPENAI_API_KEY"):
            log.warning(f"note: {settings.base_url} is not OpenAI's endpoint: OPENAI_API_KEY is not sent there; the "
                        "judge uses it as an OpenAI-compatible server (key from OPENAI_COMPATIBLE_API_KEY, if set)")
        return replace(settings, backend="openai-compatible")
    return settings


def build_backend(settings: JudgeSettings):
    """A missing SDK or key is a one-line UserError here, before work."""
    from smmile.generation import RunSettings
    from smmile.models.registry import build_backend as build

    transport = RunSettings(api_model=settings.model, base_url=settings.base_url, concurrency=settings.concurrency,
                            max_retries=settings.retries, timeout=settings.timeout,
                            max_consecutive_failures=settings.max_consecutive_failures, batch=settings.batch or None,
                            poll_interval=settings.poll_interval, price=settings.price,
                            allow_key_for_host=settings.allow_key_for_host)
    backend = build(settings.backend, settings=transport, generation=GenerationSettings())
    backend.unit = "judge requests"
    return backend


def judge_request(prompt: str, settings: JudgeSettings):
    """One user message sending ``settings.options()``, the options its key holds."""
    from smmile.models.api.request import ChatRequest

    options = settings.options()
    gen = GenerationSettings(max_new_tokens=options.get("max_tokens"), temperature=options.get("temperature"),
                             seed=options.get("seed"))
    return ChatRequest.from_settings([{"role": "user", "content": prompt}], gen, error_format="{e}")


def judge_work(jobs: list[FileJob], settings: JudgeSettings) -> dict:
    """key -> Work: each distinct request once, planned as the row that first asked it."""
    work = {}
    for job in jobs:
        p = planned_for(job, settings)
        for row, (pid, judged, prompt, key) in enumerate(zip(p.problem_ids, p.judged, p.prompts, p.keys)):
            if key not in work:
                work[key] = Work(judge_request(prompt, settings), {"index": row, "problem_id": str(pid), "item": {
                    "result_file": job.csv_path.name, **judged}}, key)
    return work


def earlier_replies(journal, work: dict, results_dir, settings: JudgeSettings) -> list[dict]:
    """The usable replies of the earlier store (``.smmile/judge_cache.jsonl``, only read) for the planned keys
    this judge's journal lacks, as journal records; a store that cannot be read is left aside, said once."""
    old = original.earlier_judge_cache(results_dir)
    if not old:
        return []
    have, out = journal.records(), []
    for key, w in work.items():
        earlier_key = {"prompt": w.request.messages[0]["content"], **settings.identity()}  # sha256 of its sorted JSON
        rec = old.get(content_sha256(json.dumps(earlier_key, sort_keys=True).encode()), {})
        if key not in have and rec.get("status", "ok") == "ok" and isinstance(rec.get("reply"), str) and rec["reply"]:
            out.append({"v": RESPONSES_FORMAT, "key": key, **w.planned, "status": "ok", "time": rec.get("time"),
                        "response": {"text": rec["reply"], "usage": rec.get("usage") or {},
                                     "seconds": rec.get("seconds") or 0.0, "extra": {"adopted_from": original.JUDGE_CACHE}}})
    return out


def members_of(panel: list[JudgeSettings]) -> tuple[list[Member], dict]:
    """Each judge resolved, its backend built (a missing SDK or key: one line, before any work); who judges."""
    members = []
    for settings in panel:
        settings = checked_settings(settings)
        backend = build_backend(settings)
        members.append(Member(settings, backend, judge_identity(settings, backend.endpoint()), label(settings)))
    check_panel([m.settings for m in members])
    identity = members[0].identity if len(members) == 1 else jury_identity(
        [m.settings for m in members], [m.identity for m in members])
    return members, identity


def judge_files(found: list[RunRecord], results_dir, settings: JudgeSettings, outcome: Outcome, *,
                cache: bool = True, overwrite: bool = False, panel: list[JudgeSettings] | None = None,
                estimates: list | None = None) -> dict:
    """Plan every file, refuse to replace another judge's results, send each distinct request once per judge.
    ``estimates`` (``--dry-run``): filled per judge with (member, estimate, requests planned); nothing is sent."""
    members, identity = members_of(panel or [settings])
    dry = estimates is not None
    for folder in [] if dry else sorted({str(results_dir)} | {str(r.path.parent) for r in found}):
        check_writable_dir(folder, "results folder")
    with nullcontext() if dry else OutputLock(results_dir, f"LLM-judge scoring in {results_dir}"):
        jobs = check_existing(plan_files(found, members[0].settings, outcome), identity, overwrite, outcome)
        for m in members:
            work = judge_work(jobs, m.settings)
            journal = Journal(m.settings.journal_path(results_dir), version=RESPONSES_FORMAT) if cache else None
            m.executor = Executor(journal, work)
            journaled = journal is not None and m.executor.pending
            earlier = earlier_replies(journal, work, results_dir, m.settings) if journaled else []
            if dry:
                adopted = {r["key"] for r in earlier}
                pending = [work[k].request for k in m.executor.pending if k not in adopted]
                estimates.append((m, m.backend.estimate(pending), len(work)))
                continue
            for record in earlier:
                journal.append(record)
            if earlier:
                journal.close()
                m.executor = Executor(journal, work)
            m.executor.run(m.backend)
        results = {}
        for job in [] if dry else jobs:
            stats = finish_file(job, members, identity, outcome)
            if stats is not None:
                results[f"{stats['model']}:{stats['inference_mode']}"] = stats
    return results


def visualize_file(result: RunRecord, outcome: Outcome) -> dict | None:
    """Report ``<stem>_evaluationllm.json``; a missing or invalid one is reported and skipped."""
    if not result.known:
        print(f"Skipping: {result.path}")
        log.warning(f"warning: {result.unknown_reason}")
        return None
    path = evaluationllm_json_path(result.path)
    try:
        stats = original.read_export(path)
        if not {"model", "inference_mode", "accuracy", "problem_accuracies"} <= set(stats):
            raise KeyError("required keys missing")
        original.check_judgement(result.path, stats)
    except FileNotFoundError:
        outcome.fail(f"{path}: no LLM-judge results (run without --visualize-only first)")
        return None
    except ResultFileError as exc:  # a judgement of other content than the CSV holds now
        outcome.fail(str(exc))
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        outcome.fail(f"{path}: cannot read LLM-judge results ({type(exc).__name__})")
        return None
    print(comparison.format_file_report(stats, TITLE, LABEL))
    return stats


def run_judge(results_dir: str | os.PathLike, settings: JudgeSettings, *, model: str | None = None,
              mode: str | None = None, visualize_only: bool = False, cache: bool = True,
              overwrite: bool = False, panel: list[JudgeSettings] | None = None, estimates: list | None = None) -> int:
    """0 when every file was judged, 1 when none was found or some were skipped or kept."""
    check_results_dir(results_dir)
    found = find_result_files(results_dir, judge_patterns(model, mode), model, mode)
    if not found:
        return 1
    outcome = Outcome()
    if visualize_only:
        refuse_if_none_known(found)
        results = {}
        for result in found:
            stats = visualize_file(result, outcome)
            if stats is not None:
                results[f"{stats['model']}:{stats['inference_mode']}"] = stats
    else:
        results = judge_files(found, results_dir, settings, outcome, cache=cache, overwrite=overwrite, panel=panel,
                              estimates=estimates)
        if estimates is not None:
            return outcome.exit_code
    kept = comparison.report_comparison(results, results_dir, comparison.comparison_filename(
        "model_comparison_llm", model, mode), LABEL)
    if kept:
        outcome.warn(kept)
    return outcome.finish()
