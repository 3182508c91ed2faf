"""Where the package's numba kernels are cached on disk, and when a cached kernel is still valid.

Every module of the package that defines ``njit(cache=True)`` kernels imports this module first;
importing it puts :class:`KernelLocator` ahead of numba's own cache locators, for the package's
files only (other packages' kernels keep numba's defaults). The locator differs from numba's in
two ways:

* **What makes a kernel stale**: numba compares the content of the kernel's own file only, so a
  kernel whose callee in another file changed (a constant, an inlined helper) loads its old
  machine code. Here a kernel's stamp is the SHA-256 of its file *and* of every package module
  that file imports, transitively (the modules' sources, read once per process). numba's own
  checks stay: its version, the CPU and the function's bytecode are part of every entry's key.
* **Where**: by package-relative folder (``sim/``, ``robots/cosserat/``), not by the install's
  absolute path, so a second virtual environment or container with the same sources reuses the
  entries instead of compiling again. Two tiers, the first usable one wins:

  1. the install location's ``_kernels/`` folder beside this file, where it exists and is
     writable: ``soft-envs compile`` creates and fills it, after which a process with an empty
     ``HOME``, ``XDG_CACHE_HOME`` and ``NUMBA_CACHE_DIR`` (a new container user, a Ray worker, a
     CI job) starts without compiling. ``soft-envs compile --clean`` removes it (``pip uninstall``
     leaves files it did not install);
  2. the user's cache: ``$NUMBA_CACHE_DIR/soft_envs`` if set, else
     ``$XDG_CACHE_HOME/soft_envs/numba`` (default ``~/.cache``).

  ``SOFT_ENVS_KERNEL_CACHE=user`` skips the first tier. A kernel that no tier can store is
  compiled in every process.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Any

from numba.core import caching

PACKAGE_ROOT = Path(__file__).resolve().parent
PACKAGE_TIER = PACKAGE_ROOT / "_kernels"
TIER_VARIABLE = "SOFT_ENVS_KERNEL_CACHE"  # "user": skip the install location's folder
_PACKAGES = ("soft_envs",)  # module-name prefixes whose kernels this locator caches

_module_hashes: dict[str, bytes] = {}  # module name -> SHA-256 of its source file (this process)
_closures: dict[str, frozenset[str]] = {}  # module name -> the package modules it imports, itself included


def user_tier() -> Path:
    """The user's cache folder of the package's kernels (read from the environment on each call)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"]) / "soft_envs"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "soft_envs" / "numba"


def _owned(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in _PACKAGES)


@functools.cache
def _source(module: str) -> Path | None:
    """The source file of a package module, found by its name alone (nothing is imported, so the
    answer does not depend on what this process loaded): ``soft_envs.sim.contact`` is
    ``sim/contact.py`` or ``sim/contact/__init__.py`` under one of the package's folders."""
    head, _, rest = module.partition(".")
    package = sys.modules.get(head)
    roots = list(getattr(package, "__path__", [])) or [str(PACKAGE_ROOT)]
    parts = rest.split(".") if rest else []
    for root in roots:
        base = Path(root).joinpath(*parts)
        for path in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
            if path is not None and path.is_file():
                return path
    return None


_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w., \t]+)", re.MULTILINE)


@functools.cache
def _imported_modules(module: str, path: Path) -> frozenset[str]:
    """The package modules that ``module``'s source imports (module level and in functions; read
    with a regular expression: ``ast`` would cost a cold start hundreds of ms).
    ``from package import name`` counts the submodule ``package.name`` where there is one, else
    the package's ``__init__`` (where ``name`` is defined or re-exported)."""
    text = path.read_text()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for match in _IMPORT.finditer(text):
        found.update(part.split()[0] for part in match.group(1).split(",") if part.strip())
    for match in _FROM_IMPORT.finditer(text):
        base = match.group(1)
        level = len(base) - len(base.lstrip("."))
        if level:
            parts = package.split(".")
            parts = parts[: len(parts) - level + 1]
            base = ".".join(parts + ([base.lstrip(".")] if base.lstrip(".") else []))
        for name in match.group(2).strip("() \n").replace("\n", ",").split(","):
            name = name.split("#")[0].split()[0] if name.split("#")[0].strip() else ""
            if name:
                sub = f"{base}.{name}"
                found.add(sub if _source(sub) is not None else base)
    return frozenset(m for m in found if _owned(m) and m != __name__ and _source(m) is not None)


def _closure(module: str) -> frozenset[str]:
    """``module`` and every package module it imports, transitively."""
    if module not in _closures:
        seen: set[str] = set()
        todo = [module]
        while todo:
            name = todo.pop()
            path = _source(name)
            if name in seen or path is None:
                continue
            seen.add(name)
            todo.extend(_imported_modules(name, path) - seen)
        _closures[module] = frozenset(seen)
    return _closures[module]


def source_stamp(module: str) -> str:
    """SHA-256 (hex) of the sources of ``module`` and of every package module it imports."""
    digest = hashlib.sha256()
    for name in sorted(_closure(module)):
        if name not in _module_hashes:
            path = _source(name)
            _module_hashes[name] = hashlib.sha256(path.read_bytes()).digest() if path else b""
        digest.update(name.encode() + b"\0" + _module_hashes[name])
    return digest.hexdigest()


class KernelLocator(caching._CacheLocator):
    """numba's cache locator of the package's kernels (see the module docstring)."""

    def __init__(self, py_func, py_file: str, root: Path) -> None:  # noqa: ANN001 - numba's signature
        self._py_file = py_file
        self._module = py_func.__module__
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(root.joinpath(*self._module.split(".")[1:-1]) if "." in self._module else root)

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        return source_stamp(self._module)

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file: str) -> KernelLocator | None:  # noqa: ANN001
        module = getattr(py_func, "__module__", None) or ""
        if not _owned(module) or not os.path.isfile(py_file):
            return None
        for root in (PACKAGE_TIER, user_tier()):
            if root == PACKAGE_TIER and (not PACKAGE_TIER.is_dir() or os.environ.get(TIER_VARIABLE) == "user"):
                continue  # created by ``soft-envs compile`` only
            locator = cls(py_func, py_file, root)
            try:
                locator.ensure_cache_path()
            except OSError:  # missing and not creatable, or read-only: the next tier
                continue
            return locator
        return None


def install() -> None:
    """Put :class:`KernelLocator` first in numba's locators (idempotent)."""
    classes: list[Any] = caching.CacheImpl._locator_classes
    if KernelLocator not in classes:
        classes.insert(0, KernelLocator)


install()
