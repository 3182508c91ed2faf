"""The native vector form of ``soft_envs/PeterReach-v0``: ``N`` PETER arms per numpy call.

``gym.make_vec("soft_envs/PeterReach-v0", num_envs=N, kinematic=True, …)`` returns a
:class:`PeterReachVectorEnv` (the registered ``vector_entry_point`` is
:func:`make_peter_reach_vector`): the single env's spaces, rewards, ``info`` keys, realism and
keywords, every sub-env an episode of the single env (:mod:`soft_envs.envs.vector_base`).
Variants without a batched form — the PyBullet physics (``physics="soft"``, the default, and
``"stiff"``) — come back as a Gymnasium ``SyncVectorEnv`` of single envs, with the same
``max_episode_steps`` and ``autoreset_mode``.

The kinematic arms are :meth:`Peter.forward_arms` of the commanded inflation times (ideal) or, under
``realism=``, of the legs' true state (:class:`~soft_envs.envs.vector_parts.BatchedLegs`: per-leg
gains, offsets and leaks, a per-arm valve delay) on each arm's own leg radius, turned by its base
tilt and measured through a per-arm noisy, delayed sensor — what the single kinematic env does
for one arm. The observation, the reward terms, ``compute_reward``, the action mapping and the
reset draws are the single env's own functions (vectorised over the leading axis).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from soft_envs.envs import ENVIRONMENTS
from soft_envs.envs.peter_reach import PeterReachEnv, reach_observation
from soft_envs.envs.vector_base import SoftVectorEnv
from soft_envs.envs.vector_parts import BatchedLegs, BatchedSensor
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import quaternion_from_rotation_vector, quaternion_to_matrix

ENV_ID = "soft_envs/PeterReach-v0"
MAX_EPISODE_STEPS = ENVIRONMENTS[ENV_ID][1]


class PeterReachVectorEnv(SoftVectorEnv):
    """``num_envs`` kinematic PeterReach arms (module docstring).

    Args:
        num_envs: number of sub-envs.
        max_episode_steps: episode length [steps] (the registered 50; ``None``: no limit).
        autoreset_mode: ``"NextStep"`` (default), ``"SameStep"`` or ``"Disabled"``.
        **kwargs: :class:`~soft_envs.envs.peter_reach.PeterReachEnv` keywords (``kinematic=True``).
    """

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, **kwargs: Any) -> None:
        single = PeterReachEnv(**kwargs)
        if not single.kinematic:
            single.close()
            raise InvalidParameterError("PeterReachVectorEnv runs kinematic=True; gym.make_vec gives the "
                                        "physics variants as a SyncVectorEnv")
        super().__init__(single, num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode)
        model, n, n_dof = single.model, self.num_envs, single.model.n_dof
        self.inflation_times = np.zeros((n, n_dof))  # commanded set-points [s]
        self.goal = np.zeros((n, 3))  # [m], base frame of the goals
        self.tip = np.zeros((n, 3))  # true tip [m]
        self.tip_velocity = np.zeros((n, 3))  # [m/s] (zero: no dynamics)
        self.measured_tip = np.zeros((n, 3))
        self.measured_velocity = np.zeros((n, 3))
        self.realistic = not single.realism.is_ideal()
        if self.realistic:
            ranges = single.realism.ranges
            self.legs = BatchedLegs(n, n_dof, rest_length=model.leg_length_at_rest, fill_rate=model.leg_rate,
                                    vent_rate=single.legs.vent_rate, instant=True, period=single.dt,
                                    max_delay=single.command_delay + ranges["command_delay"][1])
            self.sensor = BatchedSensor(n, 6, int(round(ranges["observation_latency"][1] / single.dt)))
            self.clock = np.zeros(n)  # [s] since each arm's reset
            self.base_rotation = np.repeat(np.eye(3)[None], n, axis=0)
            self.radius = np.full(n, model.radius)  # each arm's leg-circle radius [m]
            self._tilted = not single.realism.is_ideal("base_tilt")

    # ------------------------------------------------------------------ hooks
    def _reset_arms(self, rows: np.ndarray, tasks: list, options: dict[str, Any]) -> None:
        single, model = self.single, self.single.model
        self.inflation_times[rows] = 0.0
        self.goal[rows] = model.forward_arms(np.array(tasks))
        if self.realistic:  # as PeterReachEnv._apply_realism, per arm
            d = {name: values[rows] for name, values in self.perturbations.items()}
            self.legs.reset(rows, self.inflation_times[rows], d["leg_gain"] * d["supply_gain"][:, None],
                            d["leg_offset"], d["leak_rate"], single.command_delay + d["command_delay"])
            latency = np.rint(d["observation_latency"] / single.dt).astype(np.int64)
            noise = np.zeros((rows.size, 6))
            noise[:, :3] = d["observation_noise"][:, None]  # tip [m]; velocity noise-free
            self.sensor.configure(rows, noise, latency, [self.realism_rngs[i] for i in rows.tolist()])
            tilt = np.concatenate((d["base_tilt"], np.zeros((rows.size, 1))), axis=1)
            self.base_rotation[rows] = quaternion_to_matrix(quaternion_from_rotation_vector(tilt))
            self.radius[rows] = model.radius * (1.0 + d["radius_error"])
            self.clock[rows] = 0.0
            self._read_tips(rows, reset=True)

    def _apply_actions(self, actions: np.ndarray) -> None:
        self.inflation_times = self.single.action_to_model(actions)
        if self.realistic:
            self.legs.command(self.inflation_times, self.clock)

    def _simulate(self) -> None:
        if self.realistic:  # the legs over the control period
            period = self.single.frame_skip * self.single.time_step
            self.legs.advance(period, self.clock)
            self.clock += period

    def _read_tips(self, rows, reset: bool = False) -> None:
        """True tips of ``rows`` and their measurements (as ``PeterReachEnv._read_tip``)."""
        model = self.single.model
        if not self.realistic:
            self.tip[rows] = self.measured_tip[rows] = model.forward_arms(self.inflation_times[rows])
            return
        tip = model.forward_arms(self.legs.inflation[rows], self.radius[rows])
        if self._tilted:  # the base frame -> the goals' frame
            tip = np.einsum("bij,bj->bi", self.base_rotation[rows], tip)
        self.tip[rows] = tip
        state = np.concatenate((tip, self.tip_velocity[rows]), axis=1)
        measured = self.sensor.reset(rows, state) if reset else self.sensor.read(rows, state)
        self.measured_tip[rows], self.measured_velocity[rows] = measured[:, :3], measured[:, 3:]

    def _observe(self, rows):
        self._read_tips(rows)
        return reach_observation(self.measured_tip[rows], self.goal[rows], self.measured_velocity[rows],
                                 self.single.model_to_action(self.inflation_times[rows]), self.goal_conditioned)

    def _reward_terms(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        return self.single._goal_terms(self.measured_tip.astype(np.float32), self.goal.astype(np.float32))

    def _extra_info(self, rows) -> dict[str, np.ndarray]:
        distance = self.single._distances(self.tip[rows].astype(np.float32), self.goal[rows].astype(np.float32))
        info = {"distance": distance, "is_success": distance < self.single.success_threshold,
                "inflation_times": self.inflation_times[rows].copy()}
        if self.realistic:
            info["leg_inflation"] = self.legs.inflation[rows]
        return info

    def _commands(self, rows) -> np.ndarray:
        return self.inflation_times[rows]

    def _sync_render(self) -> None:
        self.single.inflation_times = self.inflation_times[0].copy()
        self.single.goal = self.goal[0].copy()


def make_peter_reach_vector(num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                            autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                            **kwargs: Any) -> gym.vector.VectorEnv:
    """The ``vector_entry_point`` of ``soft_envs/PeterReach-v0``: the native vector env where one
    exists (``kinematic=True``), else a ``SyncVectorEnv`` of single envs (module docstring)."""
    if kwargs.get("kinematic", False):
        return PeterReachVectorEnv(num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode,
                                   **kwargs)
    make = [lambda: gym.make(ENV_ID, max_episode_steps=max_episode_steps, **kwargs)] * int(num_envs)
    return gym.vector.SyncVectorEnv(make, autoreset_mode=AutoresetMode(autoreset_mode))
