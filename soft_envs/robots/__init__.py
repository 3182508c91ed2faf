"""Robot models: one kinematic model object per robot (parameters, bounds, FK, Jacobian, URDF).

The models load on first use (``from soft_envs.robots import Peter`` imports ``peter`` only): the
hexapod's Cosserat rods bring numba and scipy, which the other robots' users need not wait for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from soft_envs.robots.base import KinematicModel
    from soft_envs.robots.bullet_chain import BulletChain
    from soft_envs.robots.cosserat import Hexapod6PFS, Rod
    from soft_envs.robots.pcc_arm import PCCArm
    from soft_envs.robots.peter import Peter
    from soft_envs.robots.peter_calibration import CalibratedPeter, calibrate
    from soft_envs.robots.planar_pcc_arm import PlanarPCCArm
    from soft_envs.robots.quadruped import Quadruped

# name -> the submodule that defines it
_WHERE = {"KinematicModel": "base", "BulletChain": "bullet_chain", "Hexapod6PFS": "cosserat", "Rod": "cosserat",
          "PCCArm": "pcc_arm", "Peter": "peter", "CalibratedPeter": "peter_calibration",
          "calibrate": "peter_calibration", "PlanarPCCArm": "planar_pcc_arm", "Quadruped": "quadruped"}

__all__ = ["BulletChain", "CalibratedPeter", "Hexapod6PFS", "KinematicModel", "PCCArm", "Peter", "PlanarPCCArm",
           "Quadruped", "Rod", "calibrate"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
