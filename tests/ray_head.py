"""A real Ray cluster, started as users start one: `ray start --head --block` in a process group of its own, on a free
port, with a temporary RAY_TMPDIR (its session file `ray/ray_current_cluster` lies there), token authentication on
(RAY_AUTH_MODE=token, or `auth`; the default token file ~/.ray/auth_token, made as `ray get-auth-token --generate` makes it where
missing). Stopped by SIGTERM to `ray start` (which stops what it started), then SIGKILL to the group; bounded in time."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from childproc import default_signals

RAY = str(Path(sys.executable).with_name("ray"))
START_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict:
    """This process's environment without the Ray variables a user may have set (a driver decides on its own)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_TMPDIR")}
    return {**env, **extra}


class RayHead:
    def __init__(self, cpus: int = 2, auth: str = "token"):
        self.cpus, self.auth = cpus, auth

    def __enter__(self) -> "RayHead":
        if not (Path.home() / ".ray" / "auth_token").is_file():
            subprocess.run([RAY, "get-auth-token", "--generate"], env=clean_env(), capture_output=True, check=True,
                           timeout=60)
        self.tmp = tempfile.mkdtemp(prefix="rh", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.session_file = Path(self.tmp) / "ray" / "ray_current_cluster"
        self.log = Path(self.tmp) / "ray-start.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [RAY, "start", "--head", "--block", f"--num-cpus={self.cpus}", "--num-gpus=0", f"--port={self.port}",
                 "--include-dashboard=false", "--disable-usage-stats"],
                env=clean_env(RAY_TMPDIR=self.tmp, RAY_AUTH_MODE=self.auth), stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=default_signals)  # SIGTERM reaches it
        deadline = time.time() + START_TIMEOUT_S
        while b"Ray runtime started" not in self.log.read_bytes():
            if self.proc.poll() is not None or time.time() > deadline:
                self.__exit__()
                raise RuntimeError(f"ray start --head did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.5)
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for pid in [self.proc.pid, *self.leftovers()]:  # what is left of the group, and of this head's session
            try:
                os.killpg(pid, signal.SIGKILL) if pid == self.proc.pid else os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.proc.wait(10)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def leftovers(self) -> list[int]:
        """Processes whose command line names this head's temporary folder (its GCS, raylet, agents)."""
        pids = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and self.tmp.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
        return pids
