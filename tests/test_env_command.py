"""`smmile env`: installed versions that can change results beside the paper's pins, from the manifest's code."""

import json
import re
from importlib import metadata
from pathlib import Path

import pytest

from smmile import environment
from smmile.cli import main as smmile

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.paper_env  # holds under every lock (scripts/check_paper_envs.sh)


def paper_pins_from_requirement_file() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements-paper.txt").read_text().splitlines():
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line.split("#")[0].strip())
        if match:
            pins[match[1].lower()] = match[2]
    return pins


def installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def same_release(version: str | None, pin: str) -> bool:
    return version is not None and version.split("+")[0].split(".")[:len(pin.split("."))] == pin.split(".")


def test_env_lists_installed_versions_beside_the_papers_and_what_paper_does(capsys):
    """Whatever lock this environment was built from (main: transformers 5, no qwen-vl-utils; paper: the pins)."""
    assert smmile(["env", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["package"]: r for r in data["packages"]}
    for name in ("torch", "transformers", "tokenizers", "pillow", "qwen-vl-utils"):
        assert rows[name]["installed"] == installed(name), name
    expected = paper_pins_from_requirement_file()  # the paper's environment as requirements-paper.lock installs it
    for name in ("torch", "transformers", "tokenizers", "qwen-vl-utils", "accelerate", "datasets", "torchvision"):
        assert rows[name]["paper"] == expected[name], name
        assert rows[name]["differs"] == (not same_release(installed(name), expected[name])), name
    transformers = rows["transformers"]
    assert (transformers["under_protocol_paper"] is not None) == transformers["differs"]
    if transformers["differs"]:
        assert "docs/images.md" in transformers["under_protocol_paper"]
    assert rows["pillow"]["paper"] is None and not rows["pillow"]["differs"]  # the original did not pin it
    backends = {r["family"]: r for r in data["image_backend"]}
    assert {"QwenFamily", "Llama32VFamily", "LlavaFamily", "MedGemmaFamily", "MedR1Family"} <= set(backends)
    assert {r["paper"] for r in backends.values()} == {"pil"}
    assert "accelerator" in data and data["accelerator"]["cuda_available"] in (True, False)


def test_env_text_marks_each_difference(capsys):
    assert smmile(["env"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("transformers "))
    mark = "!" if not same_release(installed("transformers"), "4.51.0") else " "
    assert installed("transformers") in line and re.search(rf"4\.51\.0 +{re.escape(mark)} ", line)
    assert "accelerator:" in out and "--protocol corrected" in out


def test_manifests_record_the_same_versions_env_shows():
    """One record of versions: the manifest's `packages` is what `smmile env` reads."""
    recorded = environment.package_versions()
    assert recorded["transformers"] == metadata.version("transformers")
    assert recorded["tokenizers"] == metadata.version("tokenizers")
    assert recorded["python"] and recorded.get("qwen-vl-utils") == installed("qwen-vl-utils")
