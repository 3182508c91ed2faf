"""The package, the soft arms' batched core and their single and vector envs import and run in a
Python without PyBullet (GPU nodes often have no PyBullet wheel); PyBullet is imported where
it is used (a physics client, a picture, a rigid robot)."""

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
from soft_envs.sim import actuators, batched_cuda, threads
import soft_envs.envs.peter_reach_cuda
import soft_envs.bench.batched_device
arms = BatchedSoftPeter(Peter(2), 4)
arms.step(1 / 120, 0.0, rest_end=arms.state.rest + 1e-3)
assert np.all(np.isfinite(arms.state.u))
import gymnasium as gym
for kwargs in ({}, {"realism": "realistic"}, {"kinematic": True, "realism": "realistic"}):
    envs = gym.make_vec("soft_envs/PeterReach-v0", num_envs=8, **kwargs)
    obs, _ = envs.reset(seed=0)
    for _ in range(3):
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    assert obs.shape == (8, 18) and np.all(np.isfinite(obs)) and np.all(np.isfinite(reward))
    envs.close()
for kwargs in ({}, {"realism": "realistic", "action_type": "pressure"}):
    envs = gym.make_vec("soft_envs/PCCTrack-v0", num_envs=4, **kwargs)
    obs, _ = envs.reset(seed=0)
    obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    assert obs.shape == (4, 26) and np.all(np.isfinite(obs)) and np.all(np.isfinite(reward))
    envs.close()
env = gym.make("soft_envs/PCCTrack-v0", action_type="residual")
env.reset(seed=0)
env.step(env.action_space.sample())
assert env.unwrapped.client is None
env.close()
env = gym.make("soft_envs/PeterReach-v0", render_mode="rgb_array")
env.reset(seed=0)
env.step(env.action_space.sample())
assert env.unwrapped.client is None
try:
    env.render()
except ImportError as exc:
    assert "PyBullet is needed here" in str(exc)
else:
    raise AssertionError("a picture without PyBullet")
env.close()
print(sorted(soft_envs.ENV_IDS))
"""


def test_the_batched_core_and_the_soft_arm_envs_run_without_pybullet():
    """The core, ``gym.make_vec`` of PeterReach (soft, realistic, kinematic) and PCCTrack, and their
    single envs step with every PyBullet import failing; a picture then says PyBullet is needed."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "soft_envs/PeterReach-v0" in done.stdout


def test_importing_the_package_leaves_pybullet_unloaded():
    code = "import sys, soft_envs; print('pybullet' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "False"
