"""The run loop: plan every problem, skip what the journal has, run the rest, derive and write the outputs. CSV rows
are derived from the journaled responses each time, so an extractor fix re-derives every row without a model call.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.load import Loaded, load_for_run, refuse_output_in_dataset, verify_images
from ..data.variant_datasets import refuse_dropped_images, refuse_imageless
from ..environment import command_line, git_revision, package_versions, version
from ..errors import UserError
from ..generation import GenerationSettings, RunSettings
from ..identity import checkpoint_identity, checkpoint_origin
from ..models import registry
from ..models.base import Backend, Family, Response, resolve_settings
from ..protocol.items import SEED, Item, Rngs
from ..protocol.outputs import null_as_empty
from ..fsguard import OutputLock, atomic_write_json, atomic_write_text, check_writable_dir, read_json
from .executor import RESPONSES_FORMAT, Executor, Journal, Work, digest
from .csv_writer import accuracy_summary, csv_text
from .progress import Progress

if TYPE_CHECKING:
    from .ray_engine import RaySettings

log = logging.getLogger(__name__)

PROTOCOLS = ("paper", "corrected")
ENGINES = ("local", "ray")


@dataclass
class RunSpec:
    model: str  # preset name
    mode: str = "ICL"
    fmt: str = "open"
    dataset: str | None = None
    revision: str | None = None
    augmented: bool = False
    output_dir: Path = Path("../results")
    protocol: str = "paper"
    open_suffix: bool = True  # False for the open-only scripts (result_<tag>_<mode>.csv)
    model_path: str | None = None
    image_dir: Path | None = None
    shard: tuple[int, int] | None = None  # (i, N), 1 <= i <= N
    batch_size: int = 1
    backend: str | None = None  # override the preset's backend: a short name (`registry.BACKENDS`) or "module:Class"
    settings: RunSettings = RunSettings()  # over the preset's (recorded in the manifest)
    generation: GenerationSettings = GenerationSettings()  # over the preset's and the family's
    summary: tuple[str, str] | None = None  # (file token, display) for accuracy_summary_*.txt
    quiet: bool = False
    engine: str = "local"  # "ray": the backend runs in Ray actors (runner/ray_engine.py); answers are the same
    ray: RaySettings | None = None  # --engine ray: cluster address, workers, GPUs per worker


@dataclass
class RunResult:
    csv_path: Path
    rows: list[dict]
    failures: list[tuple[str, str]]
    skipped: list[tuple[str, str]]
    computed: int
    exit_code: int


def result_stem(tag: str, mode: str, fmt: str, open_suffix: bool) -> str:
    return f"result_{tag}_{mode}" + ("" if fmt == "open" and not open_suffix else f"_{fmt}")


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UserError(f"--shard {text!r}: expected i/N, e.g. 1/4") from None
    if not 1 <= i <= n:
        raise UserError(f"--shard {text!r}: i must be between 1 and N")
    return i, n


class Runner:
    def __init__(self, spec: RunSpec, rngs: Rngs | None = None):
        if spec.protocol not in PROTOCOLS:
            raise UserError(f"--protocol must be one of {', '.join(PROTOCOLS)}")
        if spec.engine not in ENGINES:
            raise UserError(f"--engine must be one of {', '.join(ENGINES)}")
        self.spec = spec
        self.preset = registry.get(spec.model)
        # --model-path: the preset's own checkpoint (by hub snapshot or weights: `checkpoint`), or another one
        self.checkpoint = spec.model_path and checkpoint_origin(spec.model_path, self.preset.model_id,
                                                                spec.settings.cache_dir)
        if spec.model_path and not self.checkpoint:
            self.preset = replace(self.preset, identity=checkpoint_identity(spec.model_path, self.preset.identity))
        self.rngs = rngs or Rngs()
        self.backend_path = registry.backend_path(spec.backend) or self.preset.backend
        family_default = registry.load_symbol(self.preset.family).GENERATION
        # the one place where preset and flags meet: loading/transport settings and the typed generation settings
        self.settings, self.generation = resolve_settings(self.preset, spec, family_default)
        self.family: Family = registry.build_family(self.preset, self.settings, spec.protocol)
        self.family.generation = self.generation
        self.stem = result_stem(self.preset.tag, spec.mode, spec.fmt, spec.open_suffix)
        if spec.shard:
            self.stem += f".shard-{spec.shard[0]}-of-{spec.shard[1]}"
        self.csv_path = Path(spec.output_dir) / f"{self.stem}.csv"
        self.manifest_path = self.csv_path.with_name(f"{self.stem}.manifest.json")
        self.journal = Journal(Path(spec.output_dir) / ".smmile" / f"{self.stem}.journal.jsonl",
                               version=RESPONSES_FORMAT)

    def plan(self, loaded: Loaded) -> list[Item]:
        items = []
        for i, problem in enumerate(loaded.problems):
            item = Item(i, problem, self.spec.mode, self.spec.fmt)
            self.family.plan(item, self.rngs)
            items.append(item)
        if self.spec.shard:
            k, n = self.spec.shard
            items = [it for it in items if it.index % n == k - 1]
        return items

    @cached_property
    def run_identity(self) -> dict:
        """What, besides the problem and its request, can change an answer (not how requests are sent)."""
        s = self.spec
        run_only = registry.backend_class(self.backend_path).RUN_ONLY
        return {"model": self.preset.name, "model_id": self.preset.model_id, "model_path": s.model_path,
                "backend": self.backend_path, "protocol": s.protocol, "generation": self.generation.as_dict(),
                "settings": {k: v for k, v in self.settings.as_dict().items() if k not in run_only}}

    def keys(self, items: list[Item], requests: dict[int, object]) -> dict[int, str]:
        return {it.index: digest({"run": self.run_identity, "problem_id": it.problem_id, "item": it.fingerprint(),
                                  "request": requests[it.index]}) for it in items}

    def build_backend(self) -> Backend:
        args = (self.backend_path, self.preset, self.spec, self.settings, self.generation)
        if self.spec.engine == "ray":  # the same backend, built once in each Ray worker
            from .ray_engine import RayEngine, RaySettings

            return RayEngine(*args, self.spec.ray or RaySettings())
        return registry.build_backend(*args)

    def execute(self, executor: Executor) -> None:
        """Run what `executor` has pending; each response is journaled as it completes."""
        backend = self.build_backend()
        self.backend_info = backend.describe()
        pending = len(executor.pending)
        bar = Progress(total=len(self._items), done=len(self._items) - pending, desc=self.stem,
                       detail=backend.progress_detail)
        hint = CrawlHint(self.generation.max_new_tokens)
        try:
            executor.run(backend, lambda record: (bar.update(record["status"] == "error"), hint.check()))
        finally:
            self.backend_info = backend.describe()  # again: counters (retries, tokens, cost) are final now
            bar.close()
            backend.close()

    def run(self) -> RunResult:
        # before anything is written: a malformed variant manifest, a variant the family cannot show
        self.variant = refuse_dropped_images(self.spec.dataset, output_key=self.family.output_key,
                                             augmented=self.spec.augmented)
        check_writable_dir(self.spec.output_dir, "output folder")  # before loading data or a model
        refuse_output_in_dataset(self.spec.output_dir, self.spec.dataset, self.spec.augmented)
        if self.spec.model_path:  # which checkpoint the names will say ran
            c, name = self.checkpoint, self.preset.identity.display
            log.info(f"--model-path {self.spec.model_path}: " + (
                f"{c['hub_id']} at revision {c['revision']} ({c['recognised_by']}), named {name}" if c else
                f"not {self.preset.model_id} (neither its hub cache snapshot, its weights nor converted from it), "
                f"named {name}"))
        Path(self.spec.output_dir).mkdir(parents=True, exist_ok=True)
        with OutputLock(self.csv_path, f"{self.csv_path}"):
            return self._run()

    def prepare(self) -> tuple[Loaded, list[Item], dict[int, str], Executor]:
        """What a run does before a model loads (and all `--dry-run` does): load the data, plan every problem,
        render and key its request; the executor knows what the journal already has."""
        s = self.spec
        loaded = load_for_run(s.dataset, s.revision, augmented=s.augmented, image_dir=s.image_dir,
                              recover_missing=s.protocol == "corrected")
        if not loaded.problems:
            raise UserError(f"no problem left to run in {loaded.source.ref} (all skipped for missing images)")
        refuse_imageless(loaded.problems, s.mode, self.family.output_key, loaded.source.ref)
        self._items = items = self.plan(loaded)
        requests = {it.index: self.family.request(it) for it in items}
        keys = self.keys(items, requests)
        executor = Executor(self.journal, {keys[it.index]: Work(requests[it.index], planned_record(it), it)
                                           for it in items}, empty_is_answer=True)
        return loaded, items, keys, executor

    def _run(self) -> RunResult:
        t0 = time.time()
        s = self.spec
        loaded, items, keys, executor = self.prepare()
        self._note_other_settings(executor, len(items))
        pending = [executor.work[k].item for k in executor.pending]
        verify_images([it.problem for it in pending])
        self.backend_info: dict = {}
        if pending:
            self.execute(executor)
        records = executor.records
        not_run = [it.problem_id for it in items if keys[it.index] not in records]
        if not_run:  # the backend stopped early (e.g. --max-cost): no final CSV from an incomplete run
            log.warning(f"{len(not_run)} problem(s) were not run; rerun the same command to continue. "
                        f"Nothing was written to {self.csv_path}.")
            return RunResult(self.csv_path, [], [(p, "not run") for p in not_run], loaded.skipped, len(pending), 1)
        ordered = [records[keys[it.index]] for it in items]
        rows, failures, answered = self.derive_rows(items, ordered)
        previous = read_json(self.manifest_path) or {}
        self._set_aside_foreign_csv(previous)
        self._note_replaced_run(previous)
        atomic_write_text(self.csv_path, csv_text(self.family.columns(s.fmt), rows))
        self._write_manifest(loaded, items, ordered, failures, len(pending), time.time() - t0, previous)
        self._report(rows, failures, loaded, len(pending))
        return RunResult(self.csv_path, rows, failures, loaded.skipped, len(pending), int(len(failures) > answered))

    def _note_other_settings(self, executor: Executor, planned: int) -> None:
        """Say at the start that journaled responses of this result file were made under other settings (kept, not
        reused), naming the settings of the run the manifest describes where they differ from this run's."""
        other = [r for r in executor.journaled if r.get("key") not in executor.work]
        if not other:
            return
        before = read_json(self.manifest_path) or {}
        now = {**self.generation.as_dict(), **self.settings.as_dict()}
        was = {**(before.get("generation") or {}), **(before.get("settings") or {})}
        changed = ", ".join(f"{k} {was[k]!r} (now {now.get(k)!r})" for k in sorted(was)
                            if k != "batch_size" and was[k] != now.get(k)) or "another configuration or prompt"
        log.warning(f"note: the journal of {self.stem} holds {len(other)} response(s) made under other settings "
                    f"({changed}); they are kept, not reused: {planned - len(executor.pending)}/{planned} problems are "
                    "done under this run's settings")

    def _set_aside_foreign_csv(self, previous: dict) -> None:
        """A CSV at the result's name that no smmile run wrote (no manifest names it; e.g. a published result) is in
        no journal: it is renamed ``<stem>.replaced-<time>.csv`` (no scoring command reads it), not replaced."""
        if not self.csv_path.exists() or previous.get("result_file") == self.csv_path.name:
            return
        stamp = time.strftime("%Y%m%dT%H%M%S")
        aside = self.csv_path.with_name(f"{self.stem}.replaced-{stamp}.csv")
        n = 1
        while aside.exists():
            n += 1
            aside = self.csv_path.with_name(f"{self.stem}.replaced-{stamp}-{n}.csv")
        self.csv_path.rename(aside)
        log.warning(f"note: {self.csv_path.name} was not written by an smmile run (no manifest); it is kept as "
                    f"{aside.name} and this run's results take its name")

    def _note_replaced_run(self, previous: dict) -> None:
        """Say so when this CSV replaces a differently configured run's (`previous`: its manifest)."""
        before = (previous.get("journal") or {}).get("run_key")
        if before and self.csv_path.exists() and before != digest(self.run_identity):
            was = previous.get("command") or []
            log.warning(f"note: {self.csv_path.name} held the results of another configuration "
                        f"({' '.join(map(str, was)) or 'an earlier run'}); they are replaced by this run's. That run's "
                        "responses are kept in the journal: rerun its command to write them again without a model "
                        "call.")

    def derive_rows(self, items: list[Item], records: list[dict]) -> tuple[list[dict], list[tuple[str, str]], int]:
        """CSV rows from the journaled responses, by the family's current output spec (`protocol.outputs`), the
        failures, and how many of them the original wrote as answers (exit status 0: `outputs.null_as_empty`)."""
        rows, failures, answered = [], [], 0
        for it, rec in zip(items, records):
            response = Response(**rec["response"])
            if rec["status"] == "ok":
                rows.append(self.family.row(it, response))
            else:
                rows.append(self.family.error_row(it, response))
                failures.append((it.problem_id, response.error or "unknown error"))
                answered += null_as_empty(self.family.output, it, response)
        return rows, failures, answered

    def _write_manifest(self, loaded, items, records, failures, computed, seconds, previous: dict) -> None:
        """`records`: the journal records of `items`, in order; `previous`: the manifest already there ({})."""
        s = self.spec
        usage: dict[str, float] = {}
        for rec in records:
            for k, v in (rec["response"].get("usage") or {}).items():
                if isinstance(v, (int, float)):
                    usage[k] = usage.get(k, 0) + v
        revision = git_revision()
        data = {
            "result_file": self.csv_path.name, "command": command_line(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "smmile_git_revision": revision,
            "packages": package_versions(),
            "dataset": {**loaded.source.describe(), "fingerprint": loaded.fingerprint, "problems": len(loaded.problems),
                        "variant": getattr(self, "variant", None),
                        "skipped_missing_images": [{"problem_id": p, "image_url": u} for p, u in loaded.skipped],
                        "recovered_images": [{"problem_id": p, "image_url": u} for p, u in loaded.recovered]},
            "model": {"preset": self.preset.name, "model_id": self.preset.model_id, "model_path": s.model_path,
                      "tag": self.preset.tag, "family": self.preset.family, "backend": self.backend_path,
                      "identity": asdict(self.preset.identity),  # --model-path: the preset's checkpoint or None
                      **({"checkpoint": self.checkpoint or None} if s.model_path else {}),
                      **({"revision": self.checkpoint["revision"]} if self.checkpoint else {})},
            "inference_mode": s.mode, "task_format": s.fmt, "protocol": s.protocol,
            "seeds": {"python_random": SEED, "numpy_legacy": SEED},
            "generation": self.generation.as_dict(),
            "settings": {**self.settings.as_dict(), "batch_size": s.batch_size}, "backend": self.backend_info,
            "shard": {"index": s.shard[0], "count": s.shard[1], "indices": [it.index for it in items],
                      "problem_ids": [it.problem_id for it in items]} if s.shard else None,
            "counts": {"rows": len(items), "computed_this_run": computed, "failed": len(failures)},
            "failures": [{"problem_id": p, "error": e} for p, e in failures],
            "usage": usage, "seconds_this_run": round(seconds, 3),
            "seconds_generation_total": round(sum(rec["response"].get("seconds") or 0 for rec in records), 3),
            "journal": {"file": str(self.journal.path.relative_to(Path(s.output_dir))), "format": RESPONSES_FORMAT,
                        "run_key": digest(self.run_identity)},
            "rows_derived_by": {"smmile_version": version("smmile"), "git_revision": revision},
        }
        if not computed:  # nothing was run: the manifest still describes the run that computed the answers
            kept = ("command", "created", "seconds_this_run", "backend")
            data.update({k: v for k, v in previous.items() if k in kept})
            if "counts" in previous:
                data["counts"]["computed_this_run"] = previous["counts"].get("computed_this_run", 0)
            if previous == json.loads(json.dumps(data, default=str)):
                return
        atomic_write_json(self.manifest_path, data, ensure_ascii=False, default=str)

    def _report(self, rows, failures, loaded, computed) -> None:
        s = self.spec
        out = sys.stderr if s.quiet else sys.stdout
        if s.fmt == "mcqa":
            correct = sum(1 for r in rows if r.get("is_correct") is True)
            print(f"MCQA Accuracy: {correct / len(rows):.4f} ({correct}/{len(rows)})", file=out)
            if s.summary:
                name, display = s.summary
                atomic_write_text(Path(s.output_dir) / f"accuracy_summary_{name}_{s.mode}_mcqa.txt",
                                  accuracy_summary(display, s.mode, s.fmt, correct, len(rows)))
        print(f"Results saved to {self.csv_path} ({len(rows)} problems, {computed} computed this run)", file=out)
        if loaded.skipped:
            print(f"Skipped {len(loaded.skipped)} problem(s) with missing images:", file=out)
            for pid, url in loaded.skipped:
                print(f"  {pid} {url}", file=out)
        if failures:
            log.warning(f"{len(failures)} problem(s) failed (rerun the same command to retry them):\n"
                        + "\n".join(f"  {pid}: {err}" for pid, err in failures))


class CrawlHint:
    """One line when a local model on CPU takes over ``SECONDS`` a problem at a long output limit: the flag that
    shortens it."""

    SECONDS = 30.0

    def __init__(self, max_new_tokens: int | None):
        self.first, self.done, self.limit = 0.0, 0, max_new_tokens
        self.said = not (max_new_tokens or 0) > 64  # a short limit already: the flag is not the lever

    def check(self) -> None:
        """After each problem; timed from the first one done (the model's loading is not a problem's time)."""
        self.done += 1
        if self.done == 1:
            self.first = time.monotonic()
            return
        per_problem = (time.monotonic() - self.first) / (self.done - 1)
        if not self.said and per_problem > self.SECONDS and on_cpu():
            self.said = True
            log.warning(f"note: about {per_problem:.0f} s a problem on CPU with up to {self.limit} new tokens per "
                        "answer; --max-new-tokens 32 (recorded in the manifest, a new run) shortens it")


def on_cpu() -> bool:
    """A local model runs on CPU: torch was loaded (by a local backend) and sees no CUDA GPU."""
    torch = sys.modules.get("torch")
    return torch is not None and not torch.cuda.is_available()


def planned_record(item: Item) -> dict:
    """The planned fields of an item's journal record: what the model was asked and what counts as correct."""
    return {"index": item.index, "problem_id": item.problem_id,
            "item": {"mode": item.mode, "format": item.fmt, "target": item.target, "options": item.options,
                     "correct": item.correct, "true_answer": item.problem.query.answer, "extra": item.extra}}


def run(spec: RunSpec, rngs: Rngs | None = None) -> RunResult:
    return Runner(spec, rngs).run()
