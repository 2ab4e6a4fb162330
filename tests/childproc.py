"""Children that a test will signal start with default signal dispositions.

A suite started under `nohup ... &`, cron or many CI runners ignores SIGINT (and sometimes SIGTERM); an ignored
disposition survives exec, so a child would never see the Ctrl-C the test sends it. Pass
`preexec_fn=default_signals` to every Popen whose child gets a signal.
"""

import signal


def default_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
