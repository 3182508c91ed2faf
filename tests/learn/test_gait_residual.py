"""A learned modulation of the Bézier trot (soft_envs.learn.gait_residual): the env a learner trains on
and the controller ``soft-envs evaluate`` runs give the same actions; a zero modulation is the
trot itself."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import soft_envs  # noqa: F401
from soft_envs.agents.gait import TrotController
from soft_envs.exceptions import InvalidParameterError
from soft_envs.learn.gait_residual import GaitResidual, GaitResidualEnv
from soft_envs.learn.recipes import Recipe, recipe_for

WALK = "soft_envs/QuadrupedWalk-v0"


def test_the_wrapped_env_is_a_clean_gymnasium_env():
    env = GaitResidualEnv(gym.make(WALK, max_episode_steps=20))
    try:
        check_env(env, skip_render_check=True)
        assert env.action_space.shape == (14,) and env.observation_space.shape == (55,)
    finally:
        env.close()


@pytest.fixture
def wrapped_and_plain():
    """The walk as a learner trains on it (wrapped) and as evaluate runs it (plain), both open."""
    wrapped = GaitResidualEnv(gym.make(WALK, max_episode_steps=50))
    plain = gym.make(WALK, max_episode_steps=50)
    yield wrapped, plain
    wrapped.close()
    plain.close()


def test_a_modulation_that_keeps_the_period_and_adds_nothing_is_the_trot(wrapped_and_plain):
    wrapped, plain = wrapped_and_plain
    trot = TrotController(plain)
    obs_w, _ = wrapped.reset(seed=3)
    obs_p, info = plain.reset(seed=3)
    trot.reset(obs_p, info)
    trot_itself = np.zeros(14)
    trot_itself[13] = -1.0  # the period's range starts at the trot's own
    for _ in range(50):
        obs_w, _, _, _, info_w = wrapped.step(trot_itself)
        obs_p, _, _, _, info_p = plain.step(trot.act(obs_p))
        np.testing.assert_array_equal(obs_w[:39], obs_p)
    assert info_w["x"] == info_p["x"]


def test_the_controller_acts_as_the_training_env_does(wrapped_and_plain):
    """What a policy sees and does through the wrapper equals what the evaluation's controller
    (the same GaitResidual on the plain env) sees and does."""
    wrapped, plain = wrapped_and_plain
    modulations = np.random.default_rng(0).uniform(-1, 1, (30, 14))
    gait = GaitResidual(plain)
    obs_w, _ = wrapped.reset(seed=5)
    obs, info = plain.reset(seed=5)
    gait.reset(obs, info)
    for m in modulations:
        np.testing.assert_array_equal(gait.observation(obs), obs_w)
        obs_w, *_ = wrapped.step(m)
        obs, *_ = plain.step(gait.action(obs, m))
    np.testing.assert_array_equal(gait.observation(obs), obs_w)


def test_the_stride_modulation_walks_faster_and_the_phase_survives_a_period_change():
    env = GaitResidualEnv(gym.make(WALK, max_episode_steps=300))
    try:
        distances = []
        for stride in (0.0, 1.0):
            env.reset(seed=0)
            for _ in range(300):
                action = np.zeros(14)
                action[12], action[13] = stride, -1.0
                _, _, terminated, _, info = env.step(action)
                assert not terminated
            distances.append(info["x"])
        assert distances[1] > 1.2 * distances[0]
        env.reset(seed=0)
        gait = env.gait
        for _ in range(7):
            env.step(np.zeros(14))
        phase = gait.base.time / gait.base.period
        action = np.zeros(14)
        action[13] = 1.0  # a longer period: the phase goes on from where it was
        env.step(action)
        assert gait.base.time / gait.base.period == pytest.approx(phase + gait.base.dt / gait.base.period)
        assert gait.base.period > gait.nominal_period
        env.reset(seed=0)
        for _ in range(20):
            env.step(-np.ones(14))  # the shortest period it can ask for is the trot's
        assert gait.base.period == pytest.approx(gait.nominal_period)
    finally:
        env.close()


def test_a_base_gait_is_checked():
    with pytest.raises(InvalidParameterError):
        GaitResidual(gym.make(WALK), base="gallop")
    with pytest.raises(InvalidParameterError):
        Recipe(base_gait="trot").validate()  # PeterReach has no gait
    assert recipe_for("quadruped-walk-gait").validate().base_gait == "trot"
