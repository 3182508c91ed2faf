"""Robot models: one kinematic model object per robot (parameters, bounds, FK, Jacobian, URDF)."""

from soft_envs.robots.base import KinematicModel
from soft_envs.robots.bullet_chain import BulletChain
from soft_envs.robots.cosserat import Hexapod6PFS, Rod
from soft_envs.robots.pcc_arm import PCCArm
from soft_envs.robots.peter import Peter
from soft_envs.robots.peter_calibration import CalibratedPeter, calibrate
from soft_envs.robots.planar_pcc_arm import PlanarPCCArm
from soft_envs.robots.quadruped import Quadruped

__all__ = ["BulletChain", "CalibratedPeter", "Hexapod6PFS", "KinematicModel", "PCCArm", "Peter", "PlanarPCCArm",
           "Quadruped", "Rod", "calibrate"]
