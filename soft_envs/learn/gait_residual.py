"""A learned policy that modulates a scripted gait: the residual form of the quadruped walk.

Policies modulating trajectory generators (Iscen et al., *Policies Modulating Trajectory
Generators*, CoRL 2018: the Minitaur quadruped) learn a gait in a fraction of the samples a
policy from scratch needs, and keep the generator's smoothness. Here the generator is the seed's
Bézier trot (:class:`~soft_envs.agents.gait.TrotController`, Newton–Raphson leg IK every step)
and the policy's action ``a`` (14,) in ``[−1, 1]`` does three things:

* ``a[12]`` scales the trot's stride: ``L = L₀ (1 + stride_range · a[12])``, and ``a[13]`` its
  period: ``T = T₀ (1 + period_range · (a[13] + 1)/2)``, never shorter than the trot's (the
  generator's parameters, as PMTG's policies set theirs; the phase runs on continuously when the
  period changes). The cadence may only slow: each joint of the trot turns four times a cycle,
  so its 2.5 Hz already gives the ten command reversals per second a servo gait is held to
  (:data:`soft_envs.bench.learned.MAX_REVERSALS_PER_SECOND`); speed must come from the stride;
* ``a[:12]`` is added to the trot's normalised joint targets, ``residual_scale`` times itself,
  the sum clipped into ``[−1, 1]``.

The modulation acts through a first-order filter of time constant ``smoothing`` (default 50 ms):
a policy's output dithers from step to step, and a servo gait's targets must not (the walk's
goal allows no more command reversals than the trot's). The policy observes the env's
observation, the trot's phase ``(sin 2πφ, cos 2πφ)`` of the step it acts on and the filtered
modulation (14,), so what it observes determines what it controls. :class:`GaitResidual` is that
combination as a controller (what ``soft-envs evaluate`` runs); :class:`GaitResidualEnv` is the
env a learner trains on (the same combination inside ``step``). The env underneath is unchanged:
the servos, the physics and every gait figure are the env's own.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.learn.recipes import BASE_GAITS


class GaitResidual:
    """The base gait plus the policy's modulation (module docstring), as a controller's parts.

    Args:
        env: the quadruped walk env (wrapped or not).
        base: a name of :data:`BASE_GAITS`.
        residual_scale: the joint residual's share of the normalised action range.
        stride_range, period_range: the stride's and the period's relative ranges.
        smoothing: [s] time constant of the modulation's filter (0: none).
    """

    #: The modulation's size: 12 joint residuals, the stride and the period.
    SIZE = 14

    def __init__(self, env, base: str = "trot", residual_scale: float = 0.1, stride_range: float = 0.5,
                 period_range: float = 0.3, smoothing: float = 0.05) -> None:
        if base not in BASE_GAITS:
            raise InvalidParameterError(f"base gait must be one of {BASE_GAITS}; got {base!r}")
        from soft_envs.agents.gait import TrotController

        self.base = TrotController(env)
        self.nominal_stride, self.nominal_period = self.base.step_length, self.base.period
        self.residual_scale = float(residual_scale)
        self.stride_range, self.period_range = float(stride_range), float(period_range)
        if not smoothing >= 0.0:
            raise InvalidParameterError(f"smoothing must be >= 0 [s]; got {smoothing!r}")
        self.blend = self.base.dt / (float(smoothing) + self.base.dt)  # the filter's weight of a new value
        self.filtered = np.zeros(self.SIZE)
        self.filtered[13] = -1.0  # the trot's own period

    def reset(self, obs=None, info=None) -> None:
        self.base.reset(obs, info)
        self.filtered = np.zeros(self.SIZE)
        self.filtered[13] = -1.0  # the trot's own period
        self.base.period, self.base.step_length = self.nominal_period, self.nominal_stride

    def observation(self, obs: np.ndarray) -> np.ndarray:
        """The env's observation with the phase of the next step, ``(sin, cos)``, and the filtered
        modulation appended."""
        phase = 2.0 * np.pi * (self.base.time + self.base.dt) / self.base.period
        return np.concatenate([np.asarray(obs, dtype=np.float32), [np.sin(phase), np.cos(phase)],
                               self.filtered]).astype(np.float32)

    def action(self, obs: np.ndarray, modulation: np.ndarray) -> np.ndarray:
        """The env's action for the policy's ``modulation`` (14,) at the env's observation ``obs``."""
        modulation = np.clip(np.asarray(modulation, dtype=float).ravel(), -1.0, 1.0)
        self.filtered = self.filtered + self.blend * (modulation - self.filtered)
        modulation = self.filtered
        base = self.base
        cycles = base.time / base.period  # the phase, kept across a change of period
        base.period = self.nominal_period * (1.0 + self.period_range * 0.5 * (modulation[13] + 1.0))
        base.time = cycles * base.period
        base.step_length = self.nominal_stride * (1.0 + self.stride_range * modulation[12])
        return np.clip(self.base.act(obs) + self.residual_scale * modulation[:12], -1.0, 1.0)


class GaitResidualEnv(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """``QuadrupedWalk-v0`` whose action is a :class:`GaitResidual`'s modulation (14,) and whose
    observation has the gait's phase and the filtered modulation appended (55,)."""

    def __init__(self, env: gym.Env, base: str = "trot", **kwargs: Any) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, base=base, **kwargs)
        gym.Wrapper.__init__(self, env)
        self.gait = GaitResidual(env, base, **kwargs)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box):
            raise InvalidParameterError("a gait residual needs a flat Box observation")
        extra = np.ones(2 + GaitResidual.SIZE)
        self.observation_space = gym.spaces.Box(np.concatenate([space.low, -extra]).astype(np.float32),
                                                np.concatenate([space.high, extra]).astype(np.float32),
                                                dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(GaitResidual.SIZE,), dtype=np.float32)
        self._obs: np.ndarray | None = None

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self.gait.reset(obs, info)
        self._obs = obs
        return self.gait.observation(obs), info

    def step(self, action):
        if self._obs is None:
            raise gym.error.ResetNeeded("GaitResidualEnv.step() called before reset()")
        obs, reward, terminated, truncated, info = self.env.step(self.gait.action(self._obs, action))
        self._obs = obs
        return self.gait.observation(obs), reward, terminated, truncated, info


def wrap(env: gym.Env, base_gait: str) -> gym.Env:
    """``env`` itself (no ``base_gait``), or as a :class:`GaitResidualEnv` on ``base_gait``."""
    return GaitResidualEnv(env, base_gait) if base_gait else env
