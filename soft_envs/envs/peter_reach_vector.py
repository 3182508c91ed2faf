"""The native vector form of ``soft_envs/PeterReach-v0``: ``N`` PETER arms per batched call.

``gym.make_vec("soft_envs/PeterReach-v0", num_envs=N, …)`` returns a :class:`PeterReachVectorEnv`
(the registered ``vector_entry_point`` is :func:`make_peter_reach_vector`) for the soft physics
(the default) and for ``kinematic=True``: the single env's spaces, rewards, ``info`` keys,
realism and keywords, every sub-env an episode of the single env
(:mod:`soft_envs.envs.vector_base`). ``physics="stiff"`` (PyBullet's position servos, no batched
form) comes back as a Gymnasium ``SyncVectorEnv`` of single envs, with the same
``max_episode_steps`` and ``autoreset_mode``.

Soft physics: the batched soft-arm core (:class:`~soft_envs.sim.batched_bodies.BatchedSoftPeter`,
every arm with its own leg radius, module mass, leg stiffness, payload and base tilt) driven by
the batched pneumatic legs (:class:`~soft_envs.sim.batched_actuators.BatchedPneumaticLegs`: per-leg
gains, offsets, leaks, per-arm valve delay) — what ``PeterReachEnv`` does for one arm on
:class:`~soft_envs.sim.peter_soft.SoftPeterBody` (PyBullet's M, C, G). Kinematic: the tips are
:meth:`Peter.forward_arms` of the commanded inflation times (ideal) or, under ``realism=``, of
the legs' true state on each arm's own leg radius. Either way the tip is turned by the arm's base
tilt and measured through a per-arm noisy, delayed sensor
(:class:`~soft_envs.envs.vector_parts.BatchedSensor`). The observation, the reward terms,
``compute_reward``, the action mapping and the reset draws are the single env's own functions
(vectorised over the leading axis). ``render()`` poses the prototype's PyBullet arm (soft) or
drawing body (kinematic) in sub-env 0's shape.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from soft_envs.envs import ENVIRONMENTS
from soft_envs.envs.peter_parts import reach_observation
from soft_envs.envs.peter_reach import PLANT_REALISM, PeterReachEnv
from soft_envs.envs.vector_base import SoftVectorEnv
from soft_envs.envs.vector_parts import BatchedSensor
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import quaternion_from_rotation_vector, quaternion_to_matrix
from soft_envs.sim import threads
from soft_envs.sim.batched_actuators import BatchedPneumaticLegs
from soft_envs.sim.batched_bodies import BatchedSoftPeter
from soft_envs.sim.bullet import STANDARD_GRAVITY
from soft_envs.sim.peter_soft import SoftPeterBody

ENV_ID = "soft_envs/PeterReach-v0"
MAX_EPISODE_STEPS = ENVIRONMENTS[ENV_ID][1]


class PeterReachVectorEnv(SoftVectorEnv[PeterReachEnv]):
    """``num_envs`` PeterReach arms, soft or kinematic (module docstring).

    Args:
        num_envs: number of sub-envs.
        max_episode_steps: episode length [steps] (the registered 50; ``None``: no limit).
        autoreset_mode: ``"NextStep"`` (default), ``"SameStep"`` or ``"Disabled"``.
        num_threads: threads that step the arms (default: the cores this process may use; the
            results are the same for any number, :mod:`soft_envs.sim.threads`).
        **kwargs: :class:`~soft_envs.envs.peter_reach.PeterReachEnv` keywords (not ``physics="stiff"``).
    """

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, num_threads: int | None = None,
                 **kwargs: Any) -> None:
        num_threads = threads.check_threads(num_threads)
        single = PeterReachEnv(**kwargs)
        if not single.kinematic and single.physics != "soft":
            single.close()
            raise InvalidParameterError("PeterReachVectorEnv runs the soft physics or kinematic=True; gym.make_vec "
                                        "gives physics='stiff' as a SyncVectorEnv")
        super().__init__(single, num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode)
        model, n, n_dof = single.model, self.num_envs, single.model.n_dof
        self.inflation_times = np.zeros((n, n_dof))  # commanded set-points [s]
        self.goal = np.zeros((n, 3))  # [m], base frame of the goals
        self.tip = np.zeros((n, 3))  # true tip [m]
        self.tip_velocity = np.zeros((n, 3))  # [m/s]
        self.measured_tip = np.zeros((n, 3))
        self.measured_velocity = np.zeros((n, 3))
        realism = single.realism
        self.realistic = not realism.is_ideal()
        self.body: BatchedSoftPeter | None = None
        legs = single.legs  # (the ideal kinematic arms do not use them)
        self.legs = BatchedPneumaticLegs(n, n_dof, rest_length=legs.rest_length, fill_rate=legs.fill_rate,
                                         vent_rate=legs.vent_rate, delay=legs.delay, instant=legs.instant)
        if not single.kinematic:
            self.body = BatchedSoftPeter(model, n, payload=single.payload,
                                         gravity=STANDARD_GRAVITY if single.gravity else 0.0,
                                         rayleigh_stiffness=single.rayleigh_stiffness, num_threads=num_threads)
        if self.realistic:
            self.sensor = BatchedSensor(n, 6, int(round(realism.ranges["observation_latency"][1] / single.dt)))
            self.clock = np.zeros(n)  # [s] since each kinematic arm's reset
            self.base_rotation = np.repeat(np.eye(3)[None], n, axis=0)
            self.radius = np.full(n, model.radius)  # each arm's leg-circle radius [m]
            self._tilted = not realism.is_ideal("base_tilt")
            self._plant_realism = any(not realism.is_ideal(name) for name in PLANT_REALISM if name in realism.table)

    # ------------------------------------------------------------------ hooks
    def _reset_arms(self, rows: np.ndarray, tasks: list, options: dict[str, Any]) -> None:
        model, body, legs = self.single.model, self.body, self.legs
        self.inflation_times[rows] = 0.0
        self.goal[rows] = model.forward_arms(np.array(tasks))
        if self.realistic:
            self._apply_realism(rows)
        if body is not None or self.realistic:
            legs.reset(rows, self.inflation_times[rows])
        if body is not None:
            body.reset_inflation(rows, self.inflation_times[rows])
            if self.realistic:  # legs' offsets at rest (as PeterReachEnv._reset_model)
                imperfect = rows[~legs.perfect[rows]]
                if imperfect.size:
                    u = body.arc_of_legs(legs.actual_lengths[imperfect], imperfect)
                    body.reset(imperfect, u, reference=np.zeros(3 * model.n_modules), rest=u)
        elif self.realistic:
            self.clock[rows] = 0.0
        if self.realistic:
            self._read_tips(rows, reset=True)

    def _apply_realism(self, rows: np.ndarray) -> None:
        """The drawn perturbations of ``rows`` on their legs, sensor and arm (``PeterReachEnv._apply_realism``)."""
        single, model = self.single, self.single.model
        d = {name: values[rows] for name, values in self.perturbations.items()}
        self.legs.set_imperfections(rows, d["leg_gain"] * d["supply_gain"][:, None], d["leg_offset"], d["leak_rate"])
        self.legs.set_delay(rows, single.command_delay + d["command_delay"])
        latency = np.rint(d["observation_latency"] / single.dt).astype(np.int64)
        noise = np.zeros((rows.size, 6))
        noise[:, :3] = d["observation_noise"][:, None]  # tip [m]; velocity noise-free
        self.sensor.configure(rows, noise, latency, [self.realism_rngs[i] for i in rows.tolist()])
        tilt = np.concatenate((d["base_tilt"], np.zeros((rows.size, 1))), axis=1)
        self.base_rotation[rows] = quaternion_to_matrix(quaternion_from_rotation_vector(tilt))
        self.radius[rows] = model.radius * (1.0 + d["radius_error"])
        if self.body is not None and self._plant_realism:  # the simulated arms become the plants
            mass = model.module_mass * (1.0 + d["mass_error"])
            stiffness = model.leg_stiffness * (1.0 + d["leg_stiffness_error"])
            plants = [model.with_parameters(radius=r, kinematics="pcc", module_mass=m, leg_stiffness=k)
                      for r, m, k in zip(self.radius[rows].tolist(), mass.tolist(), stiffness.tolist(), strict=True)]
            self.body.set_model(rows, plants, single.payload + d["payload"])
            self.body.set_base_orientation(rows, quaternion_from_rotation_vector(tilt))

    def _apply_actions(self, actions: np.ndarray) -> None:
        self.inflation_times = self.single.action_to_model(actions)
        if self.body is not None:
            self.legs.command(self.inflation_times, self.body.state.time)
        elif self.realistic:
            self.legs.command(self.inflation_times, self.clock)

    def _simulate(self) -> None:
        single, body, legs = self.single, self.body, self.legs
        if body is None:
            if self.realistic:  # the kinematic legs over the control period
                period = single.frame_skip * single.time_step
                legs.advance(period, self.clock)
                self.clock += period
            return
        dt, zero = single.time_step, np.zeros((self.num_envs, body.n_dof))
        for _ in range(single.frame_skip):
            rest_end = body.arc_of_legs(legs.advance(dt, body.state.time))
            body.step(dt, zero, rest_end=rest_end)

    def _read_tips(self, rows, reset: bool = False) -> None:
        """True tips of ``rows`` and their measurements (as ``PeterReachEnv._read_tip``)."""
        model = self.single.model
        if self.body is not None:
            tip, velocity = (x[rows] for x in self.body.tip_state())
        elif not self.realistic:
            self.tip[rows] = self.measured_tip[rows] = model.forward_arms(self.inflation_times[rows])
            return
        else:
            tip, velocity = model.forward_arms(self.legs.inflation[rows], self.radius[rows]), self.tip_velocity[rows]
        if self.realistic and self._tilted:  # the base frame -> the goals' frame
            tip = np.einsum("bij,bj->bi", self.base_rotation[rows], tip)
            velocity = np.einsum("bij,bj->bi", self.base_rotation[rows], velocity)
        self.tip[rows], self.tip_velocity[rows] = tip, velocity
        if not self.realistic:
            self.measured_tip[rows], self.measured_velocity[rows] = tip, velocity
            return
        state = np.concatenate((tip, velocity), axis=1)
        measured = self.sensor.reset(rows, state) if reset else self.sensor.read(rows, state)
        self.measured_tip[rows], self.measured_velocity[rows] = measured[:, :3], measured[:, 3:]

    def _observe(self, rows):
        self._read_tips(rows)
        return reach_observation(self.measured_tip[rows], self.goal[rows], self.measured_velocity[rows],
                                 self.single.model_to_action(self.inflation_times[rows]), self.goal_conditioned)

    def _reward_terms(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        return self.single.goal_terms(self.measured_tip.astype(np.float32), self.goal.astype(np.float32))

    def _extra_info(self, rows) -> dict[str, Any]:
        distance = self.single.distances(self.tip[rows].astype(np.float32), self.goal[rows].astype(np.float32))
        info = {"distance": distance, "is_success": distance < self.single.success_threshold,
                "inflation_times": self.inflation_times[rows].copy()}
        if self.body is not None or self.realistic:
            info["leg_inflation"] = self.legs.inflation[rows]
        return info

    def _commands(self, rows) -> np.ndarray:
        return self.inflation_times[rows]

    def _sync_render(self) -> None:
        single = self.single
        single.inflation_times = self.inflation_times[0].copy()
        single.goal = self.goal[0].copy()
        if self.body is not None and isinstance(single.body, SoftPeterBody):  # the prototype's arm, sub-env 0's shape
            single.body.set_base_orientation(tuple(self.body.base_orientation[0]))
            single.body.set_state(self.body.state.u[0], reference=self.body.state.c[0])
            if single.goal_marker is not None:
                single.client.resetBasePositionAndOrientation(single.goal_marker, single.goal.tolist(), [0, 0, 0, 1])


def make_peter_reach_vector(num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                            autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, device: str = "cpu",
                            **kwargs: Any) -> gym.vector.VectorEnv:
    """The ``vector_entry_point`` of ``soft_envs/PeterReach-v0``: the native vector env (soft physics,
    ``kinematic=True``), else (``physics="stiff"``) a ``SyncVectorEnv`` of single envs;
    ``device="cuda"``: the soft arms on a GPU
    (:class:`~soft_envs.envs.peter_reach_cuda.PeterReachCudaVectorEnv`, autoreset ``"SameStep"``)."""
    if device == "cuda":
        from soft_envs.envs.peter_reach_cuda import PeterReachCudaVectorEnv

        if AutoresetMode(autoreset_mode) is not AutoresetMode.SAME_STEP and autoreset_mode != AutoresetMode.NEXT_STEP:
            raise InvalidParameterError("the GPU PeterReach resets in the same step (autoreset_mode='SameStep')")
        return PeterReachCudaVectorEnv(num_envs, max_episode_steps=max_episode_steps, **kwargs)
    if device != "cpu":
        raise InvalidParameterError(f"device must be 'cpu' or 'cuda'; got {device!r}")
    if kwargs.get("kinematic", False) or kwargs.get("physics", "soft") == "soft":
        return PeterReachVectorEnv(num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode,
                                   **kwargs)
    kwargs.pop("num_threads", None)  # single envs: one arm each
    make = [lambda: gym.make(ENV_ID, max_episode_steps=max_episode_steps, **kwargs)] * int(num_envs)
    return gym.vector.SyncVectorEnv(make, autoreset_mode=AutoresetMode(autoreset_mode))
