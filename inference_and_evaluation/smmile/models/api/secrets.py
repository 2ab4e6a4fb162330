"""Keep API keys and URL credentials out of every message, file and log line."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

MASK = "***"


class Scrubber:
    def __init__(self, *secrets: str | None):
        # longest first, so a secret containing another is masked whole; very short values are not secrets
        self.secrets = sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True)

    def add(self, secret: str | None) -> None:
        self.secrets = sorted({*self.secrets, *([secret] if secret and len(secret) >= 6 else [])}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for s in self.secrets:
            text = text.replace(s, MASK)
        return text


def url_has_credentials(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.username or parts.password or parts.query)


def public_url(url: str | None) -> str | None:
    """`url` without user info, query or fragment (what may be written to a manifest)."""
    if not url:
        return url
    p = urlsplit(url)
    host = p.hostname or ""
    netloc = host + (f":{p.port}" if p.port else "")
    return urlunsplit((p.scheme, netloc, p.path, "", ""))
