"""`--engine ray` on a local CPU Ray (2 CPUs, 127.0.0.1, one session for the module): the same CSV bytes as the
local engine, with a tiny hf: checkpoint and the baselines; a worker killed mid-run; a rerun that sends nothing;
Ctrl-C keeping what was received; the GPU check; Ray never imported where it is not used."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

import tiny_models  # noqa: E402
from childproc import default_signals  # noqa: E402
from smmile import cli  # noqa: E402

pytestmark = pytest.mark.slow

FRONT = Path(__file__).resolve().parents[1] / "inference_and_evaluation"


@pytest.fixture(scope="module")
def cluster():
    """One local Ray for the module: 2 CPUs, no dashboard, loopback only; its address for `--ray-address`."""
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", logging_level="WARNING")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def smmile_run(model: str, out: Path, n: int, *extra: str, fmt: str = "open", mode: str = "ICL") -> int:
    return cli.main(["run", "--model", model, "--inference_mode", mode, "--task_format", fmt,
                     "--dataset", str(tiny_models.demo_subset(n)), "--output-dir", str(out), *extra])


def only_csv(out: Path) -> bytes:
    (csv,) = out.glob("*.csv")
    return csv.read_bytes()


def journal_keys(out: Path) -> list[str]:
    (journal,) = (out / ".smmile").glob("*.journal.jsonl")
    return [json.loads(line)["key"] for line in journal.read_text().splitlines() if line.strip()]


def tiny_hf() -> str:
    import tiny_generic

    return f"hf:{tiny_generic.cached('idefics3')}"


HF_FLAGS = ("--max-new-tokens", "4", "--dtype", "float32")


@pytest.mark.parametrize("model,fmt", [("majority", "open"), ("random", "mcqa"), ("random", "open")])
def test_baselines_same_csv_as_local(cluster, tmp_path, model, fmt):
    assert smmile_run(model, tmp_path / "local", 12, fmt=fmt) == 0
    assert smmile_run(model, tmp_path / "ray", 12, "--engine", "ray", "--workers", "2", fmt=fmt) == 0
    assert only_csv(tmp_path / "ray") == only_csv(tmp_path / "local")
    keys = journal_keys(tmp_path / "ray")
    assert len(keys) == len(set(keys)) == 12


def test_hf_same_csv_as_local_and_rerun_sends_nothing(cluster, tmp_path, capsys):
    model = tiny_hf()
    assert smmile_run(model, tmp_path / "local", 8, *HF_FLAGS) == 0
    assert smmile_run(model, tmp_path / "ray", 8, *HF_FLAGS, "--engine", "ray", "--workers", "2",
                      "--ray-address", cluster) == 0
    assert only_csv(tmp_path / "ray") == only_csv(tmp_path / "local")
    keys = journal_keys(tmp_path / "ray")
    assert len(keys) == len(set(keys)) == 8
    (manifest,) = (tmp_path / "ray").glob("*.manifest.json")
    engine = json.loads(manifest.read_text())["backend"]["engine"]
    assert (engine["name"], engine["workers"], engine["gpus_per_worker"]) == ("ray", 2, 0)
    assert json.loads(manifest.read_text())["backend"]["model_class"]  # the workers' backend entry, model loaded
    capsys.readouterr()
    assert smmile_run(model, tmp_path / "ray", 8, *HF_FLAGS, "--engine", "ray", "--workers", "2") == 0
    assert "(8 problems, 0 computed this run)" in capsys.readouterr().out
    assert journal_keys(tmp_path / "ray") == keys


def _worker_pids() -> set[int]:
    """Ray Data's actor processes (their title is ray::MapWorker(...)) running on this machine."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"MapWorker" in cmdline:
                pids.add(int(entry.name))
    return pids


def _journal_lines(out: Path) -> int:
    journals = list((out / ".smmile").glob("*.journal.jsonl")) if (out / ".smmile").is_dir() else []
    return sum(1 for line in journals[0].read_text().splitlines() if line.strip()) if journals else 0


def test_killed_worker_is_replaced_nothing_lost_or_doubled(cluster, tmp_path):
    """SIGKILL one worker once the first responses are journaled: the run still ends with the local engine's
    CSV, every problem journaled once."""
    model, n = tiny_hf(), 12
    flags = ("--max-new-tokens", "12", "--dtype", "float32")
    assert smmile_run(model, tmp_path / "local", n, *flags) == 0
    killed: list[tuple[int, int]] = []  # (pid, journal lines when it was killed)
    done = threading.Event()

    def killer():
        while not done.is_set():
            lines = _journal_lines(tmp_path / "ray")
            pids = _worker_pids()
            if lines >= 1 and pids:
                pid = min(pids)
                os.kill(pid, signal.SIGKILL)
                killed.append((pid, lines))
                return
            time.sleep(0.05)

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        assert smmile_run(model, tmp_path / "ray", n, *flags, "--engine", "ray", "--workers", "2") == 0
    finally:
        done.set()
        thread.join()
    assert killed and killed[0][1] < n, "the worker was not killed mid-run"
    assert only_csv(tmp_path / "ray") == only_csv(tmp_path / "local")
    keys = journal_keys(tmp_path / "ray")
    assert len(keys) == len(set(keys)) == n


def test_ctrl_c_keeps_what_was_received(cluster, tmp_path):
    """Ctrl-C on the driver (a separate process, joining the module's cluster): exit 130, the journaled responses
    stay, the workers stop; the rerun finishes the rest and writes the local engine's CSV."""
    model, n = tiny_hf(), 12
    flags = ("--max-new-tokens", "12", "--dtype", "float32")
    assert smmile_run(model, tmp_path / "local", n, *flags) == 0
    out = tmp_path / "ray"
    args = ["run", "--model", model, "--inference_mode", "ICL", "--task_format", "open", "--dataset",
            str(tiny_models.demo_subset(n)), "--output-dir", str(out), *flags, "--engine", "ray", "--workers", "2",
            "--ray-address", cluster]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FRONT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "smmile.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
    deadline = time.time() + 240
    while _journal_lines(out) < 1 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "finished problems are kept in the journal" in err
    kept = journal_keys(out)
    assert 1 <= len(kept) == len(set(kept)) < n
    for _ in range(100):  # the interrupted job's workers go with it
        if not _worker_pids():
            break
        time.sleep(0.1)
    assert not _worker_pids()
    assert smmile_run(model, out, n, *flags, "--engine", "ray", "--workers", "2") == 0
    assert only_csv(out) == only_csv(tmp_path / "local")
    keys = journal_keys(out)
    assert keys[:len(kept)] == kept and len(keys) == len(set(keys)) == n


def test_fewer_gpus_than_asked(cluster, tmp_path, capsys):
    code = smmile_run("majority", tmp_path, 4, "--engine", "ray", "--workers", "2", "--gpus-per-worker", "1")
    assert code == 2
    assert "the Ray cluster has 0 GPU(s); --workers 2 --gpus-per-worker 1 asks for 2" in capsys.readouterr().err


def test_ray_flags_need_the_ray_engine(tmp_path, capsys):
    assert smmile_run("majority", tmp_path, 4, "--workers", "2") == 2
    assert "--workers only apply with --engine ray" in capsys.readouterr().err


def test_ray_is_not_imported_without_the_ray_engine(tmp_path):
    """--help, parsing --engine ray, and a local run never import Ray."""
    code = f"""
import contextlib, io, sys
from smmile import cli
from smmile.cli.local_models import qwen_main
from smmile.cli.run import build_parser
with contextlib.redirect_stdout(io.StringIO()):
    for main, argv in ((cli.main, ["run", "--help"]), (qwen_main, ["--help"])):
        try:
            main(argv)
        except SystemExit:
            pass
build_parser().parse_args(["--model", "majority", "--engine", "ray", "--workers", "2"])
assert cli.main(["run", "--model", "majority", "--dataset", {str(tiny_models.demo_subset(4))!r},
                 "--output-dir", {str(tmp_path)!r}]) == 0
print("ray" in sys.modules, file=sys.stderr)
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FRONT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "False"



def _front_door_flags(*argv: str):
    import argparse

    from smmile.cli.local_models import add_local_flags, engine_fields, spec_for

    p = argparse.ArgumentParser()
    p.add_argument("--inference_mode", default="ICL")
    add_local_flags(p, output_dir=True)
    a = p.parse_args(list(argv))
    fields = engine_fields(a, spec_for(a, "qwen3B", "open").settings, vllm=a.backend == "vllm")
    return fields, fields.pop("settings").as_dict()


def test_front_door_engine_flags():
    """The local-model front doors take the flags; with vLLM, --gpus-per-worker G is tensor parallelism G."""
    fields, settings = _front_door_flags("--engine", "ray", "--workers", "3", "--ray-address", "auto")
    assert (fields["engine"], fields["ray"].address, fields["ray"].workers, fields["ray"].gpus_per_worker) == \
        ("ray", "auto", 3, None)
    assert "tensor_parallel_size" not in settings
    fields, settings = _front_door_flags("--backend", "vllm", "--engine", "ray", "--gpus-per-worker", "4")
    assert settings["tensor_parallel_size"] == 4 and fields["ray"].gpus_per_worker == 4
    from smmile.errors import UserError

    with pytest.raises(UserError, match="disagree"):
        _front_door_flags("--backend", "vllm", "--tensor-parallel-size", "2", "--engine", "ray",
                          "--gpus-per-worker", "4")
    with pytest.raises(UserError, match="whole GPUs"):
        _front_door_flags("--backend", "vllm", "--engine", "ray", "--gpus-per-worker", "1.5")
    assert _front_door_flags()[0] == {}


def test_a_worker_s_user_error_is_one_line(cluster, tmp_path, capsys):
    """A checkpoint the workers cannot load (a hub id, offline, not cached) stops the run with the local engine's
    one line and exit status 2, not a Ray traceback."""
    from smmile.cli.local_models import medgemma_main

    code = medgemma_main(["--engine", "ray", "--workers", "2", "--dataset", str(tiny_models.demo_subset(2)),
                          "--output-dir", str(tmp_path)])
    assert code == 2
    assert "error: cannot load model google/medgemma-4b-it" in capsys.readouterr().err
