"""The GPU path on any machine: the CUDA kernels run on numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``, set before numba loads, so in a subprocess) against the CPU core
and the CPU vector env; on a GPU ``soft-envs bench batched --device cuda`` checks the same."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from soft_envs.exceptions import InvalidParameterError
from soft_envs.sim import batched_cuda

CORE = """
import json, numpy as np
from soft_envs.robots import PCCArm, Peter
from soft_envs.sim.batched_bodies import BatchedPCCBody, BatchedSoftPeter
from soft_envs.sim.batched_cuda import CudaSoftArms

def arms(kind):
    if kind == "peter":
        a = BatchedSoftPeter(Peter(2), 3, payload=0.1)
        a.reset_inflation(None, np.random.default_rng(0).uniform(0, 2, (3, 6)))
        return a, 1 / 120
    a = BatchedPCCBody(PCCArm(2, 6), 3)
    a.reset_configuration(None, np.array([0.001, 0.5, 0.3, 0.0, 0.8, -1.0]))
    return a, 5e-3

out = {}
for kind in ("peter", "pcc"):
    cpu, dt = arms(kind)
    gpu = CudaSoftArms(arms(kind)[0])
    rng = np.random.default_rng(1)
    for k in range(3):
        torque = rng.normal(0, 1e-3, cpu.state.u.shape)
        rest = cpu.state.rest + rng.normal(0, 1e-4, cpu.state.u.shape)
        options = dict(torque_end=torque * 0.5, rest_end=rest, cancel_damping=(k == 1),
                       active=np.array([True, k != 2, True]))
        cpu.step(dt, torque, **options)
        gpu.step(dt, torque, **options)
    s = gpu.download()
    tip = gpu.tip_state().copy_to_host()
    p, v = cpu.tip_state()
    # differences relative to the largest entry (at least 1): accelerations reach ~1e4 rad/s²
    out[kind] = {name: float(np.abs(getattr(s, name) - getattr(cpu.state, name)).max()
                             / max(1.0, np.abs(getattr(cpu.state, name)).max()))
                 for name in ("u", "w", "a", "c", "rest", "time")}
    out[kind]["a_max"] = float(np.abs(cpu.state.a).max())
    out[kind]["tip"] = float(max(np.abs(tip[:, :3] - p).max(), np.abs(tip[:, 3:] - v).max()))
    out[kind]["fresh"] = bool(np.array_equal(s.fresh, cpu.state.fresh & (cpu.corrector_passes > 0)))
print(json.dumps(out))
"""

ENV = """
import json, warnings, numpy as np
import gymnasium as gym
import soft_envs
from soft_envs.envs.peter_reach_cuda import PeterReachCudaVectorEnv
from soft_envs.envs.peter_reach_vector import PeterReachVectorEnv
warnings.simplefilter("ignore", RuntimeWarning)  # the simulated xoroshiro's uint64 wrap-around
B = 3
gpu = gym.make_vec("soft_envs/PeterReach-v0", num_envs=B, device="cuda", max_episode_steps=2, output="numpy",
                   seed=1)
cpu = PeterReachVectorEnv(B, max_episode_steps=2, autoreset_mode="SameStep")
obs_g, _ = gpu.reset()
cpu.reset(seed=0)
cpu.goal[:] = gpu.state()["goal"]
out = {"type": type(gpu).__name__, "reset_obs": float(np.abs(obs_g - cpu._observe(np.arange(B))).max()), "steps": []}
rng = np.random.default_rng(0)
for k in range(3):
    actions = rng.uniform(-1.2, 1.2, (B, 6)).astype(np.float32)
    o, r, te, tr, info = gpu.step(actions)
    oc, rc, tec, trc, ic = cpu.step(actions)
    row = {"u": float(np.abs(gpu.state()["u"] - cpu.body.state.u).max()),
           "reward": float(np.abs(r - rc).max()), "flags": bool(np.array_equal(te, tec) and np.array_equal(tr, trc)),
           "done": bool(tr.any())}
    if tr.any():  # the ended episodes' last observations and infos; the new ones start at rest
        final = np.stack(ic["final_obs"][ic["_final_obs"]])
        row["final_obs"] = float(np.abs(info["final_obs"][tr] - final).max())
        row["distance"] = float(np.abs(info["distance"] - ic["final_info"]["distance"]).max())
        row["steps_after_reset"] = gpu.state()["steps"].tolist()
        cpu.goal[:] = gpu.state()["goal"]  # each env drew its own new goals
    else:
        row["obs"] = float(np.abs(o - oc).max())
        row["distance"] = float(np.abs(info["distance"] - ic["distance"]).max())
    out["steps"].append(row)
errors = []
for bad in (dict(kinematic=True), dict(output="cupy")):
    try:
        PeterReachCudaVectorEnv(2, **bad)
    except ValueError as exc:
        errors.append(type(exc).__name__)
try:
    gpu.step(np.zeros((B, 5), np.float32))
except ValueError as exc:
    errors.append(type(exc).__name__)
try:
    gpu.step(np.full((B, 6), np.nan, np.float32))
except ValueError as exc:
    errors.append(type(exc).__name__)
out["errors"] = errors
print(json.dumps(out))
"""


REALISM = """
import json, warnings, numpy as np
from soft_envs.envs.peter_reach_cuda import PeterReachCudaVectorEnv
from soft_envs.envs.peter_reach_vector import PeterReachVectorEnv
warnings.simplefilter("ignore", RuntimeWarning)  # the simulated xoroshiro's uint64 wrap-around
B, T = 3, 4
out = {}
cases = {"realistic": dict(realism={"preset": "realistic", "observation_noise": 0.0, "command_delay": (0.05, 0.15)}),
         "instant, delayed": dict(actuation="instant", command_delay=0.2, payload=0.2)}
for case, kw in cases.items():
    gpu = PeterReachCudaVectorEnv(B, max_episode_steps=T, output="numpy", seed=1, **kw)
    cpu = PeterReachVectorEnv(B, max_episode_steps=T, autoreset_mode="SameStep", **kw)
    obs_c, info_c = cpu.reset(seed=0)
    obs_g = gpu.reset()[0]
    gpu.set_goals(cpu.goal)
    if not cpu.single.realism.is_ideal():  # the CPU env's robots (and goals)
        obs_g = gpu.set_perturbations(info_c["realism"])
    else:  # the goals changed after the reset's observation: its tip, velocity and set-points
        obs_g, obs_c = obs_g[:, [0, 1, 2, *range(9, 18)]], obs_c[:, [0, 1, 2, *range(9, 18)]]
    row = {"reset_obs": float(np.abs(obs_g - obs_c).max()), "u": [], "obs": [], "reward": [], "flags": True}
    rng = np.random.default_rng(0)
    for k in range(T):
        actions = rng.uniform(-1.2, 1.2, (B, 6)).astype(np.float32)
        o, r, te, tr, info = gpu.step(actions)
        oc, rc, tec, trc, ic = cpu.step(actions)
        row["flags"] &= bool(np.array_equal(te, tec) and np.array_equal(tr, trc))
        row["reward"].append(float(np.abs(r - rc).max()))
        if k < T - 1:
            row["u"].append(float(np.abs(gpu.state()["u"] - cpu.body.state.u).max()))
            row["obs"].append(float(np.abs(o - oc).max()))
        else:  # the episodes ended: their last observations
            row["obs"].append(float(np.abs(info["final_obs"] - np.stack(ic["final_obs"])).max()))
    out[case] = row
# the device's draws: within their ranges, spread over them, one robot per arm
gpu = PeterReachCudaVectorEnv(256, output="numpy", seed=3, realism="realistic")
drawn = gpu.reset()[1]["realism"]
table = gpu.realism.table
out["draws"] = {name: [float(v.min()), float(v.max()), *table[name].realistic] for name, v in drawn.items()}
out["distinct"] = int(np.unique(drawn["radius_error"]).size)
# the sensor's noise: the measured rest tips about the true one (every other perturbation ideal)
gpu = PeterReachCudaVectorEnv(256, output="numpy", seed=4, realism={"observation_noise": 0.01})
obs = gpu.reset()[0]
out["noise"] = float(np.std(obs[:, :3] - np.asarray(gpu._tip0.copy_to_host())[:3]))
errors = []
for bad in (dict(goal_conditioned=True), dict(action_mode="delta"), dict(backend="pybullet")):
    try:
        PeterReachCudaVectorEnv(2, output="numpy", **bad)
    except ValueError as exc:
        errors.append(type(exc).__name__)
try:
    gpu.set_perturbations({name: -np.ones(256) for name in drawn})
except ValueError as exc:
    errors.append(type(exc).__name__)
out["errors"] = errors
print(json.dumps(out))
"""


def test_the_gpu_step_is_the_cpu_core_to_1e_9(on_cuda_simulator):
    """PETER and PCC arms: torques at both ends, new rest lengths, damping cancelled, inactive arms
    (differences relative to each quantity's largest entry, or absolute below 1)."""
    for kind, diffs in on_cuda_simulator(CORE).items():
        assert diffs.pop("fresh"), kind
        diffs.pop("a_max")
        assert max(diffs.values()) < 1e-9, (kind, diffs)


def test_the_gpu_env_steps_as_the_cpu_vector_env(on_cuda_simulator):
    out = on_cuda_simulator(ENV)
    assert out["type"] == "PeterReachCudaVectorEnv"
    assert out["reset_obs"] < 1e-6
    assert [row["done"] for row in out["steps"]] == [False, True, False]
    for row in out["steps"]:
        assert row["u"] < 1e-9 and row["reward"] < 1e-5 and row["flags"] and row["distance"] < 1e-9, row
        assert row.get("obs", 0.0) < 1e-6 and row.get("final_obs", 0.0) < 1e-6, row
    assert out["steps"][1]["steps_after_reset"] == [0, 0, 0]
    assert out["errors"] == ["InvalidParameterError"] * 4


def test_the_gpu_env_with_realism_steps_as_the_cpu_vector_env(on_cuda_simulator):
    """The same perturbations (the CPU env's draws: leg gains, offsets, leaks, valve delays, sensor
    latency, base tilt, radius, mass, stiffness, payload) give the same episodes; instant legs and a
    valve delay too. The device's own draws lie in the ranges and spread over them; the sensor's noise
    has its standard deviation."""
    out = on_cuda_simulator(REALISM)
    for case in ("realistic", "instant, delayed"):
        row = out[case]
        assert row["reset_obs"] < 1e-6 and row["flags"], (case, row)
        assert max(row["u"]) < 1e-9 and max(row["obs"]) < 1e-6 and max(row["reward"]) < 1e-5, (case, row)
    for name, (low, high, r_low, r_high) in out["draws"].items():
        span = r_high - r_low
        assert r_low <= low and high <= r_high, name
        assert span == 0 or (low < r_low + 0.1 * span and high > r_high - 0.1 * span), name
    assert out["distinct"] == 256
    assert 0.009 < out["noise"] < 0.011
    assert out["errors"] == ["InvalidParameterError"] * 4


@pytest.mark.skipif(batched_cuda.simulated() or (batched_cuda.cuda is not None and batched_cuda.cuda.is_available()),
                    reason="a GPU (or the simulator) is present")
def test_no_gpu_is_a_clear_error():
    with pytest.raises(InvalidParameterError, match="no CUDA GPU"):
        batched_cuda.cuda_module()


def test_the_device_bench_runs_on_the_simulator():
    out = subprocess.run([sys.executable, "-m", "soft_envs.cli", "bench", "batched", "--device", "cuda"],
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "numba's CUDA simulator" in out.stdout and "PeterReach on the GPU" in out.stdout
