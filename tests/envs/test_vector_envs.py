"""The native vector envs (``gym.make_vec`` through the ``vector_entry_point``): the same episodes as
the single envs, Gymnasium's vector API, bad input, memory.

One generic test (:func:`test_sub_envs_run_the_single_envs_episodes`) runs every vectorised
env id and variant of :data:`VECTOR_CASES` against single envs, step by step, through autoresets
and a masked reset, in each autoreset mode.
"""

from __future__ import annotations

import tracemalloc

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import soft_envs  # noqa: F401
from soft_envs.envs.vector_base import SoftVectorEnv
from soft_envs.exceptions import InvalidActionError, InvalidParameterError

PETER = "soft_envs/PeterReach-v0"

# (id, keywords) of every variant with a native vector form.
VECTOR_CASES = [
    pytest.param(PETER, dict(kinematic=True), id="peter-kinematic"),
    pytest.param(PETER, dict(kinematic=True, realism="realistic"), id="peter-kinematic-realistic"),
    pytest.param(PETER, dict(kinematic=True, kinematics="tilted", n_modules=3, goal_conditioned=True,
                             action_rate_weight=0.1, realism={"preset": "realistic", "command_delay": (0.0, 0.3),
                                                              "observation_latency": (0.0, 0.2)}),
                 id="peter-kinematic-tilted-goal-delays"),
]
N_ENVS = 3
EPISODE = 6  # steps: short, so that every sub-env autoresets twice
TOL = 1e-9


def _flat(space, obs) -> np.ndarray:
    return gym.spaces.utils.flatten(space, obs).astype(np.float64)


def _row(obs, i):
    return {k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i]


def _assert_realism_equal(vector_info: dict, i: int, single_info: dict) -> None:
    assert vector_info["_realism"][i]
    for name, value in single_info["realism"].items():
        np.testing.assert_allclose(vector_info["realism"][name][i], value, rtol=0, atol=TOL, err_msg=name)


def _assert_step_info_equal(vector_info: dict, i: int, single_info: dict) -> None:
    for key, value in single_info.items():
        if key == "realism" or isinstance(value, str):
            continue
        assert vector_info[f"_{key}"][i], key
        np.testing.assert_allclose(np.asarray(vector_info[key][i], dtype=float), np.asarray(value, dtype=float),
                                   rtol=0, atol=TOL, err_msg=key)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("env_id, kwargs", VECTOR_CASES)
def test_sub_envs_run_the_single_envs_episodes(env_id, kwargs, mode):
    """Sub-env i reset with seed=s is the single env reset with seed=s+i under the same actions:
    observations, rewards, terminations, truncations, info (reward terms, realism draws) to 1e-9,
    through autoresets and a masked reset with its own seed."""
    seed = 11
    envs = gym.make_vec(env_id, num_envs=N_ENVS, max_episode_steps=EPISODE, autoreset_mode=mode, **kwargs)
    assert isinstance(envs.unwrapped, SoftVectorEnv)
    assert envs.metadata["autoreset_mode"] == mode
    singles = [gym.make(env_id, max_episode_steps=EPISODE, **kwargs) for _ in range(N_ENVS)]
    space = singles[0].observation_space
    obs, info = envs.reset(seed=seed)
    for i, single in enumerate(singles):
        single_obs, single_info = single.reset(seed=seed + i)
        np.testing.assert_allclose(_flat(space, _row(obs, i)), _flat(space, single_obs), rtol=0, atol=TOL)
        _assert_realism_equal(info, i, single_info)
    rng = np.random.default_rng(0)
    done = np.zeros(N_ENVS, dtype=bool)
    for step in range(int(2.5 * EPISODE)):
        if step == EPISODE + 2:  # a masked reset of sub-env 1 with its own seed
            mask = np.array([False, True, False])
            obs, info = envs.reset(seed=[None, 99, None], options={"reset_mask": mask})
            single_obs, single_info = singles[1].reset(seed=99)
            np.testing.assert_allclose(_flat(space, _row(obs, 1)), _flat(space, single_obs), rtol=0, atol=TOL)
            _assert_realism_equal(info, 1, single_info)
            assert not info["_realism"][0] and not info["_realism"][2]
            done[1] = False
        actions = rng.uniform(-1.2, 1.2, size=envs.action_space.shape).astype(np.float32)
        obs, reward, terminated, truncated, info = envs.step(actions)
        for i, single in enumerate(singles):
            if mode == AutoresetMode.NEXT_STEP and done[i]:  # this step resets sub-env i
                single_obs, single_info = single.reset()
                expected = (single_obs, 0.0, False, False)
                _assert_realism_equal(info, i, single_info)
                assert not info["_reward_distance"][i]
            else:
                single_obs, single_reward, single_term, single_trunc, single_info = single.step(actions[i])
                expected = (single_obs, single_reward, single_term, single_trunc)
                step_info = info
                if mode == AutoresetMode.SAME_STEP and (single_term or single_trunc):
                    np.testing.assert_allclose(_flat(space, info["final_obs"][i]), _flat(space, single_obs),
                                               rtol=0, atol=TOL)
                    step_info = info["final_info"]
                    single_obs, reset_info = single.reset()
                    expected = (single_obs, *expected[1:])
                    _assert_realism_equal(info, i, reset_info)
                _assert_step_info_equal(step_info, i, single_info)
            np.testing.assert_allclose(_flat(space, _row(obs, i)), _flat(space, expected[0]), rtol=0, atol=TOL)
            assert reward[i] == pytest.approx(expected[1], abs=TOL)
            assert (terminated[i], truncated[i]) == (expected[2], expected[3])
        done = terminated | truncated
    assert envs.unwrapped.steps.max() <= EPISODE
    envs.close()
    for single in singles:
        single.close()
