"""The whole-run check of tests/conftest.py: it sees every way a test can touch the published outputs."""

from __future__ import annotations

import hashlib
import os

from conftest import file_stamps, published_changes


def _tree(tmp_path):
    root = tmp_path / "published"
    (root / "smmile").mkdir(parents=True)
    lines = []
    for name, text in [("a.csv", "x,y\n1,2\n"), ("b.json", "{}")]:
        (root / "smmile" / name).write_text(text)
        lines.append(f"{hashlib.sha256(text.encode()).hexdigest()}  {name}")
    (root / "smmile" / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    return root


def test_untouched_tree_passes(tmp_path):
    root = _tree(tmp_path)
    assert published_changes(root, file_stamps(root)) == []


def test_changed_added_missing_and_rewritten_files_are_reported(tmp_path):
    root = _tree(tmp_path)
    before = file_stamps(root)
    d = root / "smmile"
    (d / "a.csv").write_text("x,y\n1,3\n")
    (d / "a_evaluation.json").write_text("{}")
    (d / "b.json").unlink()
    assert published_changes(root, before) == [f"changed: {d / 'a.csv'}", f"missing: {d / 'b.json'}",
                                               f"appeared: {d / 'a_evaluation.json'}"]


def test_same_bytes_rewritten_is_reported(tmp_path):
    root = _tree(tmp_path)
    before = file_stamps(root)
    target = root / "smmile" / "a.csv"
    target.write_text(target.read_text())
    os.utime(target, ns=(1, 1))  # the clock may not have moved between the two writes
    assert published_changes(root, before) == [f"rewritten: {target}"]
