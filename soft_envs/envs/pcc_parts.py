"""Parts of ``soft_envs/PCCTrack-v0`` outside the env class: its realism table, its observation and
its residual action.

:func:`track_observation` builds the observation of one arm or of a batch (the single and the
vector env call it). :class:`ResidualAim` is ``action_type="residual"`` (residual learning on
the paper's controller, Johannink et al. 2019, "Residual reinforcement learning for robot
control"): the policy's action is a bounded correction ``c = a · residual_limit`` [m] of the
point the tip aims at, the env turns ``goal(t + dt) + c`` into a configuration set-point by
Gauss–Newton continuation (:func:`~soft_envs.robots.gauss_newton.nearest_configuration`, warm
started from the previous step's solution; a planar trajectory's tip angle held) and the paper's
PD + feed-forward law tracks it. A zero action is the law on the trajectory's own set-points
(the ``pd-ff`` controller's tracking, with the exact next goal instead of an extrapolated one);
a policy learns only what the law misses (a plant unlike the model, the regulators' delay). The
correction lives in tip space because that is where the error is measured: three numbers on
every arm, and the tip error maps onto it with a gain near one.
"""

from __future__ import annotations

import numpy as np

from soft_envs.robots.gauss_newton import nearest_configuration
from soft_envs.robots.pcc_arm import PCCArm
from soft_envs.sim.realism import Perturbation
from soft_envs.trajectories import Trajectory

MAX_DELAY = 10.0  # s, the longest regulator delay or observation latency accepted

#: The PCC arm's sim-to-real perturbations (``realism=``); the first three need the chambers.
PCC_REALISM: tuple[Perturbation, ...] = (
    Perturbation("chamber_gain", "1", "force of each chamber relative to the eq. 9 map", (0.95, 1.05),
                 "assumption: α₁, α₂ were identified from one series of quasi-static pressures (seed 004 "
                 "§4); printed bellows differ chamber to chamber, ±5 %", ideal=1.0, valid=(0.1, 10.0),
                 per_element=True),
    Perturbation("pressure_droop", "1", "fraction of its regulated pressure each chamber loses to a leak",
                 (0.0, 0.03), "assumption: a slow leak past the regulator's sensing point, up to 3 %",
                 valid=(0.0, 0.9), per_element=True),
    Perturbation("regulator_delay", "s", "dead time added to the regulator_delay keyword", (0.1, 0.15),
                 "seed 004 §4: 'the regulators had a 100–150 ms delay'", valid=(0.0, MAX_DELAY)),
    Perturbation("stiffness_error", "1", "relative error of the arm's elastic stiffness", (-0.15, 0.15),
                 "assumption: the stiffness is calibrated on an assumed pressure bound (sim/soft_arm.py)",
                 valid=(-0.9, 10.0)),
    Perturbation("mass_error", "1", "relative error of the segment mass (17.3 g)", (-0.1, 0.1),
                 "assumption about seed 004's m₀ = 17.3 g: tubing and fittings not weighed", valid=(-0.9, 10.0)),
    Perturbation("payload", "kg", "tip payload added to the payload keyword", (0.0, 0.005),
                 "assumption: seed 004 fixed an IMU board (BNO055) and markers to the end-effector, a few "
                 "grams", valid=(0.0, 1.0)),
    Perturbation("observation_noise", "m", "standard deviation of the measured tip position, per axis",
                 (1e-4, 5e-4), "assumption: seed 004's OpenMV camera tracking coloured markers", valid=(0.0, 0.1)),
    Perturbation("observation_latency", "s", "age of the measured tip (whole control periods)", (0.0, 0.05),
                 "assumption: one camera frame and its processing", valid=(0.0, MAX_DELAY)),
)
CHAMBER_REALISM = ("chamber_gain", "pressure_droop", "regulator_delay")


def track_observation(tip: np.ndarray, goal: np.ndarray, velocity: np.ndarray, state: np.ndarray, rate: np.ndarray,
                      phase: np.ndarray | float, high: np.ndarray, goal_conditioned: bool, on_clip=None):
    """The observation (``PCCTrack-v0``'s docstring) of one arm (``(3,)``, ``(n,)`` parts, a float
    phase [rad]) or of a batch (leading ``B``): measured tip [m], goal [m], measured velocity
    [m/s], the paper's state and its rate, the trajectory phase; clipped into ``±high``, float32
    (``on_clip(count)`` is told how many entries were clipped)."""
    phase = np.asarray(phase, dtype=float)[..., None]
    raw = np.concatenate((tip, goal, goal - tip, velocity, state, rate, np.sin(phase), np.cos(phase)), axis=-1)
    obs = clipped(raw, high, on_clip)
    if goal_conditioned:
        return {"observation": obs[..., 9:], "achieved_goal": obs[..., 0:3], "desired_goal": obs[..., 3:6]}
    return obs


def clipped(raw: np.ndarray, high: np.ndarray, on_clip=None) -> np.ndarray:
    """An observation ``raw`` clipped into ``±high``, as float32 (``on_clip(count)`` is told how many
    entries were clipped)."""
    obs = np.clip(raw, -high, high)
    if on_clip is not None:
        on_clip(int(np.count_nonzero(obs != raw)))
    return obs.astype(np.float32)


class ResidualAim:
    """The configuration set-point of a residual action (module docstring) for one arm.

    Args:
        model: the arm the env plans with (the nominal model).
        trajectory: the tracked trajectory (its ``tip_angle`` is held on planar arms).
    """

    def __init__(self, model: PCCArm, trajectory: Trajectory) -> None:
        self.model, self.trajectory = model, trajectory
        self.reference = np.zeros(model.n_dof)

    def reset(self, configuration: np.ndarray) -> None:
        """Start the continuation from ``configuration`` (the arm's start set-point)."""
        self.reference = np.array(configuration, dtype=float)

    def setpoint(self, time: float, correction: np.ndarray) -> np.ndarray:
        """The configuration whose tip is at ``trajectory(time) + correction`` [s, m] (best effort
        for an unreachable aim). Two solves: the reference (:attr:`reference`, the tip on the
        trajectory, continued from the previous step's) and from it the corrected one, so the
        set-point depends on the path and the correction alone, never on earlier corrections."""
        angle = self.trajectory.tip_angle
        goal = self.trajectory.position(time)
        self.reference, _ = nearest_configuration(self.model, goal, self.reference, tip_angle=angle)
        correction = np.asarray(correction, dtype=float)
        if not np.any(correction):
            return self.reference.copy()
        return nearest_configuration(self.model, goal + correction, self.reference, tip_angle=angle)[0]
