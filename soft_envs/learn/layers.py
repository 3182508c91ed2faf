"""Layers of learned policies (PyTorch, Stable-Baselines3; the ``learn`` extra).

A module of its own because a saved policy refers to its layers by import path: ``soft-envs
train-rl`` builds its networks with them, and loading such a policy imports this module (and
with it torch) — nothing else in the package needs torch to import.
"""

from __future__ import annotations

import numpy as np
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor


class StandardizedInput(BaseFeaturesExtractor):
    """The policy's input layer: the observation (a ``Dict``'s keys in the space's order,
    flattened and concatenated) standardised with fixed ``mean`` and ``std`` (saved with the
    policy). PeterReach observes positions in metres that vary by millimetres about 0.12 m;
    without this the networks barely see the goal's height and learn it last."""

    def __init__(self, observation_space, mean, std) -> None:
        from gymnasium.spaces import flatdim

        super().__init__(observation_space, features_dim=int(flatdim(observation_space)))
        self.keys = list(observation_space.spaces) if hasattr(observation_space, "spaces") else None
        self.register_buffer("mean", torch.as_tensor(np.asarray(mean), dtype=torch.float32))
        self.register_buffer("std", torch.as_tensor(np.asarray(std), dtype=torch.float32))

    def forward(self, observations):
        if self.keys is None:
            x = observations.flatten(1)
        else:
            x = torch.cat([observations[key].flatten(1) for key in self.keys], dim=1)
        return (x - self.mean) / self.std
