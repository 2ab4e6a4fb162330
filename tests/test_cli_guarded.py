"""cli.common.guarded: one line and the right exit status for user mistakes, Ctrl-C and unwritable paths."""

from __future__ import annotations

import errno

import pytest
from childproc import default_signals

from smmile.cli import common as fd
from smmile.errors import UserError


def _raise(exc):
    def main():
        raise exc
    return main


def test_ctrl_c_prints_the_commands_own_message_and_exits_130(capsys):
    assert fd.guarded(_raise(KeyboardInterrupt()), interrupted="interrupted: the report was not written") == 130
    err = capsys.readouterr().err
    assert err.strip() == "interrupted: the report was not written"
    assert "Traceback" not in err


def test_default_ctrl_c_message_does_not_talk_about_a_journal(capsys):
    assert fd.guarded(_raise(KeyboardInterrupt())) == 130
    assert "journal" not in capsys.readouterr().err
    assert "journal" in fd.INTERRUPTED_RUN


def test_user_error_is_one_line_exit_2(capsys):
    assert fd.guarded(_raise(UserError("bad flag"))) == 2
    assert capsys.readouterr().err == "error: bad flag\n"


@pytest.mark.parametrize("code,status", [(errno.EROFS, 2), (errno.EACCES, 2), (errno.ENOTDIR, 2)])
def test_os_error_on_a_named_path_is_one_line(capsys, code, status):
    assert fd.guarded(_raise(OSError(code, "msg", "/some/out.csv"))) == status
    assert capsys.readouterr().err == "error: msg: /some/out.csv\n"


def test_other_os_errors_keep_their_traceback():
    with pytest.raises(ConnectionRefusedError):
        fd.guarded(_raise(ConnectionRefusedError(errno.ECONNREFUSED, "refused")))
    with pytest.raises(FileNotFoundError):  # a missing file is not a user's path error by itself
        fd.guarded(_raise(FileNotFoundError(errno.ENOENT, "gone", "/x")))


SLEEPER = ("import sys, time\nfrom smmile.cli import common as fd\n"
           "def main():\n    print('ready', flush=True)\n    time.sleep(60)\n"
           "sys.exit(fd.guarded(main, interrupted='interrupted: nothing to keep'))\n")


@pytest.mark.parametrize("signame,status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_real_signal_gives_the_message_its_exit_status_and_no_traceback(signame, status):
    """Ctrl-C exits 130; SIGTERM (Slurm at a time limit or scancel, `kill`) is treated the same and exits 143."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))
    proc = subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, preexec_fn=default_signals)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(getattr(signal, signame))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == status and err.strip() == "interrupted: nothing to keep"


def test_the_sigterm_handler_is_only_there_while_the_command_runs():
    import signal

    before = signal.getsignal(signal.SIGTERM)
    during = []
    assert fd.guarded(lambda: during.append(signal.getsignal(signal.SIGTERM)) or 0) == 0
    assert during[0] is not before and signal.getsignal(signal.SIGTERM) is before


def test_guarded_runs_in_a_thread_without_touching_signals():
    import threading

    codes = []
    worker = threading.Thread(target=lambda: codes.append(fd.guarded(lambda: 0)))
    worker.start()
    worker.join()
    assert codes == [0]


POOL = '''
import os, sys, time
from smmile.cli import common as fd
from smmile.report import workers

def job(seconds):
    os.write(1, b"ready\\n")  # one write: the two workers' lines do not interleave
    time.sleep(seconds)
    return seconds

def main():
    with workers.Pool(2) as pool:
        quick, slow = pool.submit(job, 0), pool.submit(job, 1)
        quick.result()
        time.sleep(60)
    return 0

sys.exit(fd.guarded(main, interrupted="interrupted: stopped"))
'''


@pytest.mark.parametrize("signame,status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_to_the_whole_process_group_leaves_no_worker_traceback(signame, status):
    """A terminal (Ctrl-C) and Slurm (SIGTERM) signal every process of the job: the report's drawing workers,
    one busy and one idle, leave the interrupt to their parent."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))
    proc = subprocess.Popen([sys.executable, "-c", POOL], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True, preexec_fn=default_signals)
    assert proc.stdout.readline() == "ready\n" and proc.stdout.readline() == "ready\n"
    time.sleep(0.3)  # the quick job's worker is back waiting for work
    os.killpg(proc.pid, getattr(signal, signame))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == status and err.strip() == "interrupted: stopped", err


SLOW_RUN = '''
import sys, time
from pathlib import Path
from smmile.cli.common import INTERRUPTED_RUN, guarded
from smmile.models import registry
from smmile.models.base import Backend, Response
from smmile.runner.run import RunSpec, run

class Slow(Backend):
    name = "slow"
    def generate(self, work, on_done):
        for item, choice in work:
            with open(sys.argv[2], "a") as log:
                log.write(item.problem_id + "\\n")
            time.sleep(0.05)
            on_done(item, Response(text=choice))

sys.modules["slowmod"] = sys.modules[__name__]
registry.register(registry.Preset("slow", "slow", "baselines:BaselineFamily", "slowmod:Slow", "slow",
                                  family_args={"kind": "random"}))
spec = RunSpec(model="slow", fmt="mcqa", dataset="demo", output_dir=Path(sys.argv[1]), quiet=True)
sys.exit(guarded(lambda: run(spec).exit_code, interrupted=INTERRUPTED_RUN))
'''


def test_sigterm_during_a_run_keeps_the_journal_and_the_rerun_resumes(tmp_path):
    """Slurm's SIGTERM at a time limit: exit 143, no final CSV, the finished problems journaled; the same
    command continues where it stopped."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    script, calls, out = tmp_path / "run.py", tmp_path / "calls.txt", tmp_path / "o"
    script.write_text(SLOW_RUN)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))
    cmd = [sys.executable, str(script), str(out), str(calls)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=default_signals)
    deadline = time.monotonic() + 60
    while (not calls.exists() or len(calls.read_text().split()) < 5) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "Traceback" not in err
    assert err.strip().endswith(fd.INTERRUPTED_RUN)
    assert not list(out.glob("*.csv")) and not [p for p in out.rglob("*") if ".tmp" in p.name]
    journaled = len((out / ".smmile" / "result_slow_ICL_mcqa.journal.jsonl").read_text().splitlines())
    assert 4 <= journaled < 24
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and f"{24 - journaled} computed this run" in again.stderr


def test_output_piped_into_a_reader_that_stops_is_no_traceback():
    """`smmile env | head -2`: the reader goes away; the command stops quietly with SIGPIPE's status."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys\nfrom smmile.cli import common as fd\n"
            "def main():\n    for i in range(200000):\n        print('line', i)\n    return 0\n"
            "sys.exit(fd.guarded(main))\n")
    front = Path(__file__).resolve().parents[1] / "inference_and_evaluation"
    proc = subprocess.run(f"{sys.executable} -c \"$CODE\" | head -2", shell=True, capture_output=True, text=True,
                          cwd=front, env={"CODE": code, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(front)},
                          timeout=60)
    assert proc.stdout == "line 0\nline 1\n" and "Traceback" not in proc.stderr and "Error" not in proc.stderr
