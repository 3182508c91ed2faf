"""The import rule of the package (docs page "Layout"): dependencies point one way.

``geometry → robots → sim → envs``; ``agents`` (solvers, controllers, the network) depend on
``robots`` and never on ``sim`` or ``envs``; the benchmarks, demos and the command line sit on
top and may import anything. Every ``import`` statement of the package is read with ``ast``
(function-level imports too), so a lazy import cannot hide an upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {"soft_envs": ROOT / "soft_envs", "soft_envs.agents": ROOT / "agents"}

# Layer of each top-level part of the package (the part after ``soft_envs.``).
LAYER = {
    "exceptions": "base",
    "console": "base",
    "clock": "base",
    "kernel_cache": "base",  # where numba caches the kernels (numba only)
    "geometry": "geometry",
    "collision": "geometry",
    "robots": "robots",
    "trajectories": "robots",  # task definitions in SI units, no simulator
    "urdf": "robots",  # package data of the robot descriptions
    "sim": "sim",
    "envs": "envs",
    "agents": "agents",
    "bench": "top",
    "demos": "top",
    "evaluate": "top",
    "controllers": "top",  # the controllers evaluate builds by name (they use agents and envs)
    "jobs": "top",  # results files, worker processes that may die, signals (evaluate uses it)
    "learn": "top",  # training, recipes, checkpoints, the SB3 adapter, the parallel learner, gait modulation
    "cli": "top",
    "prepare": "top",  # soft-envs compile: every env's first step in child processes
    "report": "top",  # markdown tables and figures of the harness
    "": "top",  # soft_envs/__init__.py registers the environments
}
# What each layer may import (besides itself).
ALLOWED = {
    "base": set(),
    "geometry": {"base"},
    "robots": {"base", "geometry"},
    "sim": {"base", "geometry", "robots"},
    "envs": {"base", "geometry", "robots", "sim"},
    "agents": {"base", "geometry", "robots"},
    "top": {"base", "geometry", "robots", "sim", "envs", "agents"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            if package == "soft_envs" and path.is_relative_to(SOURCES["soft_envs.agents"]):
                continue
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def _part(module: str) -> str:
    rest = module.split(".")[1:]
    return rest[0] if rest else ""


def _imports(path: Path, module: str) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against this module's package
                base = module.split(".")[: len(module.split(".")) - node.level + (path.stem == "__init__")]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" for alias in node.names]
            out += [(node.lineno, name if target == "soft_envs" else target) for name in names]
    return sorted({(line, name) for line, name in out if name == "soft_envs" or name.startswith("soft_envs.")})


MODULES = _modules()


def test_every_part_has_a_layer():
    unknown = {_part(m) for m in MODULES} - set(LAYER)
    assert not unknown, f"give these parts of the package a layer in this test: {sorted(unknown)}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_the_layers(module):
    layer = LAYER[_part(module)]
    bad = []
    for line, name in _imports(MODULES[module], module):
        target = LAYER.get(_part(name), "top")
        if target != layer and target not in ALLOWED[layer]:
            bad.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {name} ({layer} -> {target})")
    assert not bad, "upward imports:\n" + "\n".join(bad)




def _module_graph() -> dict[str, set[str]]:
    """Every module's package-internal imports (type-only and function-level ones too), by module."""
    graph = {}
    for module, path in MODULES.items():
        targets = set()
        for _, name in _imports(path, module):
            parts = name.split(".")
            found = next((".".join(parts[:k]) for k in range(len(parts), 0, -1) if ".".join(parts[:k]) in MODULES),
                         None)
            if found is not None and found != module:
                targets.add(found)
        graph[module] = targets
    return graph


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(component)
    return out


def test_no_import_circles():
    """No module imports one that imports it back, through any chain (type-only and function-level
    imports included)."""
    assert _circles(_module_graph()) == []
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]  # the check itself
