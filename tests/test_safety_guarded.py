"""cli.common.guarded: one line and the right exit status for user mistakes, Ctrl-C and unwritable paths."""

from __future__ import annotations

import errno

import pytest

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


@pytest.mark.parametrize("code,status", [(errno.EROFS, 2), (errno.EACCES, 2), (errno.ENOTDIR, 2),
                                         (errno.ENOSPC, 1)])
def test_os_error_on_a_named_path_is_one_line(capsys, code, status):
    assert fd.guarded(_raise(OSError(code, "msg", "/some/out.csv"))) == status
    assert capsys.readouterr().err == "error: msg: /some/out.csv\n"


def test_other_os_errors_keep_their_traceback():
    with pytest.raises(ConnectionRefusedError):
        fd.guarded(_raise(ConnectionRefusedError(errno.ECONNREFUSED, "refused")))
    with pytest.raises(FileNotFoundError):  # a missing file is not a user's path error by itself
        fd.guarded(_raise(FileNotFoundError(errno.ENOENT, "gone", "/x")))


def test_a_real_sigint_gives_the_message_exit_130_and_no_traceback():
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, time\nfrom smmile.cli import common as fd\n"
            "def main():\n    print('ready', flush=True)\n    time.sleep(60)\n"
            "sys.exit(fd.guarded(main, interrupted='interrupted: nothing to keep'))\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "inference_and_evaluation"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and err.strip() == "interrupted: nothing to keep"
