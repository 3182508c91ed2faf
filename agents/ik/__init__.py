"""IK solvers. Every solver takes a kinematic model and a target and returns an IKResult."""

from soft_envs.agents.ik.jacobian import ik_step, jacobian_ik
from soft_envs.agents.ik.result import BatchIKResult, IKResult
from soft_envs.agents.ik.trust_region import trr, trr_batch

__all__ = ["BatchIKResult", "IKResult", "ik_step", "jacobian_ik", "trr", "trr_batch"]
