"""The native vector form of ``soft_envs/PeterReach-v0``: ``N`` PETER arms per batched call.

``gym.make_vec("soft_envs/PeterReach-v0", num_envs=N, …)`` returns a :class:`PeterReachVectorEnv`
(the registered ``vector_entry_point`` is :func:`make_peter_reach_vector`) for the soft physics
(the default) and for ``kinematic=True``: the single env's spaces, rewards, ``info`` keys,
realism and keywords, every sub-env an episode of the single env
(:mod:`soft_envs.envs.vector_base`). ``physics="stiff"`` (PyBullet's position servos, no batched
form) and ``backend="pybullet"`` (the single-arm reference) come back as a Gymnasium
``SyncVectorEnv`` of single envs, with the same ``max_episode_steps`` and ``autoreset_mode``.

What happens to the arms is written once, row-wise, in :class:`~soft_envs.envs.peter_arms.PeterArms`:
the single env is one row of it, this env ``N`` rows on the batched soft-arm core
(:class:`~soft_envs.sim.batched_bodies.BatchedSoftPeter`, every arm with its own leg radius, module
mass, leg stiffness, payload and base tilt) or the kinematic model; this class only maps
Gymnasium's vector API (autoresets, masks, ``info`` layout: :mod:`soft_envs.envs.vector_base`) onto
it. An arm driven out of the PCC model stops and terminates its sub-env, as the single env does.
``render()`` draws sub-env 0's arm through the prototype. Needs no PyBullet (pictures aside).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from soft_envs.envs import ENVIRONMENTS
from soft_envs.envs.closed_loop import native_with_closed_loop
from soft_envs.envs.peter_arms import PeterArms, soft_arms
from soft_envs.envs.peter_reach import PeterReachEnv
from soft_envs.envs.peter_reach_config import PeterReachConfig
from soft_envs.envs.vector_base import ArmsVectorEnv, check_num_envs
from soft_envs.exceptions import InvalidParameterError
from soft_envs.sim import threads
from soft_envs.sim.actuators import BatchedPneumaticLegs
from soft_envs.sim.batched_bodies import BatchedSoftPeter

ENV_ID = "soft_envs/PeterReach-v0"
MAX_EPISODE_STEPS = ENVIRONMENTS[ENV_ID][1]


class PeterReachVectorEnv(ArmsVectorEnv[PeterReachEnv]):
    """``num_envs`` PeterReach arms, soft or kinematic (module docstring).

    Args:
        num_envs: number of sub-envs, 1 to :data:`~soft_envs.envs.vector_base.MAX_NUM_ENVS`.
        max_episode_steps: episode length [steps] (the registered 50), 1 to
            :data:`~soft_envs.envs.vector_base.MAX_EPISODE_LIMIT`; ``None``: no limit.
        autoreset_mode: ``"NextStep"`` (default), ``"SameStep"`` or ``"Disabled"``.
        num_threads: threads that step the arms (default: the cores this process may use; the
            results are the same for any number, :mod:`soft_envs.sim.threads`).
        **kwargs: :class:`~soft_envs.envs.peter_reach.PeterReachEnv` keywords (not ``physics="stiff"``
            nor ``backend="pybullet"``).
    """

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = MAX_EPISODE_STEPS,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, num_threads: int | None = None,
                 **kwargs: Any) -> None:
        num_threads = threads.check_threads(num_threads)
        single = PeterReachEnv(**kwargs)
        if not single.kinematic and (single.physics != "soft" or single.backend != "batched"):
            single.close()
            raise InvalidParameterError("PeterReachVectorEnv runs the soft physics on the batched core or "
                                        "kinematic=True; gym.make_vec gives physics='stiff' and backend='pybullet' "
                                        "as a SyncVectorEnv")
        super().__init__(single, num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode)
        body = None if single.kinematic else soft_arms(single, self.num_envs, num_threads)
        #: Every sub-env's arm: the single env's logic with ``num_envs`` rows.
        self.arms = PeterArms(single, self.num_envs, body)

    # ------------------------------------------------------------------ the arms' arrays
    @property
    def body(self) -> BatchedSoftPeter | None:
        """The sub-envs' soft arms on the batched core (``None`` for ``kinematic=True``)."""
        return self.arms.body

    @property
    def legs(self) -> BatchedPneumaticLegs:
        return self.arms.legs

    @property
    def goal(self) -> np.ndarray:
        """Every sub-env's goal ``(N, 3)`` [m]."""
        return self.arms.goal

    @property
    def tip(self) -> np.ndarray:
        """Every sub-env's true tip ``(N, 3)`` [m]."""
        return self.arms.tip

    @property
    def measured_tip(self) -> np.ndarray:
        return self.arms.measured_tip

    def task_error(self) -> np.ndarray:
        """Every sub-env's ``goal − measured tip`` ``(N, 3)`` [m], the base frame (``task_feedback``)."""
        return self.arms.goal - self.arms.measured_tip

    @property
    def inflation_times(self) -> np.ndarray:
        """Every sub-env's commanded set-points ``(N, 3N)`` [s]."""
        return self.arms.inflation_times

    def command_jacobian(self, commands: np.ndarray) -> np.ndarray:
        """The nominal model's ``∂ tip / ∂ c`` at normalised commands ``(N, 3M)``: ``(N, 3, 3M)``
        [m per unit] (:meth:`PeterReachEnv.command_jacobian`; what ``action_mode="task"`` inverts)."""
        return self.single.command_jacobian(commands)

    def privileged_observation(self) -> np.ndarray:
        """What the simulator knows of every sub-env and its sensor does not, ``(N, 6 + 4L + 1)`` float32
        (``L`` legs), for a critic that learns beside a policy of the observations (an asymmetric
        actor-critic): the true goal − tip [m] and tip velocity [m/s] (the goals' frame, no noise or
        latency), the legs' actual inflation [s] and their drawn fill gains [1] (leg × supply),
        length offsets [m] and leaks [m/s], and the valve delay [s]. After a same-step autoreset the
        rows that reset hold their new episode, as the observations do."""
        arms, legs = self.arms, self.arms.legs
        return np.concatenate([arms.goal - arms.tip, arms.tip_velocity, legs.inflation, legs.gain, legs.offset,
                               legs.leak_rate, legs.delay[:, None]], axis=1).astype(np.float32)


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
    physics = PeterReachConfig.of(kwargs).physics
    native = physics.kinematic or (physics.physics == "soft" and physics.backend == "batched")
    check_num_envs(num_envs, pybullet=not native)  # before any env is built
    if native:
        return native_with_closed_loop(lambda **rest: PeterReachVectorEnv(
            num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode, **rest), kwargs)
    kwargs.pop("num_threads", None)  # single envs: one arm each
    make = [lambda: gym.make(ENV_ID, max_episode_steps=max_episode_steps, **kwargs)] * int(num_envs)
    return gym.vector.SyncVectorEnv(make, autoreset_mode=AutoresetMode(autoreset_mode))
