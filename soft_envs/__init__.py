"""soft_envs: Gymnasium environments over PyBullet models of soft and legged robots.

``import soft_envs`` registers the environments (``gymnasium.make("soft_envs/PeterReach-v0")``).
Robot models are in :mod:`soft_envs.robots`, controllers and IK solvers in
:mod:`soft_envs.agents`.
"""

from soft_envs.console import quiet_native_output as _quiet_native_output

with _quiet_native_output():  # PyBullet prints its build banner on import
    import pybullet as _pybullet  # noqa: F401

from soft_envs.envs import register_all as _register_all  # noqa: E402

__version__ = "0.1.0"

ENV_IDS = _register_all()

__all__ = ["ENV_IDS", "__version__"]
