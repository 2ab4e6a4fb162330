"""``smmile export inspect``: one inspect_ai log per result, written with inspect_ai's own writer, for
``inspect view --log-dir OUT``. The task is SMMILE or SMMILE++ with the mode and format; each sample holds the
question (and, in its metadata, the request as sent where the run recorded it), the response, the target and
every score smmile gives it (each registered metric: exact match, the judge's verdict, the MCQA letter, ...), 1 or
0. inspect_ai (``smmile[inspect]``) is imported only here, only when this export runs."""

from __future__ import annotations

import hashlib
import os
import re

from smmile import __version__, fsguard
from smmile.errors import UserError
from smmile.export import samples as S
from smmile.export.provenance import FAILURE_RULES, FAILURES, created_at, dataset_of, judge_label, scored
from smmile.scoring import metrics, statistics
from smmile.scoring.judge import JUDGE_PROMPT

OWNER = "smmile export inspect"


def _inspect():
    try:
        from inspect_ai import log as ilog, model as imodel
        from inspect_ai.scorer import Score
    except ImportError:
        raise UserError("smmile export inspect needs inspect_ai: pip install 'smmile[inspect]'") from None
    return ilog, imodel, Score


def task_name(result, ids) -> str:
    """``SMMILE`` or ``SMMILE++`` (rows named ``<base>_perm_<k>``), then the mode and the format."""
    return f"{'SMMILE++' if statistics.has_permutations(ids) else 'SMMILE'}/{result.mode}/{result.fmt}"


def _score(Score, item: S.Item, metric: str, judge: str):
    value = item.scores[metric]
    meta = {"failure": item.failure} if item.failure else {}
    explanation = None
    if metrics.judged(metric):
        meta.update(judge=judge, verdicts=item.verdicts or None)
        if item.judge_reply is not None:
            explanation = f"judge reply: {item.judge_reply[0]!r} ({item.judge_reply[1]})"
    elif metric == "MCQA":
        explanation = f"selected {item.answer or '(none)'}, correct {item.target}"
    return Score(value=value, answer=item.answer, explanation=explanation, metadata=meta or None)


def _usage(imodel, usage: dict):
    if usage.get("input_tokens") is None and usage.get("output_tokens") is None:
        return None  # the provider reported none: missing, never zero
    i, o = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    return imodel.ModelUsage(input_tokens=i, output_tokens=o, total_tokens=i + o, total_cost=usage.get("cost_usd"))


def _sample(ilog, imodel, Score, item: S.Item, model: str, judge: str):
    prompt = item.question
    reply = imodel.ChatMessageAssistant(content=item.response or "", model=model)
    stop = "content_filter" if item.failure == "refused" else "stop"
    output = imodel.ModelOutput(model=model, choices=[imodel.ChatCompletionChoice(message=reply, stop_reason=stop)],
                                usage=_usage(imodel, item.usage),
                                error=item.response if item.failure == "failed" else None)
    meta = {"answer": item.answer, "failure": item.failure or None, "request_as_sent": item.request, **item.extra}
    return ilog.EvalSample(id=item.problem_id, epoch=1, input=prompt, target=item.target,
                           messages=[imodel.ChatMessageUser(content=prompt), reply], output=output,
                           scores={S.scorer_name(m): _score(Score, item, m, judge) for m in item.scores},
                           metadata={k: v for k, v in meta.items() if v is not None})


GENERATE = {"max_new_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p", "top_k": "top_k",
            "seed": "seed", "stop": "stop_seqs"}  # smmile's generation settings -> inspect_ai's GenerateConfig


def generate_config(imodel, generation):
    """The run's generation settings (those inspect_ai has a field for; all of them are in the metadata)."""
    given = {GENERATE[k]: v for k, v in (generation or {}).items() if k in GENERATE and v not in (None, [])}
    return imodel.GenerateConfig(**given)


def eval_log(records):
    """The inspect_ai ``EvalLog`` of one result (``records``: its scored metrics)."""
    ilog, imodel, Score = _inspect()
    result = records[0].result
    found = S.items(records)
    ids = [it.problem_id for it in found]
    manifest, dataset = result.manifest or {}, dataset_of(result)
    judged = any(metrics.judged(r.metric) for r in records)
    judge = judge_label(result) if judged else None
    model = f"smmile/{records[0].model}"
    metadata = {"smmile_version": __version__, "source": os.path.basename(result.csv), "dataset": dataset,
                "failure_rule": FAILURE_RULES[FAILURES], "manifest": manifest or None,
                "judge": judge, "judge_prompt": JUDGE_PROMPT if judged else None}
    git = manifest.get("smmile_git_revision")
    spec = ilog.EvalSpec(
        created=created_at(result).isoformat(), task=task_name(result, ids), task_version=manifest.get("protocol") or "paper",
        dataset=ilog.EvalDataset(name=str(dataset.get("id") or "unrecorded (the published SMMILE outputs)"),
                                 location=dataset.get("resolved_revision") or dataset.get("revision"),
                                 samples=len(found), sample_ids=ids),
        model=model, model_generate_config=generate_config(imodel, manifest.get("generation")),
        task_args={"mode": result.mode, "format": result.fmt, "protocol": manifest.get("protocol")},
        config=ilog.EvalConfig(), packages={k: str(v) for k, v in (manifest.get("packages") or
                                                                   {"smmile": __version__}).items()},
        revision=ilog.EvalRevision(type="git", origin="smmile", commit=str(git)) if git else None,
        metadata={k: v for k, v in metadata.items() if v is not None})
    scores = [ilog.EvalScore(name=S.scorer_name(r.metric), scorer=S.scorer_name(r.metric),
                             scored_samples=int(scored(r).notna().sum()),
                             metrics={"accuracy": ilog.EvalMetric(name="accuracy", value=float(scored(r).mean()))},
                             metadata={"scorer": metrics.get_metric(r.metric).display})
              for r in records]
    return ilog.EvalLog(version=2, status="success", eval=spec,
                        results=ilog.EvalResults(total_samples=len(found), completed_samples=len(found), scores=scores),
                        samples=[_sample(ilog, imodel, Score, it, model, judge) for it in found])


def log_name(result, task: str) -> str:
    digest = hashlib.sha256(os.fspath(result.csv).encode()).hexdigest()[:8]
    slug = re.sub(r"[^A-Za-z0-9.-]+", "-", f"smmile-{result.identity.key}-{task}").strip("-")
    return f"{slug}_{digest}.eval"


def export_inspect(results_dir: str, out: str, *, force: bool = False) -> list[str]:
    """One ``.eval`` log per scored result of ``results_dir`` in ``out``; returns the paths written."""
    ilog = _inspect()[0]
    groups = S.grouped(results_dir)
    folder = os.fspath(fsguard.prepare_output_dir(out, OWNER, force=force))
    written = []
    with fsguard.OutputLock(folder, f"the inspect log folder {folder}"):
        for records in groups:
            built = eval_log(records)
            path = os.path.join(folder, log_name(records[0].result, built.eval.task))
            ilog.write_eval_log(built, path)
            written.append(path)
    return written
