"""Keep API keys and URL credentials out of every message, file and log line."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

MASK = "***"


class Scrubber:
    def __init__(self, *secrets: str | None):
        self.secrets: list[str] = []
        self.add(*secrets)

    def add(self, *secrets: str | None) -> None:
        # longest first, so a secret containing another is masked whole; very short values are not secrets
        self.secrets = sorted({*self.secrets, *(s for s in secrets if s and len(s) >= 6)}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for s in self.secrets:
            text = text.replace(s, MASK)
        return text


def host_of(url: str | None) -> str:
    return (urlsplit(url).hostname or "").lower() if url else ""


def key_may_go_to(url: str | None, official: tuple[str, ...], allowed=(), named: str | None = None) -> bool:
    """Whether a key read from the environment may be sent to `url`: its provider's official host (`official`,
    a leading "." matches any subdomain), a host the user allowed (`--allow-key-for-host`), or the host of the
    variable naming the key's endpoint (`named`, e.g. AZURE_OPENAI_ENDPOINT). No URL: the SDK's own default."""
    host = host_of(url)
    if not url:
        return True
    if any(host == h or (h.startswith(".") and host.endswith(h)) for h in official):
        return True
    return host in {h.lower().strip("[]") for h in allowed} or (bool(named) and host == host_of(named))


def url_has_credentials(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.username or parts.password or parts.query)


def public_url(url: str | None) -> str | None:
    """`url` without user info, query or fragment (what may be written to a manifest)."""
    if not url:
        return url
    p = urlsplit(url)
    host = p.hostname or ""
    host = f"[{host}]" if ":" in host else host  # an IPv6 address keeps its brackets
    netloc = host + (f":{p.port}" if p.port else "")
    return urlunsplit((p.scheme, netloc, p.path, "", ""))
