"""docs/architecture.md names only what exists: every backticked path (``runner/executor.py``, ``docs/images.md``,
``models/api/``), every backticked or diagrammed dotted name (``metrics.response_failure``, ``Runner.plan``,
``data.load.load_for_run``) and every backticked code name (``RunRecord``, ``PAPER_MODELS``, ``bind_journal``).

Paths resolve against the library (inference_and_evaluation/smmile), the repository and inference_and_evaluation/.
A dotted name resolves as ``<module>.<name>[.<attribute>]`` (the module named by any trailing part of its dotted
path: ``metrics`` is smmile.scoring.metrics) or ``<Class>.<attribute>`` (a class defined anywhere in the library,
with its bases); a bare CamelCase or UPPER_CASE name must be defined (class, function, assignment), a bare
snake_case name must occur in the library. Spans with placeholders (``<stem>``, ``*``), flags, quoted text and
data file names are not code and are skipped.
"""

from __future__ import annotations

import ast
import builtins
import re
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIBRARY = REPO / "inference_and_evaluation" / "smmile"
DOC = REPO / "docs" / "architecture.md"
ROOTS = (LIBRARY, REPO, REPO / "inference_and_evaluation")
DATA_EXTENSIONS = ("json", "jsonl", "csv", "txt", "png", "svg", "parquet")
# keys of a manifest or a journal record written as dotted paths (data, not code)
DATA_KEYS = {"backend.capabilities", "extra.layout", "model.identity"}
# names of other libraries (vLLM's ``LLM``, the standard library)
EXTERNAL = {"LLM.chat", "LLM.generate", "sys.argv"}
IDENT = re.compile(r"[A-Za-z_]\w*")
DOTTED = re.compile(r"(?<![\w.<>/-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LIBRARY).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in LIBRARY.rglob("*.py")}


@cache
def tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _targets(node) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return [node.attr]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for e in node.elts for n in _targets(e)]
    return []


def defined(body) -> set[str]:
    """Names a module or class body defines: functions, classes, assignments, imports (and self.x in methods)."""
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(n for t in node.targets for n in _targets(t))
        elif isinstance(node, ast.AnnAssign):
            names.update(_targets(node.target))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


@cache
def classes() -> dict[str, list[ast.ClassDef]]:
    found: dict[str, list[ast.ClassDef]] = {}
    for module in MODULES:
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(node)
    return found


def class_defines(name: str, attr: str, seen: frozenset = frozenset()) -> bool:
    for cls in classes().get(name, []):
        methods = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inner = defined(cls.body) | {t for m in methods for n in ast.walk(m) if isinstance(n, (ast.Assign, ast.AnnAssign))
                                     for t in _targets(n.targets[0] if isinstance(n, ast.Assign) else n.target)}
        if attr in inner:
            return True
        bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in cls.bases]
        if any(b not in seen and class_defines(b, attr, seen | {name}) for b in bases):
            return True
    return False


@cache
def all_definitions() -> set[str]:
    names = set(classes())
    for module in MODULES:
        for node in ast.walk(tree(module)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    names.update(_targets(t))
    return names


@cache
def library_words() -> set[str]:
    return {w for p in MODULES.values() for w in IDENT.findall(p.read_text(encoding="utf-8"))}


def module_candidates(prefix: list[str]) -> list[str]:
    dotted = ".".join(prefix)
    return [m for m in MODULES if m == dotted or m.endswith("." + dotted)]


def dotted_exists(text: str) -> bool:
    parts = text.removeprefix("smmile.").split(".")
    for cut in range(len(parts), 0, -1):  # the longest module prefix first
        for module in module_candidates(parts[:cut]):
            rest = parts[cut:]
            if not rest:
                return True
            if rest[0] in defined(tree(module).body) and (len(rest) == 1 or class_defines(rest[0], rest[1])):
                if len(rest) <= 2:
                    return True
    return len(parts) == 2 and class_defines(parts[0], parts[1])


def path_exists(text: str) -> bool:
    return any((root / text).exists() for root in ROOTS)


def problem(span: str) -> str | None:
    """Why a backticked span names nothing that exists, or None (exists, or not code)."""
    span = span.strip()
    if span in DATA_KEYS | EXTERNAL or span in dir(builtins) or any(c in span for c in "<>*\"' :{}[]-=+,") and not span.endswith(")"):
        return None
    name = span.split("(", 1)[0]  # `Metric(...)`, `analyse(kind, ...)`: the name called
    if not name or any(c in name for c in "<>*\"' :{}[]-=+,"):
        return None
    if name.rsplit(".", 1)[-1] in DATA_EXTENSIONS:
        return None
    if "/" in name:
        return None if path_exists(name) else f"no file or folder {name}"
    if name.endswith((".py", ".md")):
        return None if path_exists(name) else f"no file {name}"
    if not IDENT.fullmatch(name.replace(".", "_")):
        return None
    if "." in name:
        return None if dotted_exists(name) else f"no module, function, class or attribute {name}"
    if name[0].isupper() and not name.isupper() or (name.isupper() and len(name) > 2 and name.isidentifier()):
        if name in ("LLM", "EM", "MCQA") or name in all_definitions():
            return None
        return f"nothing named {name} is defined"
    if "_" in name.strip("_"):
        return None if name in library_words() else f"{name} occurs nowhere in the library"
    return None


def test_every_name_in_the_architecture_doc_exists():
    text = DOC.read_text(encoding="utf-8")
    code_blocks = re.findall(r"```\n(.*?)```", text, re.S)
    prose = re.sub(r"```\n.*?```", "", text, flags=re.S)
    split = [line for line in prose.splitlines() if line.count("`") % 2]
    assert not split, f"keep each `code span` on one line (else it is not checked): {split}"
    spans = re.findall(r"`([^`\n]+)`", prose)
    spans += [d for block in code_blocks for d in DOTTED.findall(block)]
    wrong = sorted({f"`{s}`: {why}" for s in spans if (why := problem(s))})
    assert not wrong, "docs/architecture.md names what does not exist:\n" + "\n".join(wrong)
    assert len(spans) > 200  # the doc is checked, not skipped


def test_every_module_of_the_library_is_described():
    text = DOC.read_text(encoding="utf-8")
    missing = [str(p.relative_to(LIBRARY)) for p in sorted(LIBRARY.rglob("*.py"))
               if p.name != "__init__.py" and f"`{p.relative_to(LIBRARY)}`" not in text
               and f"`{p.name}`" not in text]
    assert not missing, "modules docs/architecture.md does not describe:\n" + "\n".join(missing)
