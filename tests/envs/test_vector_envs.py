"""The native vector envs (``gym.make_vec`` through the ``vector_entry_point``): the same episodes as
the single envs, Gymnasium's vector API, bad input, memory.

One generic test (:func:`test_sub_envs_run_the_single_envs_episodes`) runs every vectorised
env id and variant of :data:`VECTOR_CASES` against single envs, step by step, through autoresets
and a masked reset, in each autoreset mode.
"""

from __future__ import annotations

import gc
import tracemalloc

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import soft_envs  # noqa: F401
from soft_envs.envs.vector_base import SoftVectorEnv
from soft_envs.exceptions import InvalidActionError, InvalidParameterError

PETER = "soft_envs/PeterReach-v0"
PCC = "soft_envs/PCCTrack-v0"
PCC_REACH = "soft_envs/PCCReach-v0"
PCC_PUSH = "soft_envs/PCCPush-v0"

# (id, keywords) of every variant with a native vector form.
VECTOR_CASES = [
    pytest.param(PETER, dict(kinematic=True), id="peter-kinematic"),
    pytest.param(PETER, dict(kinematic=True, realism="realistic"), id="peter-kinematic-realistic"),
    pytest.param(PETER, dict(kinematic=True, kinematics="tilted", n_modules=3, goal_conditioned=True,
                             action_rate_weight=0.1, success_reward=1.0,
                             realism={"preset": "realistic", "command_delay": (0.0, 0.3),
                                      "observation_latency": (0.0, 0.2)}),
                 id="peter-kinematic-tilted-goal-delays"),
    pytest.param(PETER, dict(), id="peter-soft"),
    pytest.param(PETER, dict(realism="realistic"), id="peter-soft-realistic"),
    pytest.param(PETER, dict(n_modules=3, actuation="instant", payload=0.2, command_delay=0.1, goal_conditioned=True,
                             action_rate_weight=0.1,
                             realism={"preset": "realistic", "observation_latency": (0.0, 0.2)}),
                 id="peter-soft-instant-payload-goal"),
    pytest.param(PETER, dict(obstacles=3, collision_weight=5.0), id="peter-soft-obstacles"),
    pytest.param(PETER, dict(obstacles=2, realism="realistic", goal_conditioned=True), id="peter-obstacles-realistic"),
    pytest.param(PCC, dict(), id="pcc-configuration"),
    pytest.param(PCC, dict(action_type="torque", realism="realistic"), id="pcc-torque-realistic"),
    pytest.param(PCC, dict(action_type="pressure", regulator_delay=0.05), id="pcc-pressure-delay"),
    pytest.param(PCC, dict(realism="realistic", goal_conditioned=True, action_rate_weight=0.1),
                 id="pcc-realistic-goal"),
    pytest.param(PCC, dict(trajectory="planar_circle", n_segments=3, links_per_segment=4, actuation="direct",
                           random_start=False, payload=0.005), id="pcc-planar-direct"),
    pytest.param(PCC, dict(physics="stiff", start_straight=True), id="pcc-stiff"),
    pytest.param(PCC, dict(action_type="residual", realism="realistic"), id="pcc-residual-realistic"),
    pytest.param(PCC_REACH, dict(obstacles=3, collision_weight=5.0), id="pcc-reach-obstacles"),
    pytest.param(PCC_REACH, dict(obstacles=2, realism="realistic", goal_conditioned=True, action_type="pressure"),
                 id="pcc-reach-obstacles-realistic"),
    pytest.param(PCC_PUSH, dict(), id="pcc-push"),
    pytest.param(PCC_PUSH, dict(realism="realistic", goal_conditioned=True), id="pcc-push-realistic-goal"),
]
N_ENVS = 3
EPISODE = 6  # steps: short, so that every sub-env autoresets twice
TOL = 1e-9
# Observations are float32: the two paths' terms agree to ~1e-12 but may round an entry to neighbouring
# float32 values (one unit in the last place is 6e-8 relative), so observations compare to 1e-6 relative.
OBS_RTOL = 1e-6


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
        if key == "realism":
            continue
        if isinstance(value, str):
            assert vector_info[f"_{key}"][i] and vector_info[key][i] == value, key
            continue
        assert vector_info[f"_{key}"][i], key
        np.testing.assert_allclose(np.asarray(vector_info[key][i], dtype=float), np.asarray(value, dtype=float),
                                   rtol=TOL, atol=TOL, err_msg=key)  # (pressures are O(1e4) Pa)


def _next_episode(singles: list, i: int, seed: int | None = None):
    """Reset single env ``i`` for its next episode (the same instance: nothing of the previous
    episode may carry over)."""
    return singles[i].reset(seed=seed)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("env_id, kwargs", VECTOR_CASES)
def test_sub_envs_run_the_single_envs_episodes(env_id, kwargs, mode):
    """Sub-env i reset with seed=s is the single env reset with seed=s+i under the same actions:
    observations (float32: to 1e-6 relative), rewards, terminations, truncations, info (reward terms,
    realism draws) to 1e-9,
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
        np.testing.assert_allclose(_flat(space, _row(obs, i)), _flat(space, single_obs), rtol=OBS_RTOL, atol=TOL)
        _assert_realism_equal(info, i, single_info)
    rng = np.random.default_rng(0)
    done = np.zeros(N_ENVS, dtype=bool)
    for step in range(int(2.5 * EPISODE)):
        if step == EPISODE + 2:  # a masked reset of sub-env 1 with its own seed
            mask = np.array([False, True, False])
            obs, info = envs.reset(seed=[None, 99, None], options={"reset_mask": mask})
            single_obs, single_info = _next_episode(singles, 1, seed=99)
            np.testing.assert_allclose(_flat(space, _row(obs, 1)), _flat(space, single_obs), rtol=OBS_RTOL,
                                       atol=TOL)
            _assert_realism_equal(info, 1, single_info)
            assert not info["_realism"][0] and not info["_realism"][2]
            done[1] = False
        actions = rng.uniform(-1.2, 1.2, size=envs.action_space.shape).astype(np.float32)
        obs, reward, terminated, truncated, info = envs.step(actions)
        for i in range(N_ENVS):
            single = singles[i]
            if mode == AutoresetMode.NEXT_STEP and done[i]:  # this step resets sub-env i
                single_obs, single_info = _next_episode(singles, i)
                expected = (single_obs, 0.0, False, False)
                _assert_realism_equal(info, i, single_info)
                assert not info["_action_clipped"][i]  # a step's key: this sub-env did not step
            else:
                single_obs, single_reward, single_term, single_trunc, single_info = single.step(actions[i])
                expected = (single_obs, single_reward, single_term, single_trunc)
                step_info = info
                if mode == AutoresetMode.SAME_STEP and (single_term or single_trunc):
                    np.testing.assert_allclose(_flat(space, info["final_obs"][i]), _flat(space, single_obs),
                                               rtol=OBS_RTOL, atol=TOL)
                    step_info = info["final_info"]
                    single_obs, reset_info = _next_episode(singles, i)
                    expected = (single_obs, *expected[1:])
                    _assert_realism_equal(info, i, reset_info)
                _assert_step_info_equal(step_info, i, single_info)
            np.testing.assert_allclose(_flat(space, _row(obs, i)), _flat(space, expected[0]), rtol=OBS_RTOL,
                                       atol=TOL)
            assert reward[i] == pytest.approx(expected[1], abs=TOL)
            assert (terminated[i], truncated[i]) == (expected[2], expected[3])
        done = terminated | truncated
    assert envs.unwrapped.steps.max() <= EPISODE
    envs.close()
    for single in singles:
        single.close()


def test_a_single_soft_env_episode_does_not_depend_on_the_previous_one():
    """Two single soft envs, one stepped through its first episode: their second episodes (same
    seed stream, masses drawn by realism) must be the same. (PyBullet builds its inverse-dynamics
    tree at the first call and ignores ``changeDynamics`` after it: ``SoftArmBody`` takes changed
    masses' dynamics from a body of their own.)"""
    kwargs = dict(realism={"mass_error": (-0.2, 0.2), "payload": (0.0, 0.5)})
    a, b = gym.make(PETER, **kwargs), gym.make(PETER, **kwargs)
    a.reset(seed=3)
    b.reset(seed=3)
    b.step(b.action_space.sample())
    a.reset()
    b.reset()
    action = np.full(6, 0.5, dtype=np.float32)
    np.testing.assert_allclose(a.step(action)[0], b.step(action)[0], rtol=0, atol=TOL)


# ---------------------------------------------------------------------------- the vector API
def test_make_vec_modes():
    """The entry point gives the native env; sync/async still wrap single envs (and agree with it);
    a variant without a batched form comes back as a SyncVectorEnv in the asked autoreset mode."""
    native = gym.make_vec(PETER, num_envs=2, kinematic=True)
    sync = gym.make_vec(PETER, num_envs=2, vectorization_mode="sync", kinematic=True)
    assert type(native.unwrapped).__name__ == "PeterReachVectorEnv"
    assert isinstance(sync.unwrapped, gym.vector.SyncVectorEnv)
    assert native.single_observation_space == sync.single_observation_space
    assert native.single_action_space == sync.single_action_space
    obs_a, _ = native.reset(seed=5)
    obs_b, _ = sync.reset(seed=5)
    np.testing.assert_allclose(obs_a, obs_b, atol=TOL)
    action = np.full(native.action_space.shape, 0.3, dtype=np.float32)
    np.testing.assert_allclose(native.step(action)[0], sync.step(action)[0], atol=TOL)
    for envs in (native, sync):
        envs.close()
    stiff = gym.make_vec(PETER, num_envs=2, physics="stiff", autoreset_mode="SameStep")
    assert isinstance(stiff.unwrapped, gym.vector.SyncVectorEnv)
    assert stiff.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    stiff.close()


def test_info_layout_and_reward_terms():
    envs = gym.make_vec(PETER, num_envs=4, kinematic=True, action_rate_weight=0.5)
    _, info = envs.reset(seed=0)
    assert info["realism"]["leg_gain"].shape == (4, 6) and info["_realism"].all()
    actions = np.tile(np.linspace(-1.5, 1.5, 6, dtype=np.float32), (4, 1))
    actions[0] = 0.0
    obs, reward, terminated, truncated, info = envs.step(actions)
    assert obs.shape == (4, 18) and obs.dtype == np.float32
    assert reward.shape == terminated.shape == truncated.shape == (4,)
    assert terminated.dtype == truncated.dtype == np.bool_
    np.testing.assert_array_equal(info["action_clipped"], [False, True, True, True])
    np.testing.assert_allclose(info["reward_distance"] + info["reward_action_rate"], reward, rtol=0, atol=1e-12)
    assert info["inflation_times"].shape == (4, 6)
    for key in ("reward_distance", "reward_action_rate", "action_clipped", "distance", "is_success"):
        assert info[key].shape == (4,) and info[f"_{key}"].all(), key
    assert "realism" not in info  # only at resets
    envs.close()


def test_compute_reward_is_vectorised_and_equals_the_step_reward():
    envs = gym.make_vec(PETER, num_envs=5, kinematic=True, goal_conditioned=True, action_rate_weight=0.2)
    envs.reset(seed=1)
    obs, reward, *_, info = envs.step(envs.action_space.sample())
    u = envs.unwrapped
    np.testing.assert_array_equal(u.compute_reward(obs["achieved_goal"], obs["desired_goal"], info), reward)
    relabelled = u.compute_reward(obs["achieved_goal"], obs["achieved_goal"][::-1], info)
    single = gym.make(PETER, kinematic=True, goal_conditioned=True, action_rate_weight=0.2).unwrapped
    rows = [{"reward_action_rate": info["reward_action_rate"][i]} for i in range(5)]
    np.testing.assert_allclose(relabelled, single.compute_reward(obs["achieved_goal"], obs["achieved_goal"][::-1],
                                                                 np.array(rows)), rtol=0, atol=1e-12)
    assert not hasattr(gym.make_vec(PETER, num_envs=1, kinematic=True).unwrapped, "compute_reward")
    envs.close()
    single.close()


@pytest.mark.parametrize("env_id, kwargs", [(PETER, dict(kinematic=True)), (PETER, dict(realism="realistic")),
                                            (PCC, dict())], ids=["peter-kinematic", "peter-soft", "pcc"])
def test_render_is_sub_env_0(env_id, kwargs):
    envs = gym.make_vec(env_id, num_envs=3, render_mode="rgb_array", width=64, height=48, **kwargs)
    single = gym.make(env_id, render_mode="rgb_array", width=64, height=48, **kwargs)
    envs.reset(seed=2)
    single.reset(seed=2)
    actions = np.linspace(-1, 1, 18, dtype=np.float32).reshape(3, 6)
    envs.step(actions)
    single.step(actions[0])
    frame = envs.render()
    assert frame.shape == (48, 64, 3) and frame.dtype == np.uint8
    np.testing.assert_array_equal(frame, single.render())
    envs.close()
    single.close()


# ---------------------------------------------------------------------------- bad input
def test_bad_action_batches_name_the_sub_env():
    envs = gym.make_vec(PETER, num_envs=3, kinematic=True)
    envs.reset(seed=0)
    good = np.zeros((3, 6), dtype=np.float32)
    nan = good.copy()
    nan[2, 4] = np.nan
    with pytest.raises(InvalidActionError, match="sub-env 2"):
        envs.step(nan)
    with pytest.raises(InvalidActionError, match="sub-env 1"):
        envs.step([good[0], good[1, :5], good[2]])
    with pytest.raises(InvalidActionError, match="shape"):
        envs.step(np.float32(0.5))
    for shape in [(3, 7), (2, 6), (6,)]:
        with pytest.raises(InvalidActionError, match="shape"):
            envs.step(np.zeros(shape))
    for dtype in (complex, "datetime64[s]", object, str):
        with pytest.raises(InvalidActionError, match="real numbers; got dtype"):
            envs.step(good.astype(dtype))
    envs.step(good)  # still usable after rejected input
    envs.close()


@pytest.mark.parametrize("kwargs", [dict(bogus=1), dict(n_modules=0), dict(frame_skip=0),
                                    dict(realism="weird"), dict(realism={"no_such_perturbation": 1.0}),
                                    dict(kinematics="tilted", kinematic=False)])
def test_unknown_or_bad_keywords_raise_as_the_single_env(kwargs):
    kwargs = {"kinematic": True, **kwargs}
    with pytest.raises(Exception) as single:
        gym.make(PETER, **kwargs)
    with pytest.raises(type(single.value)) as vector:
        gym.make_vec(PETER, num_envs=2, **kwargs)
    assert str(single.value).startswith(str(vector.value))  # gym.make appends the kwargs to a TypeError


def test_bad_vector_arguments():
    from gymnasium.error import ResetNeeded

    from soft_envs.exceptions import ClosedEnvironmentError

    for bad in (dict(num_envs=0), dict(num_envs=2.5), dict(max_episode_steps=0), dict(autoreset_mode="Sometimes")):
        with pytest.raises(InvalidParameterError):
            gym.make_vec(PETER, kinematic=True, **{"num_envs": 2, **bad})
    envs = gym.make_vec(PETER, num_envs=2, kinematic=True)
    with pytest.raises(ResetNeeded):
        envs.step(np.zeros((2, 6)))
    envs.reset(seed=0)
    for mask in (np.array([1, 0]), np.array([False, False]), np.array([True, False, True]), [True, False]):
        with pytest.raises(InvalidParameterError, match="reset_mask"):
            envs.reset(options={"reset_mask": mask})
    with pytest.raises(InvalidParameterError, match="seeds"):
        envs.reset(seed=[1, 2, 3])
    envs.close()
    with pytest.raises(ClosedEnvironmentError):
        envs.reset()


# ---------------------------------------------------------------------------- memory
@pytest.mark.parametrize("env_id, kwargs, n, steps", [
    (PETER, dict(kinematic=True), 64, 300),
    pytest.param(PETER, dict(kinematic=True, realism="realistic"), 64, 300, marks=pytest.mark.slow),
    pytest.param(PETER, dict(realism="realistic"), 16, 150, marks=pytest.mark.slow),
], ids=["peter-kinematic", "peter-kinematic-realistic", "peter-soft-realistic"])
def test_memory_per_sub_env_and_flat_over_autoresets(env_id, kwargs, n, steps):
    """Python/numpy memory (tracemalloc) of a vector env: what ``n`` more sub-envs add is at most
    100 kB each, and the memory is flat over ``steps`` steps with an autoreset every 5 steps, after
    a warm-up (numpy's generator spawning keeps a bounded cache) — a leak of 8 bytes per sub-env
    and step would be at least 19 kB here. (``soft-envs bench vector`` measures the process's RSS over
    10,000 steps of every vectorised env, PCCTrack's too.)"""
    def build(num_envs: int):
        envs = gym.make_vec(env_id, num_envs=num_envs, max_episode_steps=5, **kwargs)
        envs.reset(seed=0)
        for _ in range(20):
            envs.step(np.zeros(envs.action_space.shape, dtype=np.float32))
        return envs

    def traced() -> int:
        gc.collect()  # (closed envs leave reference cycles)
        return tracemalloc.get_traced_memory()[0]

    build(1).close()  # imports and one-time caches
    tracemalloc.start()
    try:
        start = traced()
        one = build(1)
        with_one = traced()
        envs = build(n + 1)
        with_more = traced()
        actions = np.zeros(envs.action_space.shape, dtype=np.float32)
        for _ in range(100):
            envs.step(actions)
        warm = traced()
        for _ in range(steps):
            envs.step(actions)
        after = traced()
    finally:
        tracemalloc.stop()
    assert ((with_more - with_one) - (with_one - start)) / n < 100e3
    assert after - warm < 10e3
    envs.close()
    one.close()
