"""The URDF chains the chain-IK tests solve on: pybullet_data's KUKA iiwa and Franka Panda."""

from __future__ import annotations

from functools import cache

import pybullet_data

from soft_envs.robots import BulletChain

DATA = pybullet_data.getDataPath()
#: name -> (URDF path, end link)
CHAINS = {"iiwa": (f"{DATA}/kuka_iiwa/model.urdf", "lbr_iiwa_link_7"),
          "panda": (f"{DATA}/franka_panda/panda.urdf", "panda_hand")}


@cache
def load(name: str) -> BulletChain:
    """The KUKA iiwa or Franka Panda chain of pybullet_data (built once per process)."""
    return BulletChain(*CHAINS[name])
