"""Loading generated robot descriptions into PyBullet.

The soft arms describe their bodies as plain data (:class:`soft_envs.robots.chain.Chain`, from
``model.chain()``) and :meth:`~soft_envs.robots.chain.Chain.urdf` writes the URDF text;
:func:`load_chain` loads it into a PyBullet client.
"""

from __future__ import annotations

import os
import tempfile

from soft_envs.robots.chain import Chain


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

    ``kwargs`` go to ``loadURDF`` (e.g. ``useFixedBase=True``).
    """
    return load_urdf_text(client, chain.urdf(), **kwargs)
