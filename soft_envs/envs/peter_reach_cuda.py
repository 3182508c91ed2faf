"""``soft_envs/PeterReach-v0`` with soft physics, its whole vector step on a GPU.

One CUDA kernel a step, one thread an arm (:mod:`soft_envs.envs.peter_reach_cuda_kernel`): the
action into set-points and valve commands, the legs' fill, vent, gains, offsets and leaks,
``frame_skip`` physics steps of the soft arm (the CPU core's ``arm_step``, compiled for CUDA from
the same source: :mod:`soft_envs.sim.batched_cuda`) with the PCC model's validity after each,
the tip in the goals' frame, the sensor's latency and noise, the observation, the reward terms
and the reset of the arms whose episode ended (``autoreset_mode="SameStep"``, as Isaac Lab's
direct envs: the returned observation is the new episode's; ``info["final_obs"]`` holds the ended
one's) — with its ``realism=`` draws, made on the device. Actions, observations, rewards and flags
are device arrays handed to PyTorch without a copy (``output="torch"``); nothing goes through
the host per step.

What it simulates is :class:`~soft_envs.envs.peter_reach_vector.PeterReachVectorEnv` with the
same keywords (soft physics on the batched core; every realism preset; pneumatic or instant legs;
valve delays), which ``tests/sim/test_batched_cuda.py`` checks it against, step by step, on
numba's CUDA simulator (the same draws given to both). Random draws: the CPU env draws goals
(inflation times uniformly, the nominal PCC tip: ``PeterReachEnv.draw_task``) and perturbations
(``Realism.draw``) from each sub-env's generator; here the goals are drawn the same way on the
host at construction into a bank of ``goal_bank_size`` goals (default 65,536, seeded), each reset
picking one, and the perturbations and the sensor noise come from the device's generator
(``xoroshiro128p``, one stream per arm) over the same ranges: the same distributions, not the same
numbers. :meth:`PeterReachCudaVectorEnv.set_perturbations` puts given ones (e.g. the CPU env's).
One difference remains under realism: the CPU env redraws the ~3 % of goals its drawn arm cannot
reach (:mod:`soft_envs.envs.peter_goal_reach`, a bounded fit on the host); a bank goal picked here
after the device's perturbation draw is not checked, so a realistic GPU episode may ask for a goal
beyond its arm (:meth:`PeterReachCudaVectorEnv.set_goals` takes checked ones).

Obstacles (``obstacles=M``, 1 to 8 spheres, as the CPU env's): the bank then holds tasks, each a goal
and its ``M`` spheres drawn by :class:`~soft_envs.envs.obstacle_course.ObstacleCourse` from the same
seeded generator (``goal_bank_size`` defaults to 4,096 tasks: a draw takes ~1 ms on the host), a reset
picking one; the physics steps are the contact's (:func:`soft_envs.sim.contact.arm_step_contact`,
compiled for CUDA from the CPU's source), the observation appends each obstacle's centre and radius
[m] (goals' frame; radius 0: none), and ``info`` has ``collisions`` (touches of an obstacle this
episode, each counting once per touch), ``penetration`` [m] (the deepest of the step's physics steps)
and ``contact_force`` [N] (the total normal force on the arm at the step's end), as the CPU env's.
``info["is_success"]``: the true distance below ``success_threshold`` without a collision this
episode. The info of an arm whose episode ended in the step is its ended episode's (as
``distance``), the observation the new one's. :meth:`PeterReachCudaVectorEnv.set_tasks` puts given
goals and obstacles (e.g. the CPU env's ``goal`` and ``arms.obstacles``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from soft_envs.envs.peter_arms import soft_arms
from soft_envs.envs.peter_reach import PeterReachEnv
from soft_envs.envs.peter_reach_config import MAX_COMMAND_DELAY, PeterReachConfig
from soft_envs.envs.peter_reach_cuda_kernel import COEF, FLAGS, PERTURBATIONS, env_kernel, plant_basis
from soft_envs.exceptions import InvalidParameterError, as_real_array, check_integer
from soft_envs.geometry import STANDARD_GRAVITY
from soft_envs.sim import batched_cuda
from soft_envs.sim.batched_cuda import CudaSoftArms, cuda_module

#: The most goals (or tasks) a bank holds: 2**24, each a few floats on the device.
MAX_GOAL_BANK = 1 << 24


class PeterReachCudaVectorEnv(VectorEnv):
    """``num_envs`` soft PETER arms reaching goals, stepped on a GPU (module docstring).

    Args:
        num_envs: arms.
        max_episode_steps: episode length [steps] (the registered 50; ``None``: no limit).
        goal_bank_size: goals (with ``obstacles``: tasks, a goal and its obstacles) drawn at construction
            (1 to :data:`MAX_GOAL_BANK`),
            from which each reset picks one (default 65,536; 4,096 with obstacles).
        seed: the goal bank's and the device generators' seed (``reset(seed=)`` reseeds both).
        output: ``"torch"`` (tensors on the GPU, no copy) or ``"numpy"`` (copies, e.g. on numba's
            CUDA simulator).
        threads_per_block: CUDA threads per block (one arm a thread).
        config: :class:`~soft_envs.envs.peter_reach.PeterReachEnv`'s configuration (keywords override it).
        **kwargs: its keywords (validated there), ``realism=`` and ``obstacles=`` included; not ``kinematic=True``,
            ``physics="stiff"``, ``backend="pybullet"``, ``goal_conditioned=True``, delta actions,
            a history, an action-rate weight or a render mode (the CPU vector env has them).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = 50, goal_bank_size: int | None = None,
                 seed: int | None = None, output: str = "torch",
                 threads_per_block: int = batched_cuda.THREADS_PER_BLOCK, config: PeterReachConfig | None = None,
                 **kwargs: Any) -> None:
        if output not in ("torch", "numpy"):
            raise InvalidParameterError(f"output must be 'torch' or 'numpy'; got {output!r}")
        self.num_envs = check_integer("num_envs", num_envs, minimum=1, maximum=1 << 24)
        self.max_episode_steps = 0 if max_episode_steps is None else \
            check_integer("max_episode_steps", max_episode_steps, minimum=1)
        self.output = output
        self.cuda = cuda_module()
        #: The single env whose keywords, model and realism the arms take (validated; never stepped).
        self.single = single = PeterReachEnv(config=config, **kwargs)
        self._check_supported(single)
        #: Obstacles per arm (``obstacles=``; 0: none), drawn by the single env's ``course``.
        self.n_obstacles = int(single.obstacles)
        default_bank = 4096 if self.n_obstacles else 65536
        self.goal_bank_size = check_integer("goal_bank_size", default_bank if goal_bank_size is None
                                            else goal_bank_size, minimum=1, maximum=MAX_GOAL_BANK)
        self.config, self.model, self.realism = single.config, single.model, single.realism
        self.time_step, self.frame_skip = single.time_step, single.frame_skip
        self.realistic = not single.realism.is_ideal()
        arms = soft_arms(single, self.num_envs, num_threads=1)
        self.core = CudaSoftArms(arms, threads_per_block=threads_per_block)
        self._upload_constants(single, arms)
        self._allocate(arms)
        self._kernel = env_kernel(self.model.n_modules, arms.topology.n_joints, int(arms.topology.trig.shape[0]),
                                  self._queue, self._history, self.n_obstacles, self.n_points)
        self.single_action_space = single.action_space
        self.single_observation_space = single.observation_space
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._seed(seed)

    @staticmethod
    def _check_supported(single: PeterReachEnv) -> None:
        """Refuse what the kernel does not simulate (the CPU vector env does)."""
        unsupported = {"kinematic=True": single.kinematic, "physics='stiff'": single.physics != "soft",
                       "backend='pybullet'": single.backend != "batched",
                       "goal_conditioned=True": single.goal_conditioned,
                       f"action_mode={single.action_mode!r}": single.action_mode != "absolute",
                       "history": single.history > 0,
                       "action_rate_weight": single.action_rate_weight != 0.0,
                       "collision_weight": single.collision_weight != 0.0,
                       "render_mode": single.render_mode is not None}
        named = [name for name, present in unsupported.items() if present]
        if named:
            single.close()
            raise InvalidParameterError(f"the GPU PeterReach does not run {', '.join(named)}; use gym.make_vec(...) "
                                        "on the CPU (or ClosedLoopVector for delta or task actions and a history)")

    def _upload_constants(self, single: PeterReachEnv, arms) -> None:
        """The per-topology constants, the rest state of the ideal arm and the realism ranges, on the device."""
        model, to = self.model, self.cuda.to_device
        cfg = single.config
        at_rest = soft_arms(single, 1, num_threads=1)
        at_rest.reset_inflation(None, np.zeros(model.n_dof))
        tip, velocity = at_rest.tip_state()
        self._u0, self._c0 = to(at_rest.state.u[0].copy()), to(at_rest.state.c[0].copy())
        self._tip0 = to(np.concatenate((tip[0], velocity[0])))
        low, high = model.lower, model.upper
        self._t_low, self._t_span = to(np.asarray(low, dtype=float)), to(np.asarray(high - low, dtype=float))
        self._setpoint0 = to(single.model_to_action(np.zeros(model.n_dof)).astype(float))
        self._leg_cos, self._leg_sin = to(np.cos(model.leg_angles)), to(np.sin(model.leg_angles))
        legs = model.leg_length_at_rest
        am, af, gamma, beta = arms.alpha_parameters
        dt = self.time_step
        coef = {"dt": dt, "alpha_m": am, "alpha_f": af, "gamma": gamma, "beta": beta,
                "fill_step": model.leg_rate * dt, "vent_step": cfg.actuation.vent_rate * dt,
                "rest_length": legs, "fill_rate": model.leg_rate, "reference_length": arms.reference_length,
                "distance_weight": cfg.reward.distance_weight, "success_threshold": cfg.reward.success_threshold,
                "success_reward": cfg.reward.success_reward, "shortest_leg": 0.5 * legs,
                "gravity": STANDARD_GRAVITY if cfg.physics.gravity else 0.0, "radius": model.radius,
                "module_mass": model.module_mass, "leg_stiffness": model.leg_stiffness,
                "payload": cfg.physics.payload, "command_delay": cfg.actuation.command_delay,
                "control_period": single.dt}
        self._coef = to(np.array([float(coef[k]) for k in COEF]))
        flags = {"realistic": self.realistic, "instant": cfg.actuation.actuation == "instant",
                 "tilted": self.realistic and not single.realism.is_ideal("base_tilt"),
                 "passes": arms.corrector_passes, "max_steps": self.max_episode_steps}
        self._flags = to(np.array([int(flags[k]) for k in FLAGS], dtype=np.int64))
        # the perturbations' ranges, one row per drawn value, and where each perturbation starts
        sizes = single.realism_sizes() if self.realistic else {}
        ranges: list[tuple[float, float]] = []
        starts: list[int] = []
        for name in PERTURBATIONS:
            starts.append(len(ranges))
            ranges += [single.realism.ranges[name]] * int(sizes.get(name, 1))
        #: Where each perturbation's values start in a row of :meth:`perturbations` (:data:`PERTURBATIONS`).
        self.slots = dict(zip(PERTURBATIONS, starts, strict=True))
        self._sizes = {name: int(sizes.get(name, 1)) for name in PERTURBATIONS}
        self._ranges, self._slots = to(np.array(ranges, dtype=float)), to(np.array(starts, dtype=np.int64))
        basis = plant_basis(model, arms.topology)
        self._basis = (to(basis["mass_m"]), to(basis["mass_p"]), to(np.stack(
            [basis[k] for k in ("inertia_m", "inertia_mr", "inertia_p", "inertia_pr")])),
                       to(np.ascontiguousarray(basis["stiffness"])), to(np.ascontiguousarray(basis["legs_to_arc"])))
        # valve commands pending at most (one a control period), sensor samples kept
        longest = cfg.actuation.command_delay + (single.realism.ranges["command_delay"][1] if self.realistic else 0.0)
        self._queue = int(math.ceil(min(longest, 2 * MAX_COMMAND_DELAY) / single.dt + 1e-9)) + 2
        latency = single.realism.ranges["observation_latency"][1] if self.realistic else 0.0
        self._history = int(round(latency / single.dt)) + 1

    def _allocate(self, arms) -> None:
        """The per-arm arrays of the legs, valves, sensor, realism and task on the device."""
        B, n, to, empty = self.num_envs, self.model.n_dof, self.cuda.to_device, self.cuda.device_array
        legs = self.model.leg_length_at_rest
        self._legs_to_arc, self._radius = to(arms.legs_to_arc), to(arms.radius)
        self._clock = to(np.zeros(B))
        self._legs, self._current = to(np.full((B, n), legs)), to(np.full((B, n), legs))
        self._due, self._queued = to(np.full((B, self._queue), np.inf)), to(np.zeros((B, self._queue, n)))
        self._gain, self._offset = to(np.ones((B, n))), to(np.zeros((B, n)))
        self._leak, self._extension = to(np.zeros((B, n))), to(np.zeros((B, n)))
        self._perfect = to(np.ones(B, dtype=np.bool_))
        self._delay = to(np.full(B, self.config.actuation.command_delay))
        self._hist, self._count = to(np.zeros((B, self._history, 6))), to(np.zeros(B, dtype=np.int64))
        self._latency, self._noise = to(np.zeros(B, dtype=np.int64)), to(np.zeros(B))
        self._rot = to(np.repeat(np.eye(3)[None], B, axis=0))
        self._draws = to(np.zeros((B, max(1, sum(self._sizes.values())))))
        self._goal = empty((B, 3))
        self._steps = to(np.zeros(B, dtype=np.int64))
        n_obs = 12 + n + 4 * self.n_obstacles
        self._obs, self._final_obs = empty((B, n_obs), dtype=np.float32), empty((B, n_obs), dtype=np.float32)
        self._reward, self._distance = empty(B), empty(B)
        self._terminated, self._truncated = empty(B, dtype=np.bool_), empty(B, dtype=np.bool_)
        self._no_actions = empty((B, n), dtype=np.float32)
        self._all = to(np.ones(B, dtype=np.bool_))
        self._allocate_contact(arms)

    def _allocate_contact(self, arms) -> None:
        """The obstacles' arrays on the device: each arm's spheres (goals' frame) and shape rows (its
        base frame), the contact's parameters and body (the CPU env's :class:`~soft_envs.sim.scene.ArmScene`'s),
        the touches and the step's outputs (one unused slot without obstacles)."""
        B, M, to = self.num_envs, self.n_obstacles, self.cuda.to_device
        slots = max(M, 1)
        if M:  # the CPU env's scene (PeterArms): its body's capsules and the contact's parameters
            scene = arms.add_scene(M)
            points, cp, self._contact_radius = scene.points, scene.cp[0], float(scene.radius)  # (slots, 4)
        else:
            points, cp, self._contact_radius = np.zeros(1, dtype=np.int64), np.zeros((slots, 4)), 0.0
        #: Backbone points after the base that carry the body's capsules (0 without obstacles).
        self.n_points = int(points.size) if M else 0
        self._points, self._cp = to(np.ascontiguousarray(points)), to(np.ascontiguousarray(cp))
        self._shapes, self._shape_velocity = to(np.zeros((B, slots, 16))), to(np.zeros((slots, 6)))
        self._obstacles = to(np.zeros((B, slots, 4)))
        self._touching, self._touches = to(np.zeros((B, slots), dtype=np.bool_)), to(np.zeros(B, dtype=np.int64))
        self._collisions, self._success = to(np.zeros(B, dtype=np.int64)), to(np.zeros(B, dtype=np.bool_))
        self._penetration, self._contact_force = to(np.zeros(B)), to(np.zeros(B))

    def _seed(self, seed: int | None) -> None:
        from numba.cuda.random import create_xoroshiro128p_states

        rng = np.random.default_rng(seed)
        tasks = rng.uniform(self.model.lower, self.model.upper, (self.goal_bank_size, self.model.n_dof))
        self._goals = self.cuda.to_device(np.ascontiguousarray(self.model.forward_arms(tasks)))
        course = self.single.course
        bank = np.zeros((self.goal_bank_size, max(self.n_obstacles, 1), 4))
        if course is not None:  # each goal's obstacles, drawn as the CPU env's (PeterReachEnv.draw_task)
            for i, t in enumerate(tasks):
                bank[i] = course.draw(rng, t)
        self._bank = self.cuda.to_device(bank)
        self._rng = create_xoroshiro128p_states(self.num_envs, seed=int(rng.integers(1 << 62)))

    def _launch(self, mode: int, actions, reset) -> None:
        core = self.core
        self._kernel[core.blocks, core.threads_per_block](
            *core.topology, *core.params, self._legs_to_arc, self._radius, self._leg_cos, self._leg_sin,
            core.u, core.w, core.a, core.c, core.rest, core.fresh, self._clock, self._legs, self._current, self._due,
            self._queued, self._gain, self._offset, self._leak, self._extension, self._perfect, self._delay,
            self._hist, self._count, self._latency, self._noise, self._rot, self._draws, self._ranges, self._slots,
            *self._basis, self._goal, self._steps, actions, mode, reset, self._u0, self._c0, self._tip0,
            self._setpoint0, self._goals, self._rng, self._coef, self._flags, self._t_low, self._t_span,
            self.frame_skip, self._obs, self._final_obs, self._reward, self._terminated, self._truncated,
            self._distance, self._shapes, self._shape_velocity, self._cp, self._contact_radius, self._points,
            self._obstacles, self._bank, self._touching, self._touches, self._collisions, self._penetration,
            self._contact_force, self._success)

    @property
    def device_observations(self):
        """The device array every step writes the observations into (what ``output="torch"`` hands
        to PyTorch without a copy)."""
        return self._obs

    def _out(self, array):
        if self.output == "torch":
            return batched_cuda.as_torch(array)
        return np.asarray(array.copy_to_host())

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Every arm at rest with a new goal; ``(obs, info)``."""
        if seed is not None:
            self._seed(seed)
        self._launch(1, self._no_actions, self._all)
        return self._out(self._obs), ({"realism": self.perturbations()} if self.realistic else {})

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
        info = {"distance": self._out(self._distance), "is_success": self._out(self._success),
                "final_obs": self._out(self._final_obs)}
        if self.n_obstacles:
            info.update(collisions=self._out(self._collisions), penetration=self._out(self._penetration),
                        contact_force=self._out(self._contact_force))
        return (self._out(self._obs), self._out(self._reward), self._out(self._terminated),
                self._out(self._truncated), info)

    def state(self) -> dict[str, np.ndarray]:
        """The arms' state and goals as numpy arrays (a copy through the host)."""
        s = self.core.download()
        out = {"u": s.u, "w": s.w, "c": s.c, "rest": s.rest, "legs": np.asarray(self._legs.copy_to_host()),
               "goal": np.asarray(self._goal.copy_to_host()), "steps": np.asarray(self._steps.copy_to_host())}
        if self.n_obstacles:
            out["obstacles"] = np.asarray(self._obstacles.copy_to_host())
        return out

    def set_goals(self, goals: np.ndarray) -> None:
        """Put every arm's goal ``(N, 3)`` [m] (e.g. to compare with the CPU env on the same goals; its
        obstacles kept: :meth:`set_tasks` puts both)."""
        goals = np.asarray(goals, dtype=float)
        if goals.shape != (self.num_envs, 3) or not np.all(np.isfinite(goals)):
            raise InvalidParameterError(f"goals must be finite, shape ({self.num_envs}, 3)")
        self._goal.copy_to_device(np.ascontiguousarray(goals))

    def set_tasks(self, goals: np.ndarray, obstacles: np.ndarray | None = None):
        """Start every arm's episode anew (at rest, its robot's perturbations kept) on the given task:
        goals ``(N, 3)`` [m] and, with ``obstacles``, spheres ``(N, M, 4)`` (centre [m] in the goals'
        frame, radius [m]; 0: none), e.g. the CPU env's ``goal`` and ``arms.obstacles``; returns the
        observations."""
        M = self.n_obstacles
        goals = np.asarray(goals, dtype=float)
        if goals.shape != (self.num_envs, 3) or not np.all(np.isfinite(goals)):
            raise InvalidParameterError(f"goals must be finite, shape ({self.num_envs}, 3)")
        if (obstacles is None) != (M == 0):
            raise InvalidParameterError(f"give obstacles (N, {M}, 4) exactly when the env has obstacles (it has {M})")
        if obstacles is not None:
            spheres = np.asarray(obstacles, dtype=float)
            if spheres.shape != (self.num_envs, M, 4) or not np.all(np.isfinite(spheres)) \
                    or np.any(spheres[..., 3] < 0) or np.any(spheres[..., 3] >= 0.2):
                raise InvalidParameterError(f"obstacles must be finite, shape ({self.num_envs}, {M}, 4), "
                                            "radii in [0, 0.2) m")
            self._obstacles.copy_to_device(np.ascontiguousarray(spheres))
        self._goal.copy_to_device(np.ascontiguousarray(goals))
        self._launch(2, self._no_actions, self._all)
        return self._out(self._obs)

    def perturbations(self) -> dict[str, np.ndarray]:
        """Every arm's realism draws of its episode, ``{name: (N,)}`` or ``(N, k)`` for per-element ones
        (``info["realism"]`` of the CPU env; a copy through the host)."""
        if not self.realistic:
            return {}
        draws = np.asarray(self._draws.copy_to_host())
        out = {}
        for name, start in self.slots.items():
            size = self._sizes[name]
            out[name] = draws[:, start:start + size] if name in self.single.realism_sizes() else draws[:, start]
        return out

    def set_perturbations(self, drawn: dict[str, np.ndarray]):
        """Start every arm's episode anew with the given realism draws (``{name: (N,)}`` or ``(N, k)``,
        e.g. the CPU env's ``info["realism"]``) and its goal kept; returns the observations."""
        if not self.realistic:
            raise InvalidParameterError("set_perturbations needs a realism other than 'ideal'")
        missing = sorted(set(self.slots) - set(drawn))
        if missing:
            raise InvalidParameterError(f"perturbations missing: {missing}")
        rows = np.zeros((self.num_envs, int(self._draws.shape[1])))
        for name, start in self.slots.items():
            size = self._sizes[name]
            values = np.asarray(drawn[name], dtype=float).reshape(self.num_envs, -1)
            low, high = self.realism.table[name].valid
            if values.shape[1] != size or not np.all((values >= low) & (values <= high)):
                raise InvalidParameterError(f"{name} must lie in [{low:g}, {high:g}], shape ({self.num_envs}, {size})")
            rows[:, start:start + size] = values
        self._draws.copy_to_device(rows)
        self._launch(2, self._no_actions, self._all)
        return self._out(self._obs)

    def close_extras(self, **kwargs: Any) -> None:
        self.single.close()
