"""The single soft envs on the batched core (``backend="batched"``, the default) equal the PyBullet
reference (``backend="pybullet"``: PyBullet's mass matrix and inverse dynamics) on whole episodes,
ideal and realistic."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots import PCCArm, Peter
from soft_envs.sim.batched_bodies import BatchedSoftPeter
from soft_envs.sim.bullet import connect, disconnect
from soft_envs.sim.pcc_body import PCCBody
from soft_envs.sim.peter_soft import SoftPeterBody


def _episode(env_id: str, backend: str, seed: int, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    env = gym.make(env_id, backend=backend, **kwargs)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    observations, rewards = [obs], []
    done = False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(rng.uniform(-1.0, 1.0, env.action_space.shape))
        observations.append(obs)
        rewards.append(reward)
        done = terminated or truncated
    env.close()
    return np.array(observations), np.array(rewards)


@pytest.mark.parametrize("env_id, kwargs", [
    ("soft_envs/PeterReach-v0", {}),
    ("soft_envs/PeterReach-v0", {"realism": "realistic", "payload": 0.2}),
    ("soft_envs/PCCTrack-v0", {"max_episode_steps": 120}),
    ("soft_envs/PCCTrack-v0", {"realism": "realistic", "max_episode_steps": 120}),
    ("soft_envs/PCCTrack-v0", {"action_type": "pressure", "max_episode_steps": 60}),
], ids=["peter", "peter-realistic", "pcc", "pcc-realistic", "pcc-pressure"])
def test_the_batched_default_equals_the_pybullet_reference_on_whole_episodes(env_id, kwargs):
    batched = _episode(env_id, "batched", 3, **kwargs)
    reference = _episode(env_id, "pybullet", 3, **kwargs)
    assert batched[0].shape == reference[0].shape
    np.testing.assert_allclose(batched[0], reference[0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(batched[1], reference[1], rtol=0, atol=1e-6)


def test_the_default_backend_is_the_batched_core():
    """PeterReach's arm is one row of the vector env's (the batched core), with no PyBullet client
    until a picture is asked for; ``backend="pybullet"`` steps PyBullet's arm through the same rows."""
    env = gym.make("soft_envs/PeterReach-v0")
    u = env.unwrapped
    assert u.backend == "batched" and isinstance(u.body, BatchedSoftPeter) and u.arms.body is u.body
    assert u.client is None and u.render_client is None
    env.close()
    env = gym.make("soft_envs/PeterReach-v0", backend="pybullet")
    assert isinstance(env.unwrapped.body, SoftPeterBody) and env.unwrapped.body.backend == "pybullet"
    env.close()
    with pytest.raises(InvalidParameterError, match="backend"):
        gym.make("soft_envs/PCCTrack-v0", backend="gpu")


@pytest.mark.parametrize("make", [lambda c, b: SoftPeterBody(c, Peter(2), payload=0.2, backend=b),
                                  lambda c, b: PCCBody(c, PCCArm(2, 6), backend=b)], ids=["peter", "pcc"])
def test_every_term_a_controller_reads_equals_pybullets(make):
    """The terms at the state and at other configurations (a set-point's ``G``, the corrector's)."""
    clients = [connect(), connect()]
    batched, reference = make(clients[0], "batched"), make(clients[1], "pybullet")
    u = np.array([0.002, 0.3, -0.2, -0.001, 0.1, 0.4])
    w = np.array([0.01, 0.3, -0.2, 0.02, 0.1, -0.4])
    other = u + np.array([0.001, -0.2, 0.1, 0.0, 0.3, -0.1])
    for body in (batched, reference):
        body.set_state(u, w)
    pairs = [(batched.mass_matrix(), reference.mass_matrix()), (batched.bias(), reference.bias()),
             (batched.coriolis(), reference.coriolis()),
             (batched.gravity_torque(other), reference.gravity_torque(other)),
             (*batched.configuration_terms(other), *reference.configuration_terms(other)),
             (*batched.state_terms(other, w), *reference.state_terms(other, w)),
             (*batched.tip_state(), *reference.tip_state())]
    for pair in pairs:
        half = len(pair) // 2
        for x, y in zip(pair[:half], pair[half:], strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
    for client in clients:
        disconnect(client)
