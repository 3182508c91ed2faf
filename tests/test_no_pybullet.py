"""The package and the soft arms' batched core import and run in a Python without PyBullet (issue 32:
GPU nodes often have no PyBullet wheel); PyBullet is imported where it is used."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
for name in ("pybullet", "pybullet_utils", "pybullet_data"):
    sys.modules[name] = None  # any import of them fails, as where PyBullet is not installed
import numpy as np
import soft_envs
from soft_envs.robots import Peter
from soft_envs.sim.batched_bodies import BatchedPCCBody, BatchedSoftPeter
from soft_envs.sim import batched_actuators, batched_cuda, threads
import soft_envs.envs.peter_reach_cuda
import soft_envs.bench.batched_device
arms = BatchedSoftPeter(Peter(2), 4)
arms.step(1 / 120, 0.0, rest_end=arms.state.rest + 1e-3)
assert np.all(np.isfinite(arms.state.u))
try:
    import soft_envs.envs.peter_reach
except ImportError:
    pass
else:
    raise AssertionError("the PyBullet env imported without PyBullet")
print(sorted(soft_envs.ENV_IDS))
"""


def test_the_batched_core_runs_without_pybullet():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "soft_envs/PeterReach-v0" in done.stdout


def test_importing_the_package_leaves_pybullet_unloaded():
    code = "import sys, soft_envs; print('pybullet' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "False"
