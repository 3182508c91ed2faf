"""The command ramp of ``PCCTrack-v0``: what makes the arm explorable by random actions.

Explorable by design (``command_ramp_time``, default 0.5 s): the command's bending part
(set-point ``(a, b)`` in the smooth coordinates, bending moments) and the pressures move towards
the action by at most their whole range times ``dt / command_ramp_time`` per control period (10 %
per 20 Hz step; the axial modes are overdamped, the axial part is free). Derivation: a ramp of
duration ``T`` leaves a lightly damped mode ``ω`` ringing with at most ``2 / (ω T)`` of the step
(the ramp's spectrum ``|sinc(ωT/2)|``): 11 % on the two-segment arm's first bending mode (36 rad/s,
ζ ≈ 0.09, which the law's ``+D`` term cancels). Without it a uniformly random action jumps across
the range every 50 ms and folds a segment past 180° within a few steps (median random episode 4,
1 and 1 of 400 steps for configuration, torque and pressure; with it 400,
``soft-envs bench learnability``). The IK set-points of the spiral move by at most 1 % of the
bending range a step, the saddle's up to 11 % (slightly limited); ``command_ramp_time=0``: no ramp.
"""

from __future__ import annotations

import numpy as np

from soft_envs.robots.pcc_arm import PCCArm
from soft_envs.sim.period_kernels import pcc_ramp

DEFAULT_COMMAND_RAMP_TIME = 0.5  # s, the whole range of the command (the derivation above)


def command_step(model: PCCArm, action_type: str, torque_limits: np.ndarray, pressure_limit: float, dt: float,
                 ramp_time: float) -> np.ndarray | None:
    """Largest change of the command per control period ``dt`` [s] — smooth set-point coordinates
    (configuration), generalised forces [N, N m] (torque) or pressures [Pa] — or ``None`` without
    a ramp (``ramp_time = 0``). The axial coordinates are free (their modes are overdamped),
    except through the chambers' pressures."""
    if ramp_time == 0.0:
        return None
    fraction = min(1.0, dt / ramp_time)
    if action_type == "pressure":
        return np.full(model.n_dof, 2.0 * pressure_limit * fraction)
    if action_type == "configuration":
        step = (model.smooth_upper - model.smooth_lower) * fraction
    else:
        step = 2.0 * np.asarray(torque_limits, dtype=float) * fraction
    step[0::model.per_segment] = np.inf
    return step


def ramp_setpoint(model: PCCArm, setpoint: np.ndarray, target: np.ndarray, step: np.ndarray | None) -> np.ndarray:
    """The configuration set-point moved from ``setpoint`` towards ``target`` by at most ``step``
    per smooth coordinate (``target`` itself when within reach); one ``(n,)`` or a batch ``(B, n)``."""
    if step is None:
        return target
    u_from = model.to_smooth(setpoint)
    change = model.to_smooth(target) - u_from
    limited = np.any(np.abs(change) > step, axis=-1)
    if not np.any(limited):
        return target
    ramped = model.from_smooth(u_from + np.clip(change, -step, step), reference=target)
    return np.where(limited[..., None], ramped, target) if np.ndim(target) > 1 else ramped


def ramp_setpoints(model: PCCArm, setpoint: np.ndarray, target: np.ndarray,
                   step: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`ramp_setpoint` of a batch ``(B, n)``, and the smooth forms ``(B, n)`` of ``setpoint`` and
    of the result (what the law interpolates between over the control period); a spatial arm's
    ramp compiled (:func:`~soft_envs.sim.period_kernels.pcc_ramp`, equal to the numpy code to rounding)."""
    if step is None or model.planar:
        ramped = ramp_setpoint(model, setpoint, target, step)
        return ramped, model.to_smooth(setpoint), model.to_smooth(ramped)
    ramped, u_from, u_to = (np.empty(np.shape(target)) for _ in range(3))
    pcc_ramp(np.ascontiguousarray(setpoint, dtype=float), np.ascontiguousarray(target, dtype=float),
             np.ascontiguousarray(step, dtype=float), ramped, u_from, u_to)
    return ramped, u_from, u_to
