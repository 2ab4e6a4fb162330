"""`--engine ray`: `RayEngine` stands where the backend stands; the driver plans, keys and journals as locally. The
requests become a Ray dataset, one block per chunk, mapped over `workers` actors that each build the backend once.
A dead worker's chunk is run again; only the first response per problem is delivered (nothing journaled twice).
"""

from __future__ import annotations

import json
import logging
import math
import pickle
from dataclasses import dataclass
from typing import Any

from ..errors import MissingDependency, UserError
from ..models import registry
from ..models.base import Backend, OnDone, Response


@dataclass(frozen=True)
class RaySettings:
    """`address`: None starts a local Ray; "auto" joins the cluster of this node; else a GCS address or
    ray://host:port. `gpus_per_worker`: None is 1 where the cluster has GPUs (0 for the baselines), else 0."""

    address: str | None = None
    workers: int = 1
    gpus_per_worker: float | None = None


def _ray():
    try:
        import ray
    except ImportError:
        raise MissingDependency("ray[data]", why="--engine ray") from None
    return ray


class RayEngine:
    """A backend to the Executor; the backend named by `backend_path` runs in `ray.workers` Ray actors."""

    name = "ray"

    def __init__(self, backend_path: str, preset, spec, settings: dict, generation, ray: RaySettings):
        from ..models.api.backend import ApiBackend
        from ..models.baselines import BaselineBackend
        from ..models.vllm_backend import VLLMBackend  # imports no vLLM

        self.cls = registry.load_symbol(backend_path)
        if issubclass(self.cls, ApiBackend):
            raise UserError("--engine ray runs local models and baselines; an API model scales with --concurrency")
        self.ray_settings = ray
        self.needs_gpu = not issubclass(self.cls, BaselineBackend)
        self.vllm = issubclass(self.cls, VLLMBackend)  # its throughput comes from many prompts per call
        # built here to check flags and paths before Ray starts (its model is never loaded on the driver)
        self.local: Backend = self.cls(preset, spec, settings, generation)
        self.args = (backend_path, preset, spec, settings, generation)
        self.batch_size = max(1, int(getattr(spec, "batch_size", 1) or 1))
        self.info: dict = {**self.local.describe(), "engine": {"name": "ray", "workers": ray.workers}}
        self.started = False  # whether this engine started Ray (and so shuts it down)

    def describe(self) -> dict:
        """The backend entry as the last worker reported it, plus `engine`."""
        return self.info

    def close(self) -> None:
        if self.started:
            self.started = False
            _ray().shutdown()

    def connect(self):
        ray = _ray()
        if not ray.is_initialized():
            address = self.ray_settings.address
            try:
                ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING,
                         configure_logging=True, log_to_driver=True)
            except ConnectionError as exc:
                raise UserError(f"--ray-address {address}: cannot reach a Ray cluster ({exc}); start one with "
                                "`ray start --head` (see docs/scale-out.md)") from None
            self.started = True
        return ray

    def gpus_per_worker(self, ray) -> float:
        """--gpus-per-worker or its default, checked against what the cluster has (a CPU worker takes one CPU)."""
        s = self.ray_settings
        have = ray.cluster_resources()
        gpus, cpus = float(have.get("GPU", 0)), float(have.get("CPU", 0))
        per_gpu = s.gpus_per_worker if s.gpus_per_worker is not None else float(self.needs_gpu and gpus > 0)
        if per_gpu and gpus < s.workers * per_gpu:
            raise UserError(f"the Ray cluster has {gpus:g} GPU(s); --workers {s.workers} --gpus-per-worker "
                            f"{per_gpu:g} asks for {s.workers * per_gpu:g}. Add nodes, or ask for fewer workers or "
                            "GPUs per worker")
        if not per_gpu and cpus < s.workers:
            raise UserError(f"the Ray cluster has {cpus:g} CPU(s); --workers {s.workers} needs one CPU per worker")
        return per_gpu

    def generate(self, work: list[tuple[Any, Any]], on_done: OnDone) -> None:
        if not work:
            return
        ray = self.connect()
        per_gpu = self.gpus_per_worker(ray)
        s = self.ray_settings
        self.info["engine"] = {"name": "ray", "workers": s.workers, "gpus_per_worker": per_gpu,
                               "address": s.address or "local", "ray_version": ray.__version__}
        from ray.data import DataContext

        ctx = DataContext.get_current()
        ctx.enable_progress_bars = False  # the driver's one progress line counts across workers
        ctx.print_on_execution_start = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)  # not a line per dataset execution
        logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # nor "progress bars disabled"
        chunk = self.batch_size  # problems per Ray task; a dead worker costs at most one chunk's compute
        if self.vllm:
            chunk = max(chunk, math.ceil(len(work) / (4 * s.workers)))
        dumps = ray.cloudpickle.dumps  # requests may carry closures (an image step)
        rows = [{"index": i, "request": dumps(pair)} for i, pair in enumerate(work)]
        problem = getattr(work[0][0], "problem", None)  # the runner's Items (a problem's rows include the query)
        lead = max(work, key=lambda pair: len(pair[0].problem.rows)) if problem is not None else None
        ds = ray.data.from_items(rows, override_num_blocks=math.ceil(len(rows) / chunk))
        ds = ds.map_batches(Worker, fn_constructor_kwargs={"blob": dumps(self.args), "lead": dumps(lead)},
                            batch_size=chunk,
                            compute=ray.data.ActorPoolStrategy(size=s.workers),
                            **({"num_gpus": per_gpu} if per_gpu else {"num_cpus": 1}))
        delivered: set[int] = set()
        rows_out = ds.iter_rows()
        try:
            for row in rows_out:
                if row["mistake"]:  # e.g. a checkpoint a worker cannot load: one line, as locally
                    raise UserError(row["mistake"])
                i = int(row["index"])
                if row["info"]:
                    self.info = {**json.loads(row["info"]), "engine": self.info["engine"]}
                if i in delivered:  # a retried chunk answers again what its dead worker had sent
                    continue
                delivered.add(i)
                on_done(work[i][0], pickle.loads(row["response"]))
        finally:
            close = getattr(rows_out, "close", None)
            if close is not None:
                close()


class Worker:
    """One Ray actor: builds the backend once, answers chunks of (index, pickled (item, request)). A backend may
    size itself or probe the model on the whole run (`hf:` / `vllm:`): so its first call (every call for vLLM) starts
    with `lead`, the run's pending problem with the most rows, whose answer is dropped."""

    def __init__(self, blob: bytes, lead: bytes):
        from ..models.vllm_backend import VLLMBackend

        backend_path, preset, spec, settings, generation = pickle.loads(blob)
        self.backend: Backend = registry.load_symbol(backend_path)(preset, spec, settings, generation)
        self.lead, self.every_call = pickle.loads(lead), isinstance(self.backend, VLLMBackend)

    def __call__(self, batch: dict) -> dict:
        pairs = [pickle.loads(r) for r in batch["request"]]
        index = {id(item): int(i) for i, (item, _) in zip(batch["index"], pairs)}
        lead = [self.lead] if self.lead is not None else []
        if not self.every_call:
            self.lead = None
        out: dict[int, Response] = {}
        mistake = ""
        try:
            self.backend.generate(lead + pairs, lambda item, resp: out.setdefault(index.get(id(item), -1), resp))
        except UserError as exc:  # the driver stops with this one line; answers made before it still go back
            mistake = str(exc)
        out.pop(-1, None)  # the lead's answer
        info = json.dumps(self.backend.describe(), default=str)
        rows = {"index": list(out), "response": [pickle.dumps(r) for r in out.values()],
                "info": [info if k == 0 else "" for k in range(len(out))], "mistake": [""] * len(out)}
        if mistake:
            for column, value in (("index", -1), ("response", b""), ("info", ""), ("mistake", mistake)):
                rows[column].append(value)
        return rows
