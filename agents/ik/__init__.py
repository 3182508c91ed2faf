"""IK solvers. Every solver takes a kinematic model and a target and returns an IKResult (or a
BatchIKResult); the contract they share is documented in :mod:`soft_envs.agents.ik.result`."""

from soft_envs.agents.ik.chain_lm import chain_ik, chain_ik_batch
from soft_envs.agents.ik.jacobian import ik_step, jacobian_ik
from soft_envs.agents.ik.jacobian_batch import jacobian_ik_batch
from soft_envs.agents.ik.newton import newton_raphson, newton_raphson_batch, newton_raphson_legs
from soft_envs.agents.ik.result import BatchIKResult, IKResult, is_success
from soft_envs.agents.ik.sqp import sqp, sqp_trajectory
from soft_envs.agents.ik.trust_region import trr, trr_batch

__all__ = ["BatchIKResult", "IKResult", "chain_ik", "chain_ik_batch", "ik_step", "is_success", "jacobian_ik",
           "jacobian_ik_batch", "newton_raphson", "newton_raphson_batch", "newton_raphson_legs", "sqp",
           "sqp_trajectory", "trr", "trr_batch"]
