"""`--engine ray`: `RayEngine` stands where the backend stands; the driver plans, keys and journals as locally. The
pending work goes into Ray's object store once (images shared between problems pickled once); a Ray dataset of its
indices, one block per chunk, is mapped over `workers` actors that each fetch it, check their package versions
against the driver's and build the backend once. A dead worker's chunk is run again; only the first response per
problem is delivered (nothing journaled twice). Which cluster, and joining it: runner/ray_cluster.py.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import pickle
from dataclasses import dataclass
from typing import Any

from .. import environment
from ..errors import MissingDependency, UserError
from ..models import registry
from ..models.base import Backend, OnDone, Response
from . import ray_cluster

# package versions a worker may differ in from the driver: Ray itself refuses another Python; the API clients
# serve no model a Ray worker runs
UNCOMPARED = ("python", "openai", "anthropic", "ollama")


@dataclass(frozen=True)
class RaySettings:
    """`address`: None starts a Ray for the run (`num_cpus` CPUs, None: every core); "auto" joins the cluster of this
    node (RAY_ADDRESS, `ray start`); else its GCS address HOST:PORT. `gpus_per_worker`: None is 1 where the cluster
    has GPUs (0 for the baselines), else 0. Checked when made: a mistake is one line before anything loads."""

    address: str | None = None
    workers: int = 1
    gpus_per_worker: float | None = None
    num_cpus: int | None = None

    def __post_init__(self):
        ray_cluster.check_address(self.address)
        if self.num_cpus is not None and self.address is not None:
            raise UserError("--num-cpus sizes a Ray this run starts; with --ray-address the cluster has its own CPUs "
                            "(`ray start --num-cpus`)")


def _ray():
    try:
        import ray
    except ImportError:
        raise MissingDependency("ray[data]", why="--engine ray") from None
    return ray


class RayEngine(Backend):
    """A backend to the Executor; the backend named by `backend_path` runs in `ray.workers` Ray actors."""

    name = "ray"

    def __init__(self, backend_path: str, preset, spec, settings, generation, ray: RaySettings):
        from ..models.api.backend import ApiBackend
        from ..models.baselines import BaselineBackend
        from ..models.vllm_backend import VLLMBackend  # imports no vLLM

        super().__init__(preset, spec, settings, generation)
        self.cls = registry.backend_class(backend_path)
        if issubclass(self.cls, ApiBackend):
            raise UserError("--engine ray runs local models and baselines; an API model scales with --concurrency")
        self.ray_settings = ray
        self.needs_gpu = not issubclass(self.cls, BaselineBackend)
        self.vllm = issubclass(self.cls, VLLMBackend)  # its throughput comes from many prompts per call
        # built here to check flags and paths before Ray starts (its model is never loaded on the driver)
        self.local: Backend = registry.build_backend(backend_path, preset, spec, settings, generation)
        self.args = (backend_path, preset, spec, settings, generation)
        self.batch_size = max(1, int(getattr(spec, "batch_size", 1) or 1))
        self.info: dict = {**self.local.describe(), "engine": {"name": "ray", "workers": ray.workers}}
        self.connected = False  # whether this engine called ray.init (and so shuts its connection down)
        self.cluster: dict = {}

    def close(self) -> None:
        if self.connected:
            self.connected = False
            _ray().shutdown()  # a Ray of the run's own stops; a joined cluster goes on

    def connect(self):
        ray = _ray()
        if not ray.is_initialized():  # else a library caller's own ray.init: that Ray
            s = self.ray_settings
            started = ray_cluster.connect(ray, s.address, s.num_cpus)
            self.connected = True
            self.cluster = ray_cluster.cluster_record(ray, started)
        elif not self.cluster:
            self.cluster = ray_cluster.cluster_record(ray, False)
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
        if work:
            ray = self.connect()
            with ray_cluster.ray_lines_hidden():
                self.run_on_ray(ray, work, on_done)

    def run_on_ray(self, ray, work: list[tuple[Any, Any]], on_done: OnDone) -> None:
        per_gpu = self.gpus_per_worker(ray)
        s = self.ray_settings
        self.info["engine"] = {"name": "ray", "workers": s.workers, "gpus_per_worker": per_gpu,
                               "requested_address": s.address, **self.cluster}
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
        problem = getattr(work[0][0], "problem", None)  # the runner's Items (a problem's rows include the query)
        lead = max(work, key=lambda pair: len(pair[0].problem.rows)) if problem is not None else None
        lead = (copy.copy(lead[0]), lead[1]) if lead else None  # its own item: its answer is told apart
        # once, in the object store: an image shared by problems (SMMILE++'s permutations) is pickled once
        shipped = ray.put(dumps((self.args, work, lead)))
        rows = [{"index": i} for i in range(len(work))]
        ds = ray.data.from_items(rows, override_num_blocks=math.ceil(len(rows) / chunk))
        ds = ds.map_batches(Worker, fn_constructor_kwargs={"shipped": [shipped], "versions": worker_versions()},
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
                    info = json.loads(row["info"])
                    self.info["engine"].update(info.pop("worker_runtime"))
                    self.info = {**info, "engine": self.info["engine"]}
                if i in delivered:  # a retried chunk answers again what its dead worker had sent
                    continue
                delivered.add(i)
                on_done(work[i][0], pickle.loads(row["response"]))
        finally:
            close = getattr(rows_out, "close", None)
            if close is not None:
                close()


def worker_versions() -> dict:
    """The package versions a worker must share with the driver (those that can change an answer)."""
    return {k: v for k, v in environment.package_versions().items() if k not in UNCOMPARED}


def version_mismatch(driver: dict, worker: dict, node: str) -> str:
    """One line naming every package whose version differs (or is present on one side only); '' if none."""
    diff = [f"{name} {worker.get(name) or 'absent'} (driver: {driver.get(name) or 'absent'})"
            for name in sorted(set(driver) | set(worker)) if driver.get(name) != worker.get(name)]
    return (f"the Ray worker on {node} has other versions than this process, which can change answers: "
            f"{', '.join(diff)}; install the driver's lock file on every node (docs/scale-out.md)") if diff else ""


class Worker:
    """One Ray actor: checks its versions against the driver's, builds the backend once, fetches the shipped work
    once and answers chunks of its indices. A backend may size itself or probe the model on the whole run (`hf:` /
    `vllm:`): so its first call (every call for vLLM) starts with `lead`, the run's pending problem with the most
    rows, whose answer is dropped."""

    def __init__(self, shipped: list, versions: dict):
        import platform

        import ray

        from ..models.vllm_backend import VLLMBackend

        node = ray.util.get_node_ip_address()
        self.mistake = version_mismatch(versions, worker_versions(), node)
        self.runtime = {"python_version": platform.python_version(), "ray_version": ray.__version__}
        if self.mistake:  # refused before the model loads
            return
        (backend_path, *args), self.work, self.lead = pickle.loads(ray.get(shipped[0]))
        self.backend: Backend = registry.build_backend(backend_path, *args)
        self.every_call = isinstance(self.backend, VLLMBackend)

    def __call__(self, batch: dict) -> dict:
        if self.mistake:
            return {"index": [-1], "response": [b""], "info": [""], "mistake": [self.mistake]}
        indices = [int(i) for i in batch["index"]]
        pairs = [self.work[i] for i in indices]
        index = {id(item): i for i, (item, _) in zip(indices, pairs)}
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
        info = json.dumps({**self.backend.describe(), "worker_runtime": self.runtime}, default=str)
        rows = {"index": list(out), "response": [pickle.dumps(r) for r in out.values()],
                "info": [info if k == 0 else "" for k in range(len(out))], "mistake": [""] * len(out)}
        if mistake:
            for column, value in (("index", -1), ("response", b""), ("info", ""), ("mistake", mistake)):
                rows[column].append(value)
        return rows
