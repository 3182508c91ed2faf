"""``soft_envs/PeterReach-v0`` with soft physics, its whole vector step on a GPU (issue 32).

One CUDA kernel a step, one thread an arm: the action into inflation times and leg targets, the
legs' fill and vent rates, ``frame_skip`` physics steps of the soft arm (the CPU core's
``arm_step``, compiled for CUDA from the same source: :mod:`soft_envs.sim.batched_cuda`), the
tip, the observation, the reward terms, the model-validity check and the reset of the arms
whose episode ended (``autoreset_mode="SameStep"``, as Isaac Lab's direct envs: the returned
observation is the new episode's; ``info["final_obs"]`` holds the ended one's). Actions,
observations, rewards and flags are device arrays handed to PyTorch without a copy
(``output="torch"``); nothing goes through the host per step.

What it simulates is :class:`~soft_envs.envs.peter_reach_vector.PeterReachVectorEnv` under
``realism="ideal"`` (the default env: soft legs, gravity, pneumatic fill and vent), which
``tests/envs/test_peter_reach_cuda.py`` checks it against, step by step, on numba's CUDA
simulator. Goals: the CPU env draws inflation times uniformly and takes the nominal PCC tip
(``PeterReachEnv.draw_task``); here the same draw is made on the host at construction into a
bank of ``goal_bank_size`` goals (default 65,536, seeded), and each reset picks one with the
device's random generator (``xoroshiro128p``, one stream per arm). Realism draws are not on the
device yet: ``realism`` other than ideal is refused.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from soft_envs.envs.peter_parts import (
    DISTANCE_WEIGHT,
    LEG_RADIUS,
    MODULE_GAP,
    SOFT_CONTROL_PERIOD,
    SOFT_TIME_STEP,
    SUCCESS_THRESHOLD,
    VENT_RATE,
)
from soft_envs.exceptions import (
    InvalidParameterError,
    as_real_array,
    check_integer,
    check_nonnegative,
    check_positive,
)
from soft_envs.geometry import STANDARD_GRAVITY
from soft_envs.robots.peter import DEFAULT_LEG_STIFFNESS, Peter
from soft_envs.sim import batched_cuda
from soft_envs.sim.batched_bodies import BatchedSoftPeter
from soft_envs.sim.batched_cuda import CudaSoftArms, cuda, cuda_module, device_functions
from soft_envs.sim.damping import PETER_RAYLEIGH_STIFFNESS

#: ``coef`` entries of the kernel (one float64 array).
_COEF = ("dt", "alpha_m", "alpha_f", "gamma", "beta", "fill_step", "vent_step", "rest_length", "fill_rate",
         "reference_length", "distance_weight", "success_threshold", "success_reward", "shortest_leg")


@cache
def env_kernel(n_modules: int, n_joints: int, n_angles: int):
    """The CUDA kernel of one env step (``mode`` 0) or of resetting the arms in ``reset`` (``mode`` 1)
    for PETER arms of ``n_modules`` modules (module docstring)."""
    cuda_module()
    from numba import float64
    from numba.cuda.random import xoroshiro128p_uniform_float64

    functions = device_functions()
    arm_step, evaluation_state, point_state = functions["arm_step"], functions["_evaluation_state"], \
        functions["point_state"]
    n = 3 * n_modules
    n_obs = 12 + n

    @cuda.jit(device=True)
    def observe(row, tip, goal, setpoint):
        """One arm's observation (``reach_observation``): tip, goal, goal − tip, tip velocity, set-points."""
        for k in range(3):
            row[k] = tip[k]
            row[3 + k] = goal[k]
            row[6 + k] = goal[k] - tip[k]
            row[9 + k] = tip[3 + k]
        for i in range(n):
            row[12 + i] = setpoint[i]

    @cuda.jit
    def kernel(ints, table, trig, sec, lref, mass, inertia, gravity, stiffness, rayleigh, legs_to_arc, radius,
               leg_cos, leg_sin, u, w, a, c, rest, legs, fresh, goal, steps, actions, mode, reset, u0, c0, tip0,
               setpoint0, goals, rng, coef, t_low, t_span, frame_skip, passes, max_steps,
               obs, final_obs, reward, terminated, truncated, distance):
        b = cuda.grid(1)
        if b >= u.shape[0]:
            return
        jac = cuda.local.array((n_modules, 3, 3), float64)
        for i in range(n_modules):
            for r in range(3):
                for p in range(3):
                    jac[i, r, p] = 0.0
        ws = (cuda.local.array(n, float64), cuda.local.array(n, float64), cuda.local.array(n, float64),
              cuda.local.array(n, float64), cuda.local.array(n, float64), cuda.local.array(n, float64), jac,
              cuda.local.array((n, n), float64), cuda.local.array((n_joints, 6), float64),
              cuda.local.array((n_joints, 16), float64), cuda.local.array((n_joints, 6), float64),
              cuda.local.array((n, n), float64), cuda.local.array((n_angles, 2), float64))
        sws = (cuda.local.array((n, n), float64), cuda.local.array((n, n), float64),
               cuda.local.array((12, n), float64))
        tip = cuda.local.array(6, float64)
        done = False
        if mode == 0:
            M_s = cuda.local.array((n, n), float64)
            h_s = cuda.local.array(n, float64)
            g_s = cuda.local.array(n, float64)
            u1, w1, a1, c1 = (cuda.local.array(n, float64), cuda.local.array(n, float64),
                              cuda.local.array(n, float64), cuda.local.array(n, float64))
            u2, w2, a2, c2 = (cuda.local.array(n, float64), cuda.local.array(n, float64),
                              cuda.local.array(n, float64), cuda.local.array(n, float64))
            rest_s, rest_e = cuda.local.array(n, float64), cuda.local.array(n, float64)
            target, zero, lg = cuda.local.array(n, float64), cuda.local.array(n, float64), cuda.local.array(n, float64)
            setpoint = cuda.local.array(n, float64)
            for i in range(n):
                x = min(max(np.float64(actions[b, i]), -1.0), 1.0)
                t = t_low[i] + (x + 1.0) * 0.5 * t_span[i]  # inflation time [s] (SoftEnv._action_to_model)
                setpoint[i] = min(max(2.0 * (t - t_low[i]) / t_span[i] - 1.0, -1.0), 1.0)
                target[i] = coef[7] + coef[8] * t  # eq. 1: the leg's length at that inflation [m]
                zero[i] = 0.0
                u1[i], w1[i], a1[i], c1[i] = u[b, i], w[b, i], a[b, i], c[b, i]
                rest_s[i], lg[i] = rest[b, i], legs[b, i]
            first = fresh[b] and passes > 0
            coefficients = (coef[0], coef[1], coef[2], coef[3], coef[4])
            for _ in range(frame_skip):
                for i in range(n):  # the legs toward their targets at the fill and vent rates
                    change = min(max(target[i] - lg[i], -coef[6]), coef[5])
                    lg[i] = lg[i] + change
                for m in range(n_modules):  # the rest arc (L, a, b) of each module's legs
                    for r in range(3):
                        s = 0.0
                        for j in range(3):
                            s += legs_to_arc[b, r, j] * lg[3 * m + j]
                        rest_e[3 * m + r] = s
                    rest_e[3 * m] -= coef[9]
                arm_step((ints, table, trig, sec, lref), mass[b], inertia[b], gravity[b], stiffness[b], rayleigh[b],
                         u1, w1, a1, c1, rest_s, rest_e, zero, zero, False, first, coefficients, passes, False,
                         M_s, h_s, g_s, u2, w2, a2, c2, ws, sws)
                first = False
                u1, u2 = u2, u1
                w1, w2 = w2, w1
                a1, a2 = a2, a1
                c1, c2 = c2, c1
                for i in range(n):
                    rest_s[i] = rest_e[i]
            for i in range(n):
                u[b, i], w[b, i], a[b, i], c[b, i] = u1[i], w1[i], a1[i], c1[i]
                rest[b, i], legs[b, i] = rest_s[i], lg[i]
            fresh[b] = False
            evaluation_state(sec, lref, u1, w1, c1, ws)
            point_state(ints, table, c1, ws[2], tip)
            # the reward terms (PeterReachEnv.goal_terms on the float32 tip and goal)
            d2 = 0.0
            for k in range(3):
                diff = np.float64(np.float32(goal[b, k])) - np.float64(np.float32(tip[k]))
                d2 += diff * diff
            dist = math.sqrt(d2)
            distance[b] = dist
            r_total = -coef[10] * dist
            if coef[12] > 0.0 and dist < coef[11]:
                r_total += coef[12]
            reward[b] = r_total
            # validity (PeterReachEnv.model_violation): finite, no leg crushed, bends <= π, rates < 1e3
            bad = False
            for i in range(n):
                if not (abs(u1[i]) < 1e300 and abs(w1[i]) < 1e3):
                    bad = True
            for m in range(n_modules):
                x, ab, bb = u1[3 * m], u1[3 * m + 1], u1[3 * m + 2]
                if math.sqrt(ab * ab + bb * bb) > math.pi:
                    bad = True
                for j in range(3):
                    leg = x + coef[9] - radius[b] * (ab * leg_cos[j] + bb * leg_sin[j])
                    if not leg >= coef[13]:
                        bad = True
            steps[b] += 1
            terminated[b] = bad
            truncated[b] = max_steps > 0 and steps[b] >= max_steps
            done = bad or truncated[b]
            observe(obs[b], tip, goal[b], setpoint)
            if done:
                for k in range(n_obs):
                    final_obs[b, k] = obs[b, k]
        if (mode == 1 and reset[b]) or done:  # a new episode: at rest, uninflated, a new goal
            for i in range(n):
                u[b, i], w[b, i], a[b, i], rest[b, i], legs[b, i] = u0[i], 0.0, 0.0, u0[i], coef[7]
                c[b, i] = c0[i]
            fresh[b] = True
            steps[b] = 0
            pick = min(int(xoroshiro128p_uniform_float64(rng, b) * goals.shape[0]), goals.shape[0] - 1)
            for k in range(3):
                goal[b, k] = goals[pick, k]
            observe(obs[b], tip0, goal[b], setpoint0)

    return kernel


class PeterReachCudaVectorEnv(VectorEnv):
    """``num_envs`` soft PETER arms reaching goals, stepped on a GPU (module docstring).

    Args:
        num_envs: arms.
        max_episode_steps: episode length [steps] (the registered 50).
        n_modules, links_per_module, distance_weight, success_threshold: as
            :class:`~soft_envs.envs.peter_reach.PeterReachEnv`, and so are ``success_reward``,
            ``payload``, ``gravity``, ``vent_rate``, ``leg_stiffness``, ``rayleigh_stiffness``,
            ``radius`` and ``gap``.
        goal_bank_size: goals drawn at construction, from which each reset picks one.
        seed: the goal bank's and the device generators' seed (``reset(seed=)`` reseeds both).
        output: ``"torch"`` (tensors on the GPU, no copy) or ``"numpy"`` (copies, e.g. on numba's
            CUDA simulator).
        threads_per_block: CUDA threads per block (one arm a thread).
        realism: ``"ideal"`` only (the realism draws are not on the device yet).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = 50, n_modules: int = 2,
                 links_per_module: int = 3, distance_weight: float = DISTANCE_WEIGHT,
                 success_threshold: float = SUCCESS_THRESHOLD, success_reward: float = 0.0, payload: float = 0.0,
                 gravity: bool = True, vent_rate: float = VENT_RATE, leg_stiffness: float = DEFAULT_LEG_STIFFNESS,
                 rayleigh_stiffness: float = PETER_RAYLEIGH_STIFFNESS, radius: float = LEG_RADIUS,
                 gap: float = MODULE_GAP, goal_bank_size: int = 65536, seed: int | None = None,
                 output: str = "torch", threads_per_block: int = batched_cuda.THREADS_PER_BLOCK,
                 realism: str = "ideal") -> None:
        if realism != "ideal":
            raise InvalidParameterError("the GPU PeterReach runs realism='ideal' only (its realism draws are not on "
                                        "the device yet); use gym.make_vec(...) on the CPU")
        if output not in ("torch", "numpy"):
            raise InvalidParameterError(f"output must be 'torch' or 'numpy'; got {output!r}")
        self.num_envs = check_integer("num_envs", num_envs, minimum=1, maximum=1 << 24)
        self.max_episode_steps = 0 if max_episode_steps is None else \
            check_integer("max_episode_steps", max_episode_steps, minimum=1)
        check_nonnegative(distance_weight=distance_weight, success_reward=success_reward, payload=payload)
        self.success_threshold = check_positive("success_threshold [m]", success_threshold)
        self.goal_bank_size = check_integer("goal_bank_size", goal_bank_size, minimum=1)
        self.output = output
        self.cuda = cuda_module()
        model = Peter(n_modules, radius=radius, gap=gap, links_per_module=links_per_module,
                      leg_stiffness=leg_stiffness)
        self.model = model
        self.time_step, self.frame_skip = SOFT_TIME_STEP, max(1, round(SOFT_CONTROL_PERIOD / SOFT_TIME_STEP))
        g = STANDARD_GRAVITY if gravity else 0.0
        arms = BatchedSoftPeter(model, self.num_envs, payload=payload, gravity=g, rayleigh_stiffness=rayleigh_stiffness,
                                num_threads=1)
        self.core = CudaSoftArms(arms, threads_per_block=threads_per_block)
        at_rest = BatchedSoftPeter(model, 1, payload=payload, gravity=g, rayleigh_stiffness=rayleigh_stiffness,
                                   num_threads=1)
        at_rest.reset_inflation(None, np.zeros(model.n_dof))
        tip, velocity = at_rest.tip_state()
        to = self.cuda.to_device
        self._u0, self._c0 = to(at_rest.state.u[0].copy()), to(at_rest.state.c[0].copy())
        self._tip0 = to(np.concatenate((tip[0], velocity[0])))
        low, high = model.lower, model.upper
        self._t_low, self._t_span = to(np.asarray(low, dtype=float)), to(np.asarray(high - low, dtype=float))
        self._setpoint0 = to(np.clip(2.0 * (0.0 - low) / (high - low) - 1.0, -1.0, 1.0))
        self._legs_to_arc, self._radius = to(arms.legs_to_arc), to(arms.radius)
        self._leg_cos, self._leg_sin = to(np.cos(model.leg_angles)), to(np.sin(model.leg_angles))
        legs = arms.model.leg_length_at_rest
        am, af, gamma, beta = arms.alpha_parameters
        coef = {"dt": self.time_step, "alpha_m": am, "alpha_f": af, "gamma": gamma, "beta": beta,
                "fill_step": model.leg_rate * self.time_step, "vent_step": float(vent_rate) * self.time_step,
                "rest_length": legs, "fill_rate": model.leg_rate, "reference_length": arms.reference_length,
                "distance_weight": float(distance_weight), "success_threshold": self.success_threshold,
                "success_reward": float(success_reward), "shortest_leg": 0.5 * legs}
        self._coef = to(np.array([coef[k] for k in _COEF]))
        B, n = self.num_envs, model.n_dof
        self._legs = to(np.full((B, n), legs))
        self._goal = self.cuda.device_array((B, 3))
        self._steps = to(np.zeros(B, dtype=np.int64))
        self._obs = self.cuda.device_array((B, 12 + n), dtype=np.float32)
        self._final_obs = self.cuda.device_array((B, 12 + n), dtype=np.float32)
        self._reward = self.cuda.device_array(B)
        self._terminated = self.cuda.device_array(B, dtype=np.bool_)
        self._truncated = self.cuda.device_array(B, dtype=np.bool_)
        self._distance = self.cuda.device_array(B)
        self._no_actions = self.cuda.device_array((B, n), dtype=np.float32)
        self._all = to(np.ones(B, dtype=np.bool_))
        topology = arms.topology
        self._kernel = env_kernel(model.n_modules, topology.n_joints, int(topology.trig.shape[0]))
        self.single_action_space = spaces.Box(-1.0, 1.0, (n,), np.float32)
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (12 + n,), np.float32)
        self.action_space = batch_space(self.single_action_space, B)
        self.observation_space = batch_space(self.single_observation_space, B)
        self._seed(seed)

    def _seed(self, seed: int | None) -> None:
        from numba.cuda.random import create_xoroshiro128p_states

        rng = np.random.default_rng(seed)
        tasks = rng.uniform(self.model.lower, self.model.upper, (self.goal_bank_size, self.model.n_dof))
        self._goals = self.cuda.to_device(np.ascontiguousarray(self.model.forward_arms(tasks)))
        self._rng = create_xoroshiro128p_states(self.num_envs, seed=int(rng.integers(1 << 62)))

    def _launch(self, mode: int, actions, reset) -> None:
        core = self.core
        self._kernel[core.blocks, core.threads_per_block](
            *core.topology, *core.params, self._legs_to_arc, self._radius, self._leg_cos, self._leg_sin,
            core.u, core.w, core.a, core.c, core.rest, self._legs, core.fresh, self._goal, self._steps, actions,
            mode, reset, self._u0, self._c0, self._tip0, self._setpoint0, self._goals, self._rng, self._coef,
            self._t_low, self._t_span, self.frame_skip, core.corrector_passes, self.max_episode_steps,
            self._obs, self._final_obs, self._reward, self._terminated, self._truncated, self._distance)

    def _out(self, array):
        if self.output == "torch":
            return batched_cuda.as_torch(array)
        return np.asarray(array.copy_to_host())

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Every arm at rest with a new goal; ``(obs, info)``."""
        if seed is not None:
            self._seed(seed)
        self._launch(1, self._no_actions, self._all)
        return self._out(self._obs), {}

    def step(self, actions):
        """One control period of every arm; ``(obs, reward, terminated, truncated, info)`` (module docstring)."""
        if hasattr(actions, "__cuda_array_interface__"):
            device_actions = self.cuda.as_cuda_array(actions)
            if tuple(device_actions.shape) != (self.num_envs, self.model.n_dof):
                raise InvalidParameterError(f"actions must have shape {(self.num_envs, self.model.n_dof)}")
        else:
            host = as_real_array(actions, "actions").astype(np.float32)
            if host.shape != (self.num_envs, self.model.n_dof) or not np.all(np.isfinite(host)):
                raise InvalidParameterError(f"actions must be finite, shape {(self.num_envs, self.model.n_dof)}")
            device_actions = self.cuda.to_device(np.ascontiguousarray(host))
        self._launch(0, device_actions, self._all)
        info = {"distance": self._out(self._distance), "final_obs": self._out(self._final_obs)}
        return (self._out(self._obs), self._out(self._reward), self._out(self._terminated),
                self._out(self._truncated), info)

    def state(self) -> dict[str, np.ndarray]:
        """The arms' state and goals as numpy arrays (a copy through the host)."""
        s = self.core.download()
        return {"u": s.u, "w": s.w, "c": s.c, "rest": s.rest, "legs": np.asarray(self._legs.copy_to_host()),
                "goal": np.asarray(self._goal.copy_to_host()), "steps": np.asarray(self._steps.copy_to_host())}

    def set_goals(self, goals: np.ndarray) -> None:
        """Put every arm's goal ``(N, 3)`` [m] (e.g. to compare with the CPU env on the same goals)."""
        goals = np.asarray(goals, dtype=float)
        if goals.shape != (self.num_envs, 3) or not np.all(np.isfinite(goals)):
            raise InvalidParameterError(f"goals must be finite, shape ({self.num_envs}, 3)")
        self._goal.copy_to_device(np.ascontiguousarray(goals))
