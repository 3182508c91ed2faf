"""Parts of ``soft_envs/PeterReach-v0`` outside the env class, free of PyBullet: its soft physics'
timing and its observation. The single env, the CPU vector env and the GPU vector env
(:mod:`soft_envs.envs.peter_reach_cuda`) take them from here.
"""

from __future__ import annotations

import numpy as np

SOFT_TIME_STEP = 1.0 / 120.0  # s, soft physics (second-order integrator; soft-envs bench convergence)
SOFT_CONTROL_PERIOD = 0.1  # s, soft physics: 10 Hz control
#: PeterReach's keyword defaults that the CPU and the GPU envs share (one source).
DISTANCE_WEIGHT = 100.0  # 1/m: the distance term in centimetres
SUCCESS_THRESHOLD = 1e-3  # m
VENT_RATE = 0.010  # m/s, the legs' venting [assumed]
LEG_RADIUS = 0.045  # m, the legs' circle [assumed]
MODULE_GAP = 0.017  # m, between modules [seed 000]
#: The realism entries of the soft physics only, and those that change the simulated arm.
PHYSICS_ONLY_REALISM = ("leg_stiffness_error", "mass_error", "payload")
PLANT_REALISM = ("base_tilt", "radius_error") + PHYSICS_ONLY_REALISM


def reach_observation(tip: np.ndarray, goal: np.ndarray, velocity: np.ndarray, setpoints: np.ndarray,
                      goal_conditioned: bool) -> np.ndarray | dict[str, np.ndarray]:
    """The observation (module docstring) of one arm (``(3,)`` parts) or of a batch (``(B, 3)``):
    measured tip [m], goal [m], measured tip velocity [m/s], normalised set-points; float32.
    The single and the vector env build it here."""
    if goal_conditioned:
        return {
            "observation": np.concatenate((tip, velocity, setpoints), axis=-1).astype(np.float32),
            "achieved_goal": tip.astype(np.float32),
            "desired_goal": goal.astype(np.float32),
        }
    return np.concatenate((tip, goal, goal - tip, velocity, setpoints), axis=-1).astype(np.float32)
