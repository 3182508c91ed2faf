"""soft_envs: Gymnasium environments over PyBullet models of soft and legged robots.

``import soft_envs`` registers the environments (``gymnasium.make("soft_envs/PeterReach-v0")``).
Robot models are in :mod:`soft_envs.robots`, controllers and IK solvers in
:mod:`soft_envs.agents`.
"""

import os as _os

# In a source checkout (the repository root on ``sys.path``: ``python -m pytest`` or Ray workers
# started there) ``agents/`` and ``urdf/`` sit beside this folder; installed, they are
# ``soft_envs.agents`` and ``soft_envs.urdf`` (pyproject's package-dir). Give the checkout the
# installed layout, so ``soft_envs.agents`` imports the same code either way.
_HERE = _os.path.dirname(_os.path.abspath(__file__))
if not _os.path.isdir(_os.path.join(_HERE, "agents")):
    _ROOT = _os.path.dirname(_HERE)
    if _os.path.isfile(_os.path.join(_ROOT, "agents", "__init__.py")) and _ROOT not in __path__:
        __path__.append(_ROOT)

# numba's on-disk caches of the package's kernels: soft_envs.kernel_cache (by content, in the user's
# cache folder or the install location's ``_kernels/`` that ``soft-envs compile`` prepares).

# PyBullet is imported where it is used (soft_envs.sim.bullet): the batched soft-arm core and its
# vector envs' physics import without it.
from soft_envs.envs import register_all as _register_all  # noqa: E402

__version__ = "0.4.0.dev0"  # the one place the version is written (pyproject reads it); CHANGELOG.md

ENV_IDS = _register_all()

__all__ = ["ENV_IDS", "__version__"]
