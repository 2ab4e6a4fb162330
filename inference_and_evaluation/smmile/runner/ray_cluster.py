"""Which Ray cluster `--engine ray` uses, and getting into it: the address checked before anything loads; without one,
a Ray of the run's own (never the one RAY_ADDRESS or Ray's session file points to); with one, token authentication
where the cluster asks for it, and a cluster that cannot be reached or refuses the token said in one line within
`CONNECT_TIMEOUT_S` per step (the TCP connection, then the cluster's reply)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import sys
import threading

from ..errors import UserError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10  # per step: TCP connection, then the GCS's reply; so one line within 20 s
ADDRESS_HELP = "give the cluster's HOST:PORT (the port of `ray start --head --port`, 6379 by default) or 'auto'"


def check_address(address: str | None) -> None:
    """One line for what Ray could not take as an address: None, 'auto' or HOST:PORT; Ray Client (ray://) is not
    supported (Ray Jobs runs the driver on the cluster: docs/scale-out.md)."""
    if address is None or address == "auto":
        return
    host, sep, port = address.rpartition(":")
    if address.startswith("ray://"):
        raise UserError(f"--ray-address {address}: Ray Client (ray://) is not supported; submit this command as a Ray "
                        "job with --ray-address auto (docs/scale-out.md), or give the head's HOST:PORT")
    if "/" in address or not sep or not host or any(c.isspace() for c in host) or not port.isdigit() \
            or not 0 < int(port) < 65536:
        raise UserError(f"--ray-address {address!r} is not an address: {ADDRESS_HELP}")


def token_mode_if_token() -> bool:
    """Token mode for this process where RAY_AUTH_MODE is unset and it has a token (RAY_AUTH_TOKEN,
    RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token), as Ray decides for `ray start` and `ray.init("auto")`; whether it is on."""
    try:
        from ray._private.authentication import authentication_token_setup as setup
    except ImportError:  # a Ray without token authentication (before 2.52)
        return False
    return setup.maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def describe_auth() -> str:
    mode = os.environ.get("RAY_AUTH_MODE", "disabled").lower()
    if mode != "token":
        why = "RAY_AUTH_MODE=" + os.environ["RAY_AUTH_MODE"] if "RAY_AUTH_MODE" in os.environ else "no token found"
        return (f"Ray auth mode: {mode}, {why}; a cluster with token authentication needs its head's "
                "`ray get-auth-token` here, in ~/.ray/auth_token or RAY_AUTH_TOKEN")
    source = next((f"from {name}" for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH") if os.environ.get(name)),
                  "from ~/.ray/auth_token")
    return f"Ray auth mode: token, the token {source}; it must be the head's `ray get-auth-token`"


# Ray's own lines: on stderr, its C++ core's ("[2026-01-01 12:00:00,000 E 123 123] core_worker.cc:...: ..."), maybe
# forwarded from a raylet ("(raylet) [...]", colour codes around the prefix); on stdout, the raylet's notices
# ("(raylet) A worker died or was killed ...", also when Ray Data ends its actors after a run that succeeded)
RAY_LINES = {2: re.compile(rb"^(\x1b\[\d+m)?(\(\w+\) )?(\x1b\[0m)?\s*\[\d{4}-\d\d-\d\d [\d:,]+ [DIWEF] \d+ \d+\] "),
             1: re.compile(rb"^(\x1b\[\d+m)?\(raylet[,)]")}


@contextlib.contextmanager
def ray_lines_hidden():
    """Ray writes its own lines (E lines about actor restarts and worker deaths on runs that succeed, a line a second
    while a client retries) straight to this process's stderr and stdout: meanwhile both pass through pipes that drop
    them; everything else goes on as written. -v keeps them. Not around a Ray starting: its processes would hold the
    pipes."""
    if log.isEnabledFor(logging.DEBUG):
        yield
        return
    with contextlib.ExitStack() as stack:
        for fd in RAY_LINES:
            stack.enter_context(_filtered(fd))
        yield


@contextlib.contextmanager
def _filtered(fd: int):
    stream, pattern = (sys.stdout, sys.stderr)[fd - 1], RAY_LINES[fd]
    stream.flush()
    read, write = os.pipe()
    saved = os.dup(fd)
    os.dup2(write, fd)
    os.close(write)

    def pump():
        held = b""  # a line that may be Ray's, until its end
        with os.fdopen(read, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                *lines, held = (held + chunk).split(b"\n")
                out = b"".join(line + b"\n" for line in lines if not pattern.match(line))
                if held and not held.startswith((b"[", b"\x1b", b"(")):  # a progress line (\r) goes out at once
                    out, held = out + held, b""
                if out:
                    os.write(saved, out)
            if held and not pattern.match(held):
                os.write(saved, held)

    pumping = threading.Thread(target=pump, daemon=True)
    pumping.start()
    try:
        yield
    finally:
        stream.flush()
        os.dup2(saved, fd)  # the pipe's last writer closes: the pump ends
        pumping.join(5)
        if not pumping.is_alive():  # else a child holds the pipe: the pump may still write to the saved stream
            os.close(saved)


def probe(address: str) -> bool:
    """Whether the Ray cluster at HOST:PORT refuses this process (its auth mode, its token); one line, within
    2 x CONNECT_TIMEOUT_S, where none answers (ray.init would retry for minutes, saying only that it cannot connect)."""
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise UserError(f"--ray-address {address}: cannot connect ({exc.strerror or exc}; gave up after at most "
                        f"{CONNECT_TIMEOUT_S} s); start the cluster with `ray start --head --port {port}`, or leave "
                        "--ray-address out to start a Ray for this run (docs/scale-out.md)") from None
    from ray._raylet import GcsClient
    from ray.exceptions import AuthenticationError

    outcome: list = []

    def ask():
        try:
            GcsClient(address=address)
            outcome.append(None)
        except Exception as exc:  # noqa: BLE001 (said in the one line below)
            outcome.append(exc)

    asking = threading.Thread(target=ask, daemon=True)  # the client blocks for 40 s on a port that is not Ray's
    asking.start()
    asking.join(CONNECT_TIMEOUT_S)
    if not outcome:
        raise UserError(f"--ray-address {address}: something listens there but no Ray cluster answered within "
                        f"{CONNECT_TIMEOUT_S} s; {ADDRESS_HELP}")
    if outcome[0] is not None and not isinstance(outcome[0], AuthenticationError):
        raise UserError(f"--ray-address {address}: no Ray cluster there ({outcome[0]}); {ADDRESS_HELP}")
    return outcome[0] is not None


def connect(ray, address: str | None, num_cpus: int | None) -> bool:
    """ray.init for the run: its own local Ray without an address (True: this run started it), else the cluster at
    `address`."""
    kwargs = {"include_dashboard": False, "logging_level": logging.WARNING, "configure_logging": True,
              "log_to_driver": True}
    # not Ray's "token authentication is enabled for this Ray cluster": a cluster's affair, not this run's
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    if address is None:  # "local": neither RAY_ADDRESS nor the session file of another user's `ray start`
        ray.init(address="local", num_cpus=num_cpus, **kwargs)
        return True
    with ray_lines_hidden():  # the C++ client's line a second while it retries
        # token mode only for a cluster that asks for a token: under a driver in token mode, the actors of a cluster
        # without authentication die as they start (Ray 2.60); where RAY_AUTH_MODE is set, it decides
        if address != "auto" and probe(address) and ("RAY_AUTH_MODE" in os.environ or not token_mode_if_token()
                                                     or probe(address)):
            raise UserError(f"--ray-address {address}: the Ray cluster refused this process ({describe_auth()})")
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError) as exc:
            raise UserError(f"--ray-address {address}: cannot join the Ray cluster ({exc}; {describe_auth()}); "
                            "start one with `ray start --head` (docs/scale-out.md)") from None
    return False


def cluster_record(ray, started: bool) -> dict:
    """The manifest's account of the cluster really used."""
    resources = ray.cluster_resources()
    return {"address": ray.get_runtime_context().gcs_address, "started_by_run": started,
            "nodes": sum(1 for n in ray.nodes() if n.get("Alive")), "cpus": resources.get("CPU", 0),
            "gpus": resources.get("GPU", 0)}
