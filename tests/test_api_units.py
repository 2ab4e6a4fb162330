"""Unit tests of the API building blocks: retry policy, Retry-After, scrubbing, image encoding, accounting."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from smmile.models.api.accounting import CostMeter, price_for
from smmile.models.api.request import encode_png
from smmile.models.api.retry import Failure, RetryPolicy, parse_retry_after, status_failure
from smmile.models.api.secrets import Scrubber, public_url, url_has_credentials
from smmile.protocol.problem import ImageRef


def png(mode: str, size=(300, 120)) -> ImageRef:
    buf = io.BytesIO()
    Image.new(mode, size).save(buf, format="PNG" if mode != "CMYK" else "TIFF")
    return ImageRef(buf.getvalue())


def test_backoff_grows_with_jitter_and_caps():
    policy = RetryPolicy(max_retries=3, base=1.0, cap=4.0)
    transient = Failure("x", True)
    for attempt, hi in [(0, 1.0), (1, 2.0), (2, 4.0), (5, 4.0)]:
        delays = {policy.delay(transient, attempt) for _ in range(50)}
        assert all(hi / 2 <= d <= hi for d in delays) and len(delays) > 1
    assert policy.should_retry(transient, 2) and not policy.should_retry(transient, 3)
    assert not policy.should_retry(Failure("bad request", False), 0)


def test_retry_after_wins_over_backoff():
    policy = RetryPolicy(max_retries=3, base=0.01, max_retry_after=10)
    assert 2.0 <= policy.delay(Failure("x", True, retry_after=2.0), 0) <= 2.2
    assert policy.delay(Failure("x", True, retry_after=500.0), 0) <= 11.0
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({}) is None


@pytest.mark.parametrize("status,transient", [(429, True), (500, True), (503, True), (529, True), (408, True),
                                              (400, False), (401, False), (413, False), (404, False)])
def test_status_classification(status, transient):
    assert status_failure("m", status).transient is transient


def test_scrubber_masks_every_secret():
    scrub = Scrubber("sk-abcdef123456", None, "")
    scrub.add("tok-999999")
    assert scrub("key sk-abcdef123456 and tok-999999!") == "key *** and ***!"
    assert public_url("https://u:p@host.example:8443/v1?api-key=s3cret#x") == "https://host.example:8443/v1"
    assert url_has_credentials("http://u:p@h/v1") and url_has_credentials("http://h/v1?key=1")
    assert not url_has_credentials("http://127.0.0.1:8000/v1")


@pytest.mark.parametrize("mode,expected", [("RGB", "RGB"), ("RGBA", "RGBA"), ("L", "RGB"), ("P", "RGB"),
                                           ("CMYK", "RGB"), ("I;16", "RGB")])
def test_encoding_converts_to_rgb_unless_rgb_or_rgba(mode, expected):
    import base64

    enc = encode_png(png(mode))
    img = Image.open(io.BytesIO(base64.b64decode(enc.b64)))
    assert (img.format, img.mode, img.size, enc.media_type) == ("PNG", expected, (300, 120), "image/png")
    assert not enc.downscaled


def test_downscale_keeps_aspect():
    enc = encode_png(png("RGB"), max_side=150)
    assert enc.size == (150, 60) and enc.original == (300, 120) and enc.downscaled
    assert encode_png(png("RGB"), max_side=1000).size == (300, 120)


def test_cost_meter():
    meter = CostMeter(price_for("any-model", "2.5:10"), max_cost=0.01)
    usage = {"input_tokens": 1000, "output_tokens": 500}
    assert meter.cost_of(usage) == pytest.approx(0.0075)
    meter.add(usage)
    assert not meter.exhausted()
    meter.add(usage)
    assert meter.exhausted() and meter.describe()["estimated_cost_usd"] == pytest.approx(0.015)
    assert CostMeter(None).cost is None
