"""The library's layers import downward only, and no modules import each other in a circle.

Every ``import`` / ``from ... import`` in smmile/ counts, at module level or inside a function (a lazy import
hides a cycle, it does not remove it); relative imports are resolved; ``from pkg import name`` is an edge to the
submodule ``pkg.name`` when there is one, else to ``pkg``. A preset's family or backend (``Lazy("module",
"Class")``, smmile.models.preset) is an edge too, and must name a class its module defines.

Layers, lowest first, read off the data flow of docs/architecture.md: rows become a Problem (protocol), the
Problem is loaded from a dataset (data), rendered and answered by a model (models), journaled by the runner,
scored, analysed, reported; the command line sits on top. A module may import its own layer or a lower one.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "inference_and_evaluation" / "smmile"

# smmile.<first part> -> layer; a top-level module not named here is in the base layer (errors, generation,
# identity, environment, hub, fsguard, appendlog: each used everywhere, none knowing about the pipeline)
LAYERS = ["protocol", "data", "models", "runner", "record", "scoring", "analysis", "report", "export", "cli"]

# Owed, not allowed: none since issue #19 item 5. An entry (module, imported module) / frozenset of a cycle's
# modules would be a debt the library states; one that is gone fails (delete it here): the lists only shrink.
KNOWN_UPWARD: set[tuple[str, str]] = set()
KNOWN_CYCLES: set[frozenset] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LIBRARY.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in LIBRARY.rglob("*.py")}


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1]) + 1 if len(parts) > 1 and parts[1] in LAYERS else 0


def _target(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def lazy_references(tree: ast.AST) -> list[tuple[str, str, int]]:
    """(module, class name, line) of every ``Lazy("module", "Class")`` call with literal arguments."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Lazy" \
                and len(node.args) == 2 and all(isinstance(a, ast.Constant) for a in node.args):
            found.append((node.args[0].value, node.args[1].value, node.lineno))
    return found


def imports(module: str) -> list[tuple[str, int]]:
    """(imported smmile module, line) of every import statement in `module`, and its Lazy references."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _target(module, path, node)
            out += [(f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target, node.lineno)
                    for a in node.names]
    out += [(mod, line) for mod, _, line in lazy_references(tree)]
    return [(t, line) for t, line in out if (t == "smmile" or t.startswith("smmile.")) and t != module]


GRAPH = {m: imports(m) for m in MODULES}


def where(module: str, line: int) -> str:
    return f"{MODULES[module].relative_to(LIBRARY.parent)}:{line}"


def test_every_import_resolves_to_a_module():
    unknown = [f"{where(m, line)} imports {t}" for m, edges in GRAPH.items() for t, line in edges if t not in MODULES]
    assert not unknown, "\n".join(unknown)


def test_layers_import_downward_only():
    found = {(m, t): line for m, edges in sorted(GRAPH.items()) for t, line in edges if layer(t) > layer(m)}
    upward = [f"{where(m, line)}: {m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
              for (m, t), line in found.items() if (m, t) not in KNOWN_UPWARD]
    assert not upward, "upward imports (layers, lowest first: base, " + ", ".join(LAYERS) + "):\n" + "\n".join(upward)
    assert not KNOWN_UPWARD - set(found), f"gone, delete from KNOWN_UPWARD: {sorted(KNOWN_UPWARD - set(found))}"


def find_cycle(graph: dict) -> list[tuple[str, int]] | None:
    """One import cycle of `graph` as [(module, line of its import of the next module), ...], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[tuple[str, int]] = []

    def visit(module: str) -> list[tuple[str, int]] | None:
        state[module] = 1
        for target, line in graph.get(module, []):
            path.append((module, line))
            if state.get(target) == 1:
                start = next(i for i, (m, _) in enumerate(path) if m == target)
                return path[start:]
            if target in graph and not state.get(target):
                found = visit(target)
                if found:
                    return found
            path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if not state.get(module):
            found = visit(module)
            if found:
                return found
    return None


def test_no_import_cycles():
    """No cycle outside the known ones (each known one's modules taken out of the graph), and each known one
    still there."""
    cycle = find_cycle({m: [(t, line) for t, line in edges if not any({m, t} <= c for c in KNOWN_CYCLES)]
                        for m, edges in GRAPH.items()})
    assert cycle is None, "import cycle (lazy imports included):\n" + "\n".join(
        f"  {where(m, line)}: {m} imports {cycle[(i + 1) % len(cycle)][0]}" for i, (m, line) in enumerate(cycle))
    gone = [sorted(c) for c in KNOWN_CYCLES
            if not find_cycle({m: [(t, line) for t, line in GRAPH[m] if t in c] for m in c})]
    assert not gone, f"gone, delete from KNOWN_CYCLES: {gone}"


def defines(module: str, name: str) -> bool:
    tree = ast.parse(MODULES[module].read_text())
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return True
    return False


def test_lazy_references_name_a_defined_class():
    bad = []
    for module, path in MODULES.items():
        for target, name, line in lazy_references(ast.parse(path.read_text())):
            if target not in MODULES or not defines(target, name):
                bad.append(f"{where(module, line)}: Lazy({target!r}, {name!r}) names nothing defined")
    assert not bad, "\n".join(bad)


def test_presets_reference_their_classes():
    """No preset names its family or backend by a "module:Class" string static tools cannot follow."""
    strings = []
    for module in ("smmile.models.registry", "smmile.models.presets_hf", "smmile.models.presets_api"):
        for node in ast.walk(ast.parse(MODULES[module].read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and ":" in node.value \
                    and node.value.split(":")[-1][:1].isupper() and " " not in node.value:
                strings.append(f"{where(module, node.lineno)}: {node.value!r}")
    assert not strings, "\n".join(strings)


HEAVY = ("torch", "transformers", "vllm", "ray", "openai", "anthropic", "ollama")


def test_help_imports_no_backend_package():
    """The presets name their classes without importing them: `smmile --help` and `smmile run --help` (which
    lists the presets) load none of the packages a backend needs, only what is used is imported."""
    for argv in (["--help"], ["run", "--help"]):
        code = (f"import sys\nfrom smmile.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
                f"print('loaded:', *sorted(set({HEAVY!r}) & set(sys.modules)))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[-1] == "loaded:", f"smmile {' '.join(argv)} imports {out.stdout.splitlines()[-1]}"
