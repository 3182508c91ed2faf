"""Loading generated robot descriptions into PyBullet.

The soft arms describe their bodies as plain data (:class:`soft_envs.robots.chain.Chain`, from
``model.chain()``) and :meth:`~soft_envs.robots.chain.Chain.urdf` writes the URDF text;
:func:`load_chain` loads it into a PyBullet client.
"""

from __future__ import annotations

import os
import tempfile

from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.chain import Chain

#: PyBullet's multibody limit: 128 links including the base, i.e. at most 127 joints (with more,
#: loading works but every link query fails with "getLinkState failed").
MAX_BULLET_JOINTS = 127


def load_urdf_text(client, text: str, **kwargs) -> int:
    """Load a URDF given as text into a PyBullet ``client``; returns the body id.

    ``kwargs`` go to ``loadURDF`` (``basePosition``, ``useFixedBase``, ``flags``, …).
    """
    fd, path = tempfile.mkstemp(suffix=".urdf", prefix="soft_envs_")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        return client.loadURDF(path, **kwargs)
    finally:
        os.unlink(path)


def load_chain(client, chain: Chain, **kwargs) -> int:
    """Load a rigid-link ``chain`` into ``client`` (joint ``k`` is ``chain.links[k]``); returns the body id.

    ``kwargs`` go to ``loadURDF`` (e.g. ``useFixedBase=True``). A chain of more joints than
    PyBullet handles (:data:`MAX_BULLET_JOINTS`) raises :class:`InvalidParameterError` before loading.
    """
    check_joint_count(chain)
    return load_urdf_text(client, chain.urdf(), **kwargs)


def check_joint_count(chain: Chain) -> None:
    """:class:`InvalidParameterError` if ``chain`` has more joints than a PyBullet body can have."""
    n = len(chain.links)
    if n > MAX_BULLET_JOINTS:
        raise InvalidParameterError(
            f"{chain.name!r} has {n} joints but a PyBullet body has at most 128 links (the base and "
            f"{MAX_BULLET_JOINTS} joints): use fewer links per module/segment or fewer modules/segments")
