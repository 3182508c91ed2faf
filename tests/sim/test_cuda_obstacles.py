"""The GPU PeterReach with static obstacles on numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set
before numba loads, so in a subprocess), against the CPU vector env given the same tasks: the
contact step (:func:`soft_envs.sim.contact.arm_step_contact`) compiled for CUDA from the CPU's source."""

from __future__ import annotations

from numba.core.dispatcher import Dispatcher

from soft_envs.sim.batched_cuda import DEVICE_FUNCTIONS

#: What both scripts share: the imports, and the three arms' spheres beside their bodies' ends at rest
#: (arm 0 also one out of reach, arm 1 an empty slot, arm 2 one above it and one out of reach).
PRELUDE = """
import json, warnings, numpy as np
import gymnasium as gym
import soft_envs
from soft_envs.envs.peter_reach_cuda import PeterReachCudaVectorEnv
warnings.simplefilter("ignore", RuntimeWarning)  # the simulated xoroshiro's uint64 wrap-around
B = 3


def spheres_beside(model):
    R = model.body_radius
    top = float(model.backbone(np.zeros(model.n_dof))[-1, 2])  # the backbone's end at rest [m]
    return np.array([[[-(R + 0.0115), 0.0, top, 0.010], [0.06, 0.06, 0.05, 0.008]],
                     [[R + 0.014, 0.0, top, 0.012], [0.0, 0.0, 0.0, 0.0]],
                     [[0.0, 0.0, top + R + 0.012, 0.009], [-0.07, 0.0, 0.04, 0.010]]])
"""

OBSTACLES = PRELUDE + """
from soft_envs.envs.obstacle_course import body_clearance
out = {}
# the tasks: each arm moves its body's end towards a sphere 1.5 to 3 mm beside it at rest (arm 0 also
# has one out of reach, arm 1 an empty slot, arm 2 a sphere above it and one out of reach)
times = np.array([[1.8, 0.0, 0.0, 1.8, 0.0, 0.0], [0.0, 1.5, 0.3, 0.0, 1.5, 0.3], [0.5, 0.5, 1.9, 1.0, 1.0, 1.0]])
for case, T, kw in (("ideal", 6, {}), ("realistic", 3, {"realism": {"preset": "realistic", "observation_noise": 0.0}})):
    cpu = gym.make_vec("soft_envs/PeterReach-v0", num_envs=B, obstacles=2, max_episode_steps=T,
                       autoreset_mode="SameStep", **kw)
    gpu = PeterReachCudaVectorEnv(B, obstacles=2, max_episode_steps=T, output="numpy", seed=1, goal_bank_size=16,
                                  **kw)
    single, rows = cpu.single, np.arange(B)
    model, R = single.model, single.model.body_radius
    start = model.backbone(np.zeros(model.n_dof))
    row = out[case] = {}
    if case == "ideal":  # the device's reset: a task of the bank (ObstacleCourse's: clear of the start), observed
        obs_g, _ = gpu.reset()
        spheres = gpu.state()["obstacles"]
        present = spheres[..., 3] > 0
        out["bank"] = {"present": int(present.sum()),
                       "seen": float(np.abs(obs_g[:, 18:] - spheres.reshape(B, -1)).max()),
                       "clearance": min(body_clearance(start, R, s[:3], s[3]) for s in spheres[present])}
    else:
        gpu.reset()
    _, info_c = cpu.reset(seed=0)
    obstacles = spheres_beside(model)
    drawn = info_c.get("realism", {})
    cpu.arms.reset(rows, list(np.concatenate((times, obstacles.reshape(B, -1)), axis=1)), drawn,
                   list(cpu.realism_rngs))
    obs_c = cpu.arms.observation(rows)
    if not single.realism.is_ideal():  # the CPU env's robots
        gpu.set_perturbations(drawn)
    obs_g = gpu.set_tasks(cpu.goal, cpu.arms.obstacles)
    row["reset_obs"] = float(np.abs(obs_g - obs_c).max())
    actions = single.model_to_action(times).astype(np.float32)
    row["steps"] = []
    for k in range(T):
        o, r, te, tr, info = gpu.step(actions)
        oc, rc, tec, trc, ic = cpu.step(actions)
        step = {"reward": float(np.abs(r - rc).max()), "done": bool(tr.any()),
                "flags": bool(np.array_equal(te, tec) and np.array_equal(tr, trc))}
        if tr.any():  # the ended episodes: their last observations and infos (the new ones from the bank)
            ic, oc, o = ic["final_info"], np.stack(ic["final_obs"]), info["final_obs"]
        else:
            step["u"] = float(np.abs(gpu.state()["u"] - cpu.body.state.u).max())
        step["obs"] = float(np.abs(o - oc).max())
        step["collisions"] = [info["collisions"].tolist(), ic["collisions"].tolist()]
        step["is_success"] = bool(np.array_equal(info["is_success"], ic["is_success"]))
        step["penetration"] = float(np.abs(info["penetration"] - ic["penetration"]).max())
        step["deepest"] = float(ic["penetration"].max())
        step["force"] = float(np.abs(info["contact_force"] - ic["contact_force"]).max())
        step["largest_force"] = float(ic["contact_force"].max())
        row["steps"].append(step)
errors = []
for bad in (np.zeros((B, 3, 4)), np.full((B, 2, 4), np.nan), None):
    try:
        gpu.set_tasks(cpu.goal, bad)
    except ValueError as exc:
        errors.append(type(exc).__name__)
try:
    PeterReachCudaVectorEnv(B, output="numpy", goal_bank_size=2).set_tasks(cpu.goal, obstacles)
except ValueError as exc:
    errors.append(type(exc).__name__)
out["errors"] = errors
print(json.dumps(out))
"""


def test_the_gpu_env_with_obstacles_steps_as_the_cpu_vector_env(on_cuda_simulator):
    """Three arms pushed into spheres (two present for arm 0, one and an empty slot for arm 1, two for
    arm 2), ideal over an episode of six steps and realistic (the CPU env's robots: tilted bases, leg
    offsets, ...) over three, each ending in truncation: the same observations (obstacles appended),
    rewards, collision counts, success flags, deepest penetrations [m] and contact forces [N] as the
    CPU vector env (measured: states to ~1e-16, forces to ~2e-12 N of up to 15 N, penetrations to
    ~1e-17 m). The device's own reset draws its tasks from the bank of ObstacleCourse's draws (clear of
    the start's body, observed)."""
    out = on_cuda_simulator(OBSTACLES)
    bank = out["bank"]
    assert bank["present"] > 0 and bank["seen"] < 1e-7 and bank["clearance"] >= 0.003 - 1e-9, bank
    for case, T in (("ideal", 6), ("realistic", 3)):
        row = out[case]
        assert row["reset_obs"] < 1e-7, (case, row)
        assert [step["done"] for step in row["steps"]] == [False] * (T - 1) + [True], case
        for step in row["steps"]:
            assert step["flags"] and step["is_success"], (case, step)
            assert step["collisions"][0] == step["collisions"][1], (case, step)
            assert step["obs"] < 1e-6 and step["reward"] < 1e-5 and step.get("u", 0.0) < 1e-9, (case, step)
            assert step["penetration"] < 1e-10 and step["force"] < 1e-9 * max(1.0, step["largest_force"]), \
                (case, step)
        last = row["steps"][-1]
        assert last["deepest"] > 0 and last["largest_force"] > 0, (case, last)
    assert all(count > 0 for count in out["ideal"]["steps"][-1]["collisions"][1])  # every arm touched its sphere
    assert out["errors"] == ["InvalidParameterError"] * 4


SUB_STEPS = PRELUDE + """
T = 4
kw = dict(obstacles=2, max_episode_steps=T, time_step=0.05, frame_skip=2)
out = {}
for most in (None, 1):
    cpu = gym.make_vec("soft_envs/PeterReach-v0", num_envs=B, autoreset_mode="SameStep", **kw)
    if most:
        cpu.arms.scene.max_substeps = most
    gpu = PeterReachCudaVectorEnv(B, output="numpy", seed=1, goal_bank_size=16, **kw)
    single, rows = cpu.single, np.arange(B)
    gpu.reset()
    cpu.reset(seed=0)
    times = np.array([[2.0, 0.0, 0.0, 2.0, 0.0, 0.0], [0.0, 2.0, 0.3, 0.0, 2.0, 0.3], [0.5, 0.5, 2.0, 1.0, 1.0, 1.0]])
    obstacles = spheres_beside(single.model)
    cpu.arms.reset(rows, list(np.concatenate((times, obstacles.reshape(B, -1)), axis=1)), {}, list(cpu.realism_rngs))
    gpu.set_tasks(cpu.goal, cpu.arms.obstacles)
    actions = single.model_to_action(times).astype(np.float32)
    steps = []
    for _ in range(T - 1):
        o, _, _, _, info = gpu.step(actions)
        oc, _, _, _, ic = cpu.step(actions)
        steps.append({"obs": float(np.abs(o - oc).max()), "u": float(np.abs(gpu.state()["u"] - cpu.body.state.u).max()),
                      "collisions": [info["collisions"].tolist(), ic["collisions"].tolist()]})
    out[str(most)] = steps
print(json.dumps(out))
"""


def test_the_gpu_env_takes_the_contacts_sub_steps_as_the_cpu_does(on_cuda_simulator):
    """50 ms physics steps: the arms move their bodies by more than 1 mm a step beside the spheres, so
    the contact splits those steps (:data:`soft_envs.sim.contact.SWEEP_LENGTH`): the device's steps equal
    the CPU vector env's, and differ from the CPU's in whole steps (``max_substeps = 1``)."""
    out = on_cuda_simulator(SUB_STEPS)
    for split in out["None"]:
        assert split["obs"] < 1e-9 and split["u"] < 1e-12, split
        assert split["collisions"][0] == split["collisions"][1], split
    assert max(step["u"] for step in out["1"]) > 1e-5  # whole steps are another path: sub-steps were taken


def test_every_callee_of_a_device_function_is_compiled_for_the_device():
    """Each compiled function's callees that are numba functions are in ``DEVICE_FUNCTIONS`` too (so a
    helper added to the contact's or the core's source is not left as a CPU function on the device)."""
    compiled = {name for names in DEVICE_FUNCTIONS.values() for name in names}
    for module, names in DEVICE_FUNCTIONS.items():
        for name in names:
            callees = getattr(module, name).py_func.__code__.co_names
            missing = [c for c in callees if isinstance(getattr(module, c, None), Dispatcher) and c not in compiled]
            assert not missing, (module.__name__, name, missing)
