"""The package's on-disk kernel cache (:mod:`soft_envs.kernel_cache`) and ``soft-envs compile``
(:mod:`soft_envs.prepare`): every kernel is cached by content, package-relative, in the install
location once prepared, and a fresh process with empty cache folders then compiles nothing."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

numba = pytest.importorskip("numba")

from numba.core.dispatcher import Dispatcher  # noqa: E402

from soft_envs import kernel_cache, prepare  # noqa: E402
from soft_envs.kernel_cache import KernelLocator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _kernel_modules() -> list[str]:
    """Every module of the package that defines cached CPU kernels (``njit`` and ``cache`` in its
    source; the CUDA kernels in ``envs`` are compiled per process by numba's CUDA target)."""
    found = []
    for package, folder in (("soft_envs", ROOT / "soft_envs"), ("soft_envs.agents", ROOT / "agents")):
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            text = path.read_text()
            if parts[0] in ("bench", "envs", "agents", "kernel_cache") or "njit" not in text or "cache" not in text:
                continue
            found.append(".".join((package, *parts)).removesuffix(".__init__"))
    return sorted(found)


KERNEL_MODULES = _kernel_modules()


def _dispatchers(module_name: str) -> list[Dispatcher]:
    module = importlib.import_module(module_name)
    return [v for v in vars(module).values() if isinstance(v, Dispatcher) and v.py_func.__module__ == module_name]


def _cached(module_name: str) -> list[Dispatcher]:
    return [d for d in _dispatchers(module_name) if d._cache.__class__.__name__ != "NullCache"]


@pytest.mark.parametrize("module_name", [m for m in KERNEL_MODULES if _cached(m)])
def test_every_cached_kernel_uses_the_package_locator(module_name):
    # the module imports the locator itself (another module may not have been imported before it)
    source = Path(importlib.util.find_spec(module_name).origin).read_text()
    assert "from soft_envs import kernel_cache" in source, f"{module_name} does not import soft_envs.kernel_cache"
    kernels = _cached(module_name)
    for kernel in kernels:
        assert isinstance(kernel._cache._impl.locator, KernelLocator), (module_name, kernel.py_func.__name__)


def test_the_kernel_modules_were_found():
    assert {"soft_envs.sim.batched_kernels", "soft_envs.sim.contact", "soft_envs.collision",
            "soft_envs.robots.cosserat.compiled"} <= set(KERNEL_MODULES)


def test_a_kernels_stamp_covers_the_modules_its_file_imports(monkeypatch):
    importlib.import_module("soft_envs.sim.contact")
    closure = kernel_cache._closure("soft_envs.sim.contact")
    assert {"soft_envs.sim.batched_kernels", "soft_envs.sim.batched_integrator", "soft_envs.collision",
            "soft_envs.geometry"} <= closure
    assert "soft_envs.envs.base" not in closure and "soft_envs.kernel_cache" not in closure
    contact, rods = kernel_cache.source_stamp("soft_envs.sim.contact"), kernel_cache.source_stamp(
        "soft_envs.robots.cosserat.compiled")
    # a callee's file changes (here: its hash): the caller's stamp changes, an unrelated kernel's does not
    monkeypatch.setitem(kernel_cache._module_hashes, "soft_envs.sim.batched_kernels", b"edited")
    assert kernel_cache.source_stamp("soft_envs.sim.contact") != contact
    assert kernel_cache.source_stamp("soft_envs.robots.cosserat.compiled") == rods


def _locator(module_name: str) -> KernelLocator:
    kernel = _dispatchers(module_name)[0]
    return KernelLocator.from_function(kernel.py_func, kernel.py_func.__code__.co_filename)


def test_cache_folders_are_package_relative_and_the_install_location_is_used_once_prepared(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "user"))
    monkeypatch.delenv("SOFT_ENVS_KERNEL_CACHE", raising=False)
    monkeypatch.setattr(kernel_cache, "PACKAGE_TIER", tmp_path / "install" / "_kernels")
    # not prepared: the user's cache, by package-relative folder (the same for every install)
    assert _locator("soft_envs.sim.contact").get_cache_path() == str(tmp_path / "user" / "soft_envs" / "sim")
    assert _locator("soft_envs.robots.cosserat.compiled").get_cache_path() == str(
        tmp_path / "user" / "soft_envs" / "robots" / "cosserat")
    (tmp_path / "install" / "_kernels").mkdir(parents=True)  # prepared (soft-envs compile)
    assert _locator("soft_envs.sim.contact").get_cache_path() == str(tmp_path / "install" / "_kernels" / "sim")
    monkeypatch.setenv("SOFT_ENVS_KERNEL_CACHE", "user")
    assert _locator("soft_envs.sim.contact").get_cache_path() == str(tmp_path / "user" / "soft_envs" / "sim")
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _locator("soft_envs.collision").get_cache_path() == str(tmp_path / "xdg" / "soft_envs" / "numba")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_install_location_falls_back_to_the_users_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "user"))
    tier = tmp_path / "_kernels"
    tier.mkdir()
    tier.chmod(0o500)
    monkeypatch.setattr(kernel_cache, "PACKAGE_TIER", tier)
    try:
        assert _locator("soft_envs.sim.contact").get_cache_path().startswith(str(tmp_path / "user"))
    finally:
        tier.chmod(0o700)


# A fresh process: a small collision kernel, with the install location at argv[1]
# (monkeypatched before the kernels are defined); prints the signatures it compiled.
_CHILD = """
import sys, pathlib, json
from soft_envs import kernel_cache
kernel_cache.PACKAGE_TIER = pathlib.Path(sys.argv[1])
from soft_envs import collision
from soft_envs.prepare import _compiled_signatures
collision._clamp01(0.5)
print(json.dumps(_compiled_signatures()))
"""


def _fresh_child(tmp_path: Path, home: str, tier: Path) -> int:
    env = dict(os.environ, HOME=str(tmp_path / home), XDG_CACHE_HOME=str(tmp_path / home / "cache"),
               NUMBA_CACHE_DIR=str(tmp_path / home / "numba"))
    env.pop("SOFT_ENVS_KERNEL_CACHE", None)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tier)], capture_output=True, text=True, env=env,
                          timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return int(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.slow
def test_a_prepared_install_location_serves_a_process_with_empty_cache_folders(tmp_path):
    tier = tmp_path / "install" / "_kernels"
    tier.mkdir(parents=True)
    assert _fresh_child(tmp_path, "first", tier) > 0  # compiles, into the install location
    assert any(tier.rglob("*.nbi"))
    assert not (tmp_path / "first" / "numba").exists()
    assert _fresh_child(tmp_path, "second", tier) == 0  # another user, empty caches: loads, compiles nothing


def test_warmups_cover_every_registered_env():
    import soft_envs

    items = prepare.warmups()
    assert {w.env_id for w in items if w.num_envs is None and not w.kwargs and w.env_id} == set(soft_envs.ENV_IDS)
    assert any(w.num_envs == prepare.VECTOR_ARMS for w in items)
    assert any(w.imports == prepare.CHAIN_IK_KERNELS and not w.env_id for w in items)  # compiled at import
    assert prepare.Warmup("", imports=prepare.CHAIN_IK_KERNELS).label == "import chain_kernels"
    assert prepare.Warmup("soft_envs/PCCReach-v0", {"obstacles": 3}).label == "PCCReach-v0 (obstacles=3)"
    assert prepare.Warmup("soft_envs/PCCTrack-v0", num_envs=64).label == "PCCTrack-v0 vector N=64"


def test_first_step_in_a_child_reports_its_times():
    result = prepare.run_child(prepare.Warmup("soft_envs/QuadrupedPose-v0"))
    assert 0 < result["to_first_step_s"] <= result["wall_s"]
    assert result["compiled"] == 0  # the quadruped has no kernels
    assert result["import_s"] > 0 and result["first_step_s"] > 0
    only = prepare.run_child(prepare.Warmup("", imports=("soft_envs.robots.quadruped",)))  # no env: the import
    assert only["compiled"] == 0 and only["first_step_s"] > 0


def test_compile_clean_removes_the_install_locations_kernels(tmp_path, monkeypatch):
    tier = tmp_path / "_kernels"
    (tier / "sim").mkdir(parents=True)
    monkeypatch.setattr(kernel_cache, "PACKAGE_TIER", tier)
    from soft_envs.cli import main

    assert main(["compile", "--clean"]) == 0
    assert not tier.exists()
    assert main(["compile", "--clean"]) == 0  # nothing left: says so


def test_compile_rejects_a_bad_job_count():
    with pytest.raises(ValueError, match="jobs"):
        prepare.compile_kernels(jobs=0)
