"""Issue #19, 7: a `smmile report` killed with SIGKILL left its drawing workers running (they ignore SIGINT and
SIGTERM) and holding the report's lock, so every rerun was refused. Workers now die with their parent and
never hold its lock; a lock still held after its recorded holder died is taken over."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from childproc import default_signals

from smmile import fsguard
from smmile.errors import UserError

FRONT = Path(__file__).resolve().parents[1] / "inference_and_evaluation"
ENV = dict(os.environ, PYTHONPATH=str(FRONT))
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc to find the workers")


def children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pids: set[int], seconds: float = 5.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return {p for p in pids if alive(p)}


def reap(pids: set[int]) -> None:
    for pid in pids:  # whatever survived a failed test: the test started it
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


HOLD_AND_DRAW = '''
import os, sys, time
from smmile import fsguard
from smmile.report import workers

def job(seconds):
    os.write(1, f"worker {os.getpid()}\\n".encode())
    time.sleep(seconds)
    return seconds

with fsguard.OutputLock(sys.argv[1], "the report"), workers.Pool(2) as pool:
    handles = [pool.submit(job, 60), pool.submit(job, 60)]
    time.sleep(120)
'''


def hold_and_draw(tmp_path) -> tuple[Path, subprocess.Popen, set[int]]:
    """A parent holding a report folder's lock with two drawing workers busy; (folder, parent, worker pids)."""
    out = tmp_path / "report"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", HOLD_AND_DRAW, str(out)], stdout=subprocess.PIPE, text=True,
                            env=ENV, preexec_fn=default_signals)
    return out, proc, {int(proc.stdout.readline().split()[1]) for _ in range(2)}


@linux_only
def test_sigkilled_parent_takes_its_workers_and_its_lock_with_it(tmp_path):
    """Two workers, both busy in a job that would run for a minute; the parent holds the folder's lock."""
    out, proc, workers = hold_and_draw(tmp_path)
    try:
        assert workers <= children(proc.pid)
        with pytest.raises(UserError, match="is being written by"):
            fsguard.OutputLock(out, "the report").acquire()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_gone(workers) == set(), "drawing workers outlived their SIGKILLed parent"
        with fsguard.OutputLock(out, "the report"):
            pass
    finally:
        reap(workers)


@linux_only
def test_workers_do_not_hold_the_lock_of_their_parent(tmp_path):
    """The lock is free the moment the parent dies, before its workers have noticed."""
    out, proc, workers = hold_and_draw(tmp_path)
    try:
        for pid in workers:
            assert not any(os.path.realpath(f"/proc/{pid}/fd/{fd}") == str(out / fsguard.LOCK_IN_FOLDER)
                           for fd in os.listdir(f"/proc/{pid}/fd")), "a worker holds its parent's lock file open"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        wait_gone(workers)
        reap(workers)


def test_a_lock_held_on_after_its_holder_died_is_taken_over(tmp_path):
    """A child of an earlier smmile that still holds the lock (the recorded holder itself is dead)."""
    out = tmp_path / "report"
    out.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    lock = out / fsguard.LOCK_IN_FOLDER
    lock.write_text(json.dumps({"pid": dead_pid, "host": socket.gethostname(), "command": "smmile report"}) + "\n")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               "fd = os.open(sys.argv[1], os.O_RDWR)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
                               "print('ready', flush=True)\ntime.sleep(60)\n", str(lock)],
                              stdout=subprocess.PIPE, text=True, preexec_fn=default_signals)
    try:
        assert holder.stdout.readline() == "ready\n"
        with fsguard.OutputLock(out, "the report") as taken:
            assert json.loads(taken.file.read_text())["pid"] == os.getpid()
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_held_by_a_live_process_is_still_refused(tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    with fsguard.OutputLock(out, "the report"):
        with pytest.raises(UserError, match=rf"process {os.getpid()}"):
            fsguard.OutputLock(out, "the report").acquire()


# ---------------------------------------------------------------- the real command


@pytest.fixture(scope="module")
def results(tmp_path_factory, demo_dir) -> Path:
    from report_fixtures import _baselines
    from smmile.cli.em import main as evaluate_em

    res = tmp_path_factory.mktemp("mend") / "res"
    _baselines("demo", res)
    assert evaluate_em([str(res)]) == 0
    return res


@linux_only
@pytest.mark.parametrize("command", ["report", "figures"])
def test_a_sigkilled_command_leaves_no_worker_and_the_rerun_succeeds(results, tmp_path, command):
    out = tmp_path / "o"
    cmd = [sys.executable, "-m", "smmile.cli", command, str(results), "--out", str(out), "--n-boot", "50",
           "--jobs", "2"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=ENV, cwd=FRONT, preexec_fn=default_signals)
    workers: set[int] = set()
    try:
        for line in proc.stderr:
            if "figures:" in line:
                break
        deadline = time.monotonic() + 10
        while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            workers |= children(proc.pid)
            time.sleep(0.01)
        assert len(workers) == 2, "the command drew too fast to be killed while drawing"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_gone(workers) == set(), f"`smmile {command}` left its drawing workers behind"
    finally:
        proc.kill()
        proc.wait()
        reap(workers)
    rerun = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=FRONT, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert "is being written by" not in rerun.stderr


FORK_HOOK_INTERRUPT = '''
import os, signal, sys
from smmile.report import workers

def interrupt_me():  # a Ctrl-C that lands while Python runs its at-fork hooks in the parent
    os.kill(os.getpid(), signal.SIGINT)

os.register_at_fork(after_in_parent=interrupt_me)
try:
    with workers.Pool(2) as pool:
        pool.submit(abs, -1).result()
except KeyboardInterrupt:
    print("interrupted")
    sys.exit(0)
print("carried on")
sys.exit(1)
'''


def test_a_ctrl_c_during_the_workers_fork_is_not_swallowed():
    """Python prints an exception raised in an at-fork hook as "Exception ignored" and goes on, so a Ctrl-C or
    SIGTERM arriving while the pool forked was lost and the report carried on (flaky under load). The pool holds
    the interrupts while it forks: the Ctrl-C is raised right after."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))
    proc = subprocess.run([sys.executable, "-c", FORK_HOOK_INTERRUPT], capture_output=True, text=True, env=env,
                          timeout=60, preexec_fn=default_signals)
    assert proc.stdout.strip() == "interrupted" and "Exception ignored" not in proc.stderr, proc.stdout + proc.stderr
