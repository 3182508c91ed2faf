"""Learned policies that run on numpy alone: :class:`~soft_envs.agents.learned.policy.MLPPolicy`
(a deterministic multilayer perceptron read from an ``.npz`` file without unpickling anything,
with its model card) and the policies shipped in ``policies/`` (:func:`shipped`)."""

from soft_envs.agents.learned.policy import MLPPolicy, shipped, shipped_names

__all__ = ["MLPPolicy", "shipped", "shipped_names"]
