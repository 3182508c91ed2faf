"""The native vector form of ``soft_envs/PCCTrack-v0``: ``N`` PCC arms on the batched soft-arm core.

``gym.make_vec("soft_envs/PCCTrack-v0", num_envs=N, …)`` returns a :class:`PCCTrackVectorEnv`
(the registered ``vector_entry_point``) for every ``action_type`` and physics: the single env's
spaces, rewards, ``info`` keys, realism and keywords, every sub-env an episode of the single env
(:mod:`soft_envs.envs.vector_base`); ``backend="pybullet"`` (the single-arm reference) comes back
as a ``SyncVectorEnv`` of single envs.

What happens to the arms is written once, row-wise, in :class:`~soft_envs.envs.pcc_arms.PCCArms`
(the paper's PD + feed-forward law on its ticks, the chambers' regulators with per-arm dead time
and maps, the batched core with per-arm mass, payload and stiffness, the validity check, the
sensor, the observation and rewards, the residual aim — one Gauss–Newton solve per arm and step):
the single env is one row of it, this env ``N`` rows; this class only maps Gymnasium's vector API
onto it. Needs no PyBullet (pictures aside).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from soft_envs.envs import ENVIRONMENTS
from soft_envs.envs.closed_loop import native_with_closed_loop
from soft_envs.envs.pcc_arms import soft_arms
from soft_envs.envs.pcc_track import PCCTrackEnv
from soft_envs.envs.pcc_track_config import PCCTrackConfig
from soft_envs.envs.vector_base import ArmsVectorEnv, check_num_envs
from soft_envs.exceptions import InvalidParameterError
from soft_envs.sim import threads
from soft_envs.sim.batched_bodies import BatchedPCCBody

ENV_ID = "soft_envs/PCCTrack-v0"
MAX_EPISODE_STEPS = ENVIRONMENTS[ENV_ID][1]


class PCCTrackVectorEnv(ArmsVectorEnv[PCCTrackEnv]):
    """``num_envs`` PCCTrack arms (module docstring).

    Args:
        num_envs: number of sub-envs.
        max_episode_steps: episode length [steps] (the registered 400; ``None``: no limit).
        autoreset_mode: ``"NextStep"`` (default), ``"SameStep"`` or ``"Disabled"``.
        num_threads: threads that step the arms (default: the cores this process may use; the
            results are the same for any number, :mod:`soft_envs.sim.threads`).
        **kwargs: :class:`~soft_envs.envs.pcc_track.PCCTrackEnv` keywords (not ``backend="pybullet"``).
    """

    #: The single env whose configuration, spaces and row logic (``make_arms``) the sub-envs share.
    env_class: type[PCCTrackEnv] = PCCTrackEnv

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, num_threads: int | None = None,
                 **kwargs: Any) -> None:
        num_threads = threads.check_threads(num_threads)
        single = self.env_class(**kwargs)
        if single.backend != "batched":
            single.close()
            raise InvalidParameterError("PCCTrackVectorEnv steps the batched core; gym.make_vec gives "
                                        "backend='pybullet' as a SyncVectorEnv")
        super().__init__(single, num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode)
        #: Every sub-env's arm: the single env's logic with ``num_envs`` rows.
        self.arms = single.make_arms(self.num_envs, soft_arms(single, self.num_envs, num_threads))

    # ------------------------------------------------------------------ the arms' arrays
    @property
    def body(self) -> BatchedPCCBody:
        """The sub-envs' arms on the batched core."""
        return self.arms.body

    @property
    def goal(self) -> np.ndarray:
        """Every sub-env's goal ``(N, 3)`` [m]."""
        return self.arms.goal

    @property
    def tip(self) -> np.ndarray:
        """Every sub-env's true tip ``(N, 3)`` [m]."""
        return self.arms.tip

    @property
    def setpoint(self) -> np.ndarray:
        """Every sub-env's configuration set-point ``(N, n)``."""
        return self.arms.setpoint

    @property
    def command_jacobian(self) -> Callable[[np.ndarray], np.ndarray] | None:
        """The nominal model's ``∂ tip / ∂ c`` at normalised smooth commands ``(N, 3M)``: ``(N, 3, 3M)``
        [m per unit] (:attr:`PCCTrackEnv.command_jacobian`; ``None`` unless ``action_type="smooth"``)."""
        return self.single.command_jacobian

    @property
    def task_error(self) -> Callable[[], np.ndarray] | None:
        """``() -> `` every sub-env's ``goal − measured tip`` ``(N, 3)`` [m] (``task_feedback``; ``None``
        where the single env has none)."""
        return None if self.single.task_error is None else self._tip_errors

    def _tip_errors(self) -> np.ndarray:
        return self.arms.goal - self.arms.measured_tip


def make_pcc_track_vector(num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                          autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                          **kwargs: Any) -> gym.vector.VectorEnv:
    """The ``vector_entry_point`` of ``soft_envs/PCCTrack-v0``: the native vector env, else
    (``backend="pybullet"``) a ``SyncVectorEnv`` of single envs."""
    if PCCTrackConfig.of(kwargs).physics.backend != "batched":
        num_envs = check_num_envs(num_envs, pybullet=True)  # (before a PyBullet env is built)
        kwargs.pop("num_threads", None)  # single envs: one arm each
        make = [lambda: gym.make(ENV_ID, max_episode_steps=max_episode_steps, **kwargs)] * int(num_envs)
        return gym.vector.SyncVectorEnv(make, autoreset_mode=AutoresetMode(autoreset_mode))
    return native_with_closed_loop(lambda **rest: PCCTrackVectorEnv(
        num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode, **rest), kwargs)
