"""Delta and task-space actions and observation history as wrappers (``soft_envs.envs.closed_loop``): the single
wrapper equals the env keywords; the vector wrapper's sub-envs run the wrapped single envs'
episodes through autoresets and masked resets, in both autoreset modes; ``gym.make_vec`` of a
soft arm with the keywords wraps its native vector env."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import soft_envs  # noqa: F401
from soft_envs.envs.closed_loop import ClosedLoop, ClosedLoopVector
from soft_envs.exceptions import InvalidParameterError

PETER, PCC = "soft_envs/PeterReach-v0", "soft_envs/PCCTrack-v0"
CASES = [
    pytest.param(PETER, dict(kinematic=True, realism="realistic"), dict(action_mode="delta", history=2),
                 id="peter-kinematic-delta-history"),
    pytest.param(PETER, dict(goal_conditioned=True), dict(action_mode="delta", delta_scale=0.3), id="peter-soft-dict"),
    pytest.param(PETER, dict(realism="realistic"), dict(action_mode="task", history=2), id="peter-soft-task-history"),
    pytest.param(PETER, dict(kinematic=True, goal_conditioned=True), dict(action_mode="task", task_step=0.005),
                 id="peter-kinematic-task-dict"),
    pytest.param(PCC, dict(action_type="residual", realism="realistic"), dict(action_mode="delta", history=1),
                 id="pcc-residual"),
    pytest.param(PCC, dict(action_type="pressure"), dict(action_mode="absolute", history=3), id="pcc-history"),
]


def _flat(space, obs) -> np.ndarray:
    return gym.spaces.utils.flatten(space, obs).astype(np.float64)


def _row(obs, i):
    return {k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i]


@pytest.mark.parametrize("env_id, kwargs, options", CASES)
def test_the_wrapper_equals_the_env_keywords(env_id, kwargs, options):
    keywords = gym.make(env_id, max_episode_steps=8, **kwargs, **options)
    wrapped = ClosedLoop(gym.make(env_id, max_episode_steps=8, **kwargs), **options)
    assert wrapped.observation_space == keywords.observation_space
    assert wrapped.action_space == keywords.action_space
    rng = np.random.default_rng(1)
    for seed in (3, 4):
        a, _ = keywords.reset(seed=seed)
        b, _ = wrapped.reset(seed=seed)
        np.testing.assert_array_equal(_flat(keywords.observation_space, a), _flat(keywords.observation_space, b))
        for _ in range(8):
            action = rng.uniform(-1.3, 1.3, keywords.action_space.shape).astype(np.float32)
            a, ra, ta, ua, ia = keywords.step(action)
            b, rb, tb, ub, ib = wrapped.step(action)
            np.testing.assert_array_equal(_flat(keywords.observation_space, a), _flat(keywords.observation_space, b))
            assert (ra, ta, ua, ia["action_clipped"]) == (rb, tb, ub, ib["action_clipped"])
            assert wrapped.observation_space.contains(b)
    keywords.close()
    wrapped.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("env_id, kwargs, options", CASES)
def test_vector_sub_envs_run_the_wrapped_single_envs(env_id, kwargs, options, mode):
    """Through autoresets and a masked reset; ``gym.make_vec`` with the keywords is the native vector
    env in :class:`ClosedLoopVector`."""
    n, episode = 3, 4
    envs = gym.make_vec(env_id, num_envs=n, max_episode_steps=episode, autoreset_mode=mode, **kwargs, **options)
    assert isinstance(envs, ClosedLoopVector)
    singles = [gym.make(env_id, max_episode_steps=episode, **kwargs, **options) for _ in range(n)]
    space = singles[0].observation_space
    assert envs.single_observation_space == space
    assert envs.single_action_space == singles[0].action_space
    obs, _ = envs.reset(seed=7)
    for i, single in enumerate(singles):
        np.testing.assert_allclose(_flat(space, _row(obs, i)), _flat(space, single.reset(seed=7 + i)[0]),
                                   rtol=1e-6, atol=1e-9)
    rng = np.random.default_rng(0)
    done = np.zeros(n, dtype=bool)
    for step in range(3 * episode):
        if step == episode + 1:
            mask = np.array([False, True, False])
            obs, _ = envs.reset(seed=[None, 99, None], options={"reset_mask": mask})
            np.testing.assert_allclose(_flat(space, _row(obs, 1)), _flat(space, singles[1].reset(seed=99)[0]),
                                       rtol=1e-6, atol=1e-9)
            done[1] = False
        actions = rng.uniform(-1.2, 1.2, envs.action_space.shape).astype(np.float32)
        obs, reward, terminated, truncated, info = envs.step(actions)
        for i, single in enumerate(singles):
            if mode == AutoresetMode.NEXT_STEP and done[i]:
                expected, expected_reward = single.reset()[0], 0.0
            else:
                expected, expected_reward, term, trunc, _ = single.step(actions[i])
                if mode == AutoresetMode.SAME_STEP and (term or trunc):
                    np.testing.assert_allclose(_flat(space, info["final_obs"][i]), _flat(space, expected),
                                               rtol=1e-6, atol=1e-9)
                    expected = single.reset()[0]
            np.testing.assert_allclose(_flat(space, _row(obs, i)), _flat(space, expected), rtol=1e-6, atol=1e-9)
            assert reward[i] == pytest.approx(expected_reward, abs=1e-9)
        done = terminated | truncated
    envs.close()
    for single in singles:
        single.close()


def test_bad_options_and_actions_raise_value_errors():
    with pytest.raises(InvalidParameterError, match="action_mode"):
        ClosedLoop(gym.make(PETER, kinematic=True), action_mode="relative")
    with pytest.raises(InvalidParameterError, match="history"):
        gym.make_vec(PETER, num_envs=2, kinematic=True, history=-1)
    with pytest.raises(InvalidParameterError, match="previous_action"):
        ClosedLoopVector(gym.make_vec(PETER, num_envs=2, kinematic=True, vectorization_mode="sync"))
    env = ClosedLoop(gym.make(PETER, kinematic=True))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.full(env.action_space.shape, np.nan))
    with pytest.raises(ValueError, match="complex"):
        env.step(np.ones(env.action_space.shape, dtype=complex))
    env.close()
