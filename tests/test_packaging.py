"""A built wheel holds every data file the package reads (the shipped networks' weights, the robots'
URDF), and setuptools builds it without a warning that a data folder "would be ignored"."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_the_wheel_holds_every_data_file(tmp_path):
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                            "-v", "-w", str(tmp_path)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert "is absent from the `packages` configuration" not in build.stdout + build.stderr
    wheel = next(tmp_path.glob("soft_envs-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    data = [p for folder, pattern in (("agents", "**/*.npz"), ("agents", "**/*.json"), ("urdf", "**/*.urdf"))
            for p in (ROOT / folder).glob(pattern)]
    assert data, "no data files found in the checkout"
    for path in data:
        top = "agents" if path.is_relative_to(ROOT / "agents") else "urdf"
        inside = f"soft_envs/{top}/{path.relative_to(ROOT / top).as_posix()}"
        assert inside in names, f"{inside} is not in the wheel"


def test_kernels_go_to_the_users_cache_unless_the_install_location_is_prepared(tmp_path):
    """Without ``soft-envs compile`` no process writes into the package's folders (files there would
    outlive an uninstall): the kernels are cached in the user's cache folder, by package-relative
    folder; other packages' numba caches keep numba's own settings."""
    code = ("import sys, pathlib, numba; from soft_envs import kernel_cache; "
            "kernel_cache.PACKAGE_TIER = pathlib.Path(sys.argv[1]); "
            "from soft_envs.sim.batched_kernels import batch_configuration as k; "
            "print(k._cache._impl.locator.get_cache_path()); print(repr(numba.config.CACHE_DIR))")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("NUMBA_CACHE_DIR", "SOFT_ENVS_KERNEL_CACHE")}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "not_prepared")], capture_output=True,
                          text=True, env=env, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    folder, numba_default = done.stdout.split()
    assert folder == str(tmp_path / "soft_envs" / "numba" / "sim")
    assert numba_default == "''"
    assert not (tmp_path / "not_prepared").exists()
