"""Where an API key may travel, checked at the HTTP layer of every SDK client smmile builds: each request (redirects,
Anthropic's `results_url` and file downloads included) goes over https to a host allowed for its key, or over plain
http to a loopback server, or is refused before it is sent. And the one exception hook of the API paths: any failure
leaves as one line with the keys masked, exit 2 (the user's to fix) or 1 (the provider's)."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import traceback
from typing import Callable

from ...errors import UserError
from .secrets import Scrubber

log = logging.getLogger(__name__)


class EgressRefused(Exception):
    """A request to a place its key may not go: raised by the request hook, before anything is sent."""


class ApiFailure(UserError):
    """The provider (or the network) failed: one line, exit 1; rerunning the same command resumes."""

    exit_code = 1


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def scheme_ok(scheme: str, host: str) -> bool:
    """https anywhere; plain http to this machine only (a local server: nothing leaves it)."""
    return scheme == "https" or (scheme == "http" and is_loopback(host))


class Egress:
    """The request hook of one key: `allowed(host)` says whether the key may go to `host`."""

    def __init__(self, allowed: Callable[[str], bool], what: str, any_scheme: bool = False):
        self.allowed, self.what, self.any_scheme = allowed, what, any_scheme

    def check(self, request) -> None:
        url = request.url
        # as the socket will connect: ASCII (IDNA-encoded: a look-alike is never the real host), lower case,
        # user info and brackets gone
        host = url.raw_host.decode("ascii", "replace").lower()
        if not self.any_scheme and not scheme_ok(url.scheme, host):
            raise EgressRefused(f"refused to send {self.what} over {url.scheme} to {fmt_host(host)} (https only, "
                                "plain http only to this machine)")
        if not self.allowed(host):
            raise EgressRefused(f"refused to send {self.what} to {fmt_host(host)}, a host it is not allowed to go to "
                                "(--allow-key-for-host names the hosts it may go to)")

    async def acheck(self, request) -> None:
        self.check(request)

    def http_client(self, sdk, asynchronous: bool):
        """The SDK's own default httpx client (its timeouts, limits, redirects), with this hook on every request."""
        if asynchronous:
            return sdk.DefaultAsyncHttpxClient(event_hooks={"request": [self.acheck]})
        return sdk.DefaultHttpxClient(event_hooks={"request": [self.check]})


def fmt_host(host: str) -> str:
    """A host as written in a URL: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def refusal(exc: BaseException) -> EgressRefused | None:
    """The EgressRefused behind `exc` (an SDK wraps it in its connection error), if any."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, EgressRefused):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


@contextlib.contextmanager
def one_line(scrub: Scrubber, describe: Callable[[BaseException], tuple[str, int]]):
    """Every exception leaving the block becomes one line with the keys masked: a UserError keeps its kind,
    anything else is `describe(exc)` -> (message, exit code). The traceback, masked, is logged at debug level."""
    try:
        yield
    except (KeyboardInterrupt, SystemExit):
        raise
    except UserError as exc:
        if scrub(str(exc)) == str(exc):
            raise
        err = UserError(scrub(str(exc)))
        err.exit_code = exc.exit_code
        raise err from None
    except Exception as exc:  # noqa: BLE001 - the one hook: no traceback (and no key) reaches the terminal
        log.debug("%s", scrub("".join(traceback.format_exception(type(exc), exc, exc.__traceback__))))
        message, code = describe(exc)
        err = UserError(scrub(message)) if code == 2 else ApiFailure(scrub(message))
        raise err from None

