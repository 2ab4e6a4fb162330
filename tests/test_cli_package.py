"""Issue #9 item 6: every command line is parsed in smmile.cli; the library takes typed arguments and records
the command line through one function."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

from smmile import fsguard
from smmile.runner.manifest import command_line

FRONT = Path(__file__).resolve().parents[1] / "inference_and_evaluation"
PACKAGE = FRONT / "smmile"


def test_manifests_markers_and_locks_record_the_same_command_line(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/opt/bin/inference_qwen.py", "--models", "7B"])
    assert command_line() == ["inference_qwen.py", "--models", "7B"]
    marker = fsguard.write_marker(tmp_path, "test")
    assert json.loads(marker.read_text())["command"] == "inference_qwen.py --models 7B"
    monkeypatch.setattr(sys, "argv", [""])  # an interactive interpreter: no command to record
    assert command_line() == []
    assert json.loads(fsguard.write_marker(tmp_path, "test").read_text())["command"] == ""
