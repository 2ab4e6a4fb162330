"""`--engine ray` against a cluster started as users start one (`ray start --head --num-cpus 2 --port P`, token
authentication on: tests/ray_head.py; one head for the module): the local engine's CSV byte for byte through
`--ray-address 127.0.0.1:P`; a refused token named in one line; no address: a Ray of the run's own even where
RAY_ADDRESS and Ray's session file point at the head; workers with other versions refused; the work shipped once.
Drivers run as their own processes where the environment matters (RAY_AUTH_MODE, RAY_ADDRESS are process-wide)."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

import tiny_models  # noqa: E402
from ray_head import RayHead, clean_env  # noqa: E402
from smmile import cli  # noqa: E402

pytestmark = pytest.mark.slow

FRONT = Path(__file__).resolve().parents[1] / "inference_and_evaluation"
CORE_LINE = re.compile(r"^\S*\s*\[\d{4}-\d\d-\d\d [\d:,]+ [DIWEF] \d+ \d+\] ", re.M)  # Ray's C++ log lines


@pytest.fixture(scope="module")
def head():
    with RayHead(cpus=2) as h:
        yield h


def run_args(model: str, out: Path, n: int, *extra: str) -> list[str]:
    return ["run", "--model", model, "--inference_mode", "ICL", "--task_format", "open",
            "--dataset", str(tiny_models.demo_subset(n)), "--output-dir", str(out), *extra]


def driver(args: list[str], timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    """`smmile ARGS` as a new process, in an environment without the Ray variables (plus `env`)."""
    path = os.pathsep.join([str(FRONT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "smmile.cli", *args], env=clean_env(PYTHONPATH=path, **env),
                          capture_output=True, text=True, timeout=timeout)


def engine_of(out: Path) -> dict:
    (manifest,) = out.glob("*.manifest.json")
    return json.loads(manifest.read_text())["backend"]["engine"]


def test_token_cluster_by_address_gives_the_local_csv(head, tmp_path):
    """The issue's run: `ray start --head` with token authentication, then --ray-address 127.0.0.1:P with nothing
    else set. It stopped after 20 s with 'cannot reach a Ray cluster' (InvalidAuthToken in the log)."""
    import tiny_generic

    model = f"hf:{tiny_generic.cached('idefics3')}"
    flags = ("--max-new-tokens", "4", "--dtype", "float32")
    assert cli.main(run_args(model, tmp_path / "local", 8, *flags)) == 0
    done = driver(run_args(model, tmp_path / "ray", 8, *flags, "--engine", "ray", "--workers", "2",
                           "--ray-address", head.address))
    assert done.returncode == 0, done.stderr
    (local,), (remote,) = (tmp_path / "local").glob("*.csv"), (tmp_path / "ray").glob("*.csv")
    assert remote.read_bytes() == local.read_bytes()
    engine = engine_of(tmp_path / "ray")
    assert engine["address"].endswith(f":{head.port}") and engine["started_by_run"] is False
    assert (engine["cpus"], engine["workers"], engine["requested_address"]) == (2, 2, head.address)
    assert (engine["ray_version"], engine["python_version"]) == (ray.__version__, platform.python_version())
    assert not CORE_LINE.search(done.stderr), done.stderr  # Ray's C++ lines (core_worker.cc ... E) only with -v
    assert "(raylet)" not in done.stdout + done.stderr  # nor the raylet's notices ("A worker died ...")


@pytest.mark.parametrize("env,says", [({"RAY_AUTH_TOKEN": "0" * 32}, "Ray auth mode: token, the token from "
                                                                       "RAY_AUTH_TOKEN"),
                                      ({"RAY_AUTH_MODE": "disabled"}, "Ray auth mode: disabled, RAY_AUTH_MODE=disabled")])
def test_refused_token_is_one_line_naming_the_auth_mode(head, tmp_path, env, says):
    t0 = time.time()
    done = driver(run_args("majority", tmp_path, 2, "--engine", "ray", "--ray-address", head.address), **env)
    assert done.returncode == 2, done.stderr
    assert time.time() - t0 < 60
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and says in errors[0] and "refused" in errors[0], done.stderr
    assert "Traceback" not in done.stderr and not CORE_LINE.search(done.stderr), done.stderr
    assert not list(tmp_path.glob("*.csv"))


def test_ray_s_own_lines_come_back_with_verbose(head, tmp_path):
    """What the one line above stands for: with -v, Ray's C++ client lines (the refused token, once a second)."""
    done = driver([*run_args("majority", tmp_path, 2, "--engine", "ray", "--ray-address", head.address), "-v"],
                  RAY_AUTH_TOKEN="0" * 32)
    assert done.returncode == 2 and CORE_LINE.search(done.stderr) and "InvalidAuthToken" in done.stderr


def test_a_cluster_without_token_authentication_is_joined_without_a_token(tmp_path):
    """This machine has a token (~/.ray/auth_token) but the cluster runs without authentication: the driver stays in
    Ray's default mode (in token mode, Ray 2.60 kills the cluster's actors as they start)."""
    with RayHead(cpus=2, auth="disabled") as plain:
        done = driver(run_args("majority", tmp_path, 4, "--engine", "ray", "--workers", "2",
                               "--ray-address", plain.address))
    assert done.returncode == 0, done.stderr
    assert engine_of(tmp_path)["address"].endswith(f":{plain.port}")


def test_without_an_address_the_run_starts_its_own_ray(head, tmp_path):
    """RAY_ADDRESS and Ray's session file (ray_current_cluster in RAY_TMPDIR) both point at the head: the run still
    starts a Ray of its own, with --num-cpus CPUs, and the manifest says which."""
    assert head.session_file.read_text().strip().endswith(f":{head.port}")
    done = driver(run_args("majority", tmp_path, 4, "--engine", "ray", "--num-cpus", "1"),
                  RAY_ADDRESS=head.address, RAY_TMPDIR=head.tmp)
    assert done.returncode == 0, done.stderr
    engine = engine_of(tmp_path)
    assert engine["started_by_run"] is True and not engine["address"].endswith(f":{head.port}")
    assert (engine["cpus"], engine["requested_address"]) == (1, None)
    assert "Token authentication is enabled" not in done.stderr and not CORE_LINE.search(done.stderr)


def test_workers_with_other_versions_are_refused(head, tmp_path, monkeypatch, capsys):
    """The driver (this process) says it has another transformers than the cluster's workers: one line, exit 2,
    before a model loads."""
    from smmile import environment

    real = environment.package_versions()
    monkeypatch.setattr(environment, "package_versions", lambda: {**real, "transformers": "0.0.1"})
    # this process turns to token mode here and stays in it (RAY_AUTH_MODE=token, as Ray's own ray.init does):
    # Ray's settings outlive a test, so a restored environment would disagree with them
    assert cli.main(run_args("majority", tmp_path, 2, "--engine", "ray", "--ray-address", head.address)) == 2
    err = capsys.readouterr().err
    assert f"transformers {real['transformers']} (driver: 0.0.1)" in err and "lock file on every node" in err
    assert not ray.is_initialized()  # the driver left the cluster


def test_the_work_is_shipped_once(head, tmp_path, monkeypatch):
    """One object in Ray's object store holds the pending work; the dataset's rows are indices only (every request,
    images included, was pickled into the rows before)."""
    import ray.data

    puts, rows = [], []
    real_put, real_from_items = ray.put, ray.data.from_items
    monkeypatch.setattr(ray, "put", lambda value, **kw: puts.append(value) or real_put(value, **kw))
    monkeypatch.setattr(ray.data, "from_items", lambda items, **kw: rows.extend(items) or real_from_items(items, **kw))
    assert cli.main(run_args("majority", tmp_path, 4, "--engine", "ray", "--ray-address", head.address)) == 0
    assert rows == [{"index": i} for i in range(4)]
    (shipped,) = [value for value in puts if isinstance(value, bytes)]  # Ray Data puts its own objects besides
    _, work, _ = ray.cloudpickle.loads(shipped)
    assert len(work) == 4


@pytest.mark.parametrize("address", ["garbage", "", "http://x", "ray://127.0.0.1:1", "127.0.0.1:0", "host:99999"])
def test_a_malformed_address_is_one_line_before_anything_loads(tmp_path, capsys, address):
    from smmile.cli.local_models import qwen_main

    assert cli.main(run_args("majority", tmp_path / "run", 2, "--engine", "ray", "--ray-address", address)) == 2
    assert qwen_main(["--engine", "ray", "--ray-address", address, "--dataset", str(tiny_models.demo_subset(2)),
                      "--output-dir", str(tmp_path / "qwen")]) == 2
    err = capsys.readouterr().err
    assert err.count("error: --ray-address") == 2 and "Traceback" not in err
    assert not ray.is_initialized() and not (tmp_path / "run").exists()


def test_an_unreachable_address_gives_up_in_time(tmp_path, capsys):
    """Nothing listens (refused at once), or something that is not Ray listens (no reply within 10 s)."""
    import socket

    from smmile.runner.ray_cluster import CONNECT_TIMEOUT_S

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        nothing = f"127.0.0.1:{closed.getsockname()[1]}"
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        for address, says in ((nothing, "cannot connect"), (f"127.0.0.1:{silent.getsockname()[1]}", "no Ray cluster")):
            t0 = time.time()
            assert cli.main(run_args("majority", tmp_path, 2, "--engine", "ray", "--ray-address", address)) == 2
            assert time.time() - t0 < 2 * CONNECT_TIMEOUT_S + 5
            assert says in capsys.readouterr().err
    assert not ray.is_initialized()


def test_num_cpus_only_for_a_ray_the_run_starts(tmp_path, capsys):
    assert cli.main(run_args("majority", tmp_path, 2, "--engine", "ray", "--ray-address", "auto",
                             "--num-cpus", "2")) == 2
    assert "--num-cpus sizes a Ray this run starts" in capsys.readouterr().err
    assert cli.main(run_args("majority", tmp_path, 2, "--num-cpus", "2")) == 2
    assert "--num-cpus only apply with --engine ray" in capsys.readouterr().err


def test_version_mismatch_line():
    from smmile.runner.ray_engine import version_mismatch

    assert version_mismatch({"torch": "2.5.1"}, {"torch": "2.5.1"}, "n") == ""
    line = version_mismatch({"torch": "2.5.1", "vllm": "0.8"}, {"torch": "2.6.0"}, "10.0.0.2")
    assert "10.0.0.2" in line and "torch 2.6.0 (driver: 2.5.1), vllm absent (driver: 0.8)" in line


def test_ray_s_own_lines_are_dropped_the_rest_passes(capfd):
    """The filter itself: the raylet's notice on stdout and a C++ core line on stderr go; the rest, a progress line
    without its end included, comes through as written."""
    from smmile.runner.ray_cluster import ray_lines_hidden

    with ray_lines_hidden():
        os.write(1, b"\x1b[33m(raylet)\x1b[0m A worker died or was killed while executing a task by an unexpected "
                    b"system error.\n(MapWorker pid=7) kept\n")
        os.write(2, b"[2026-12-03 01:27:14,532 E 25340 25340] core_worker.cc:2465: Actor with class name ...\n"
                    b"kept\n\rrun: 1/2 problems")
    assert capfd.readouterr() == ("(MapWorker pid=7) kept\n", "kept\n\rrun: 1/2 problems")
