"""SPEC section 7 invariants, tested over every registered environment (dm_control style)."""

from __future__ import annotations

import inspect
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import soft_envs
from soft_envs.exceptions import ClosedEnvironmentError, InvalidParameterError

ENV_IDS = list(soft_envs.ENV_IDS)
N_STEPS = 5


def _rollout(env: gym.Env, seed: int, n_steps: int = N_STEPS):
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    trace = [gym.spaces.utils.flatten(env.observation_space, obs)]
    rewards = []
    for _ in range(n_steps):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        trace.append(gym.spaces.utils.flatten(env.observation_space, obs))
        rewards.append(reward)
        if terminated or truncated:
            break
    return np.array(trace), np.array(rewards)


def test_every_declared_env_is_registered():
    assert "soft_envs/PeterReach-v0" in ENV_IDS
    for env_id in ENV_IDS:
        assert gym.spec(env_id).max_episode_steps is not None


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_is_clean(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    messages = [str(w.message) for w in caught if "needs a display" not in str(w.message)]
    env.close()
    assert messages == []


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_rollout_and_instances_do_not_interfere(env_id):
    a, b = gym.make(env_id), gym.make(env_id)
    # Interleave two instances in one process: each has its own physics client.
    a.reset(seed=7)
    b.reset(seed=8)
    a.step(a.action_space.sample())
    obs_a, rew_a = _rollout(a, seed=3)
    obs_b, rew_b = _rollout(b, seed=3)
    a.close()
    b.close()
    np.testing.assert_array_equal(obs_a, obs_b)
    np.testing.assert_array_equal(rew_a, rew_b)
    c = gym.make(env_id)
    obs_c, _ = _rollout(c, seed=4)
    c.close()
    assert not np.array_equal(obs_a[0], obs_c[0]), "different seeds should give different episodes"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickle_roundtrip(env_id):
    env = gym.make(env_id)
    clone = pickle.loads(pickle.dumps(env))
    obs_a, rew_a = _rollout(env, seed=11, n_steps=2)
    obs_b, rew_b = _rollout(clone, seed=11, n_steps=2)
    env.close()
    clone.close()
    np.testing.assert_array_equal(obs_a, obs_b)
    np.testing.assert_array_equal(rew_a, rew_b)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reward_terms_sum_to_reward_and_bad_actions(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(env.action_space.sample())
    terms = [v for k, v in info.items() if k.startswith("reward_")]
    assert terms, "info must carry the reward terms"
    assert sum(terms) == reward
    assert info["action_clipped"] is False
    too_big = np.asarray(env.action_space.high, dtype=np.float64) * 3.0 + 1.0
    _, _, _, _, info = env.step(too_big.astype(env.action_space.dtype))
    assert info["action_clipped"] is True
    nan_action = np.full(env.action_space.shape, np.nan, dtype=np.float32)
    with pytest.raises(ValueError, match="NaN"):
        env.step(nan_action)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(env.action_space.shape[0] + 1, dtype=np.float32))
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_rgb_array_renders_headless(env_id):
    env = gym.make(env_id, render_mode="rgb_array", width=96, height=72)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    frame = env.render()
    env.close()
    assert frame.shape == (72, 96, 3) and frame.dtype == np.uint8
    assert frame.std() > 1.0, "the frame shows nothing"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_close_frees_the_physics_client(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    clients = [c for c in (getattr(env.unwrapped, "client", None),) if c is not None]
    env.close()
    env.close()  # idempotent
    for client in clients:
        assert not client.isConnected()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_vector_envs(env_id, mode):
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode)
    obs, _ = envs.reset(seed=[1, 2])
    envs.action_space.seed(0)
    for _ in range(3):
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    envs.close()
    assert reward.shape == (2,)
    assert np.all(np.isfinite(reward))


# ---------------------------------------------------------------------------- shared base-env contract
def _env_class(env_id: str):
    return gym.envs.registration.load_env_creator(gym.spec(env_id).entry_point)


def _takes(env_id: str, name: str) -> bool:
    return name in inspect.signature(_env_class(env_id)).parameters


GOAL_ENV_IDS = [env_id for env_id in ENV_IDS if _takes(env_id, "goal_conditioned")]

BAD_BASE_KWARGS = [
    dict(width=0), dict(width=5000), dict(width=64.0), dict(height=-1), dict(height=True),
    dict(frame_skip=0), dict(frame_skip=1.5), dict(frame_skip=10**6),
    dict(time_step=0.0), dict(time_step=-1e-3), dict(time_step=float("nan")), dict(time_step=1e-320),
    dict(time_step=10.0), dict(action_rate_weight=-1.0), dict(action_rate_weight=float("inf")),
]
# Keywords of one env (sizes, steps, counts, thresholds, weights) that must be rejected.
BAD_ENV_KWARGS = {
    "soft_envs/PeterReach-v0": [dict(n_modules=0), dict(links_per_module=0), dict(solver_iterations=0),
                                dict(success_threshold=0.0), dict(payload=-0.1), dict(distance_weight=-1.0)],
    "soft_envs/PCCTrack-v0": [dict(n_segments=0), dict(links_per_segment=0), dict(segment_length=0.0),
                              dict(success_threshold=-1.0), dict(tracking_weight=-1.0), dict(time_scale=0.0)],
    "soft_envs/PCCReach-v0": [dict(n_segments=0), dict(success_threshold=0.0), dict(goal_range=0.0),
                              dict(goal_range=1.5), dict(obstacles=-1), dict(obstacles=9), dict(obstacles=2.5),
                              dict(action_type="residual"), dict(obstacles=2, physics="stiff"),
                              dict(obstacles=2, backend="pybullet")],
    "soft_envs/PCCPush-v0": [dict(n_segments=0), dict(success_threshold=0.0), dict(box_mass=-0.01),
                             dict(box_size=0.2), dict(mount_height=0.0), dict(object_weight=-1.0),
                             dict(push_range=(0.0, 0.02)), dict(backend="pybullet")],
    "soft_envs/QuadrupedWalk-v0": [dict(solver_iterations=0), dict(solver_iterations=2.5),
                                   dict(ground_friction=-1.0), dict(torque_weight=-1.0),
                                   dict(reset_noise_scale=-0.1)],
    "soft_envs/QuadrupedPose-v0": [dict(solver_iterations=-3), dict(success_threshold=0.0),
                                   dict(slip_weight=-1.0), dict(goal_range=-0.1)],
    "soft_envs/HexapodPose-v0": [dict(max_input_step=0.0), dict(max_input_step=-0.01), dict(n_steps=0),
                                 dict(success_threshold=0.0), dict(success_angle_threshold=0.0),
                                 dict(rod_render_radius=0.0), dict(position_weight=-1.0)],
}


def test_every_env_has_its_bad_keyword_cases():
    assert set(BAD_ENV_KWARGS) == set(ENV_IDS)


@pytest.mark.parametrize("kwargs", BAD_BASE_KWARGS, ids=lambda k: ",".join(f"{a}={v!r}" for a, v in k.items()))
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_bad_size_step_and_count_keywords_raise(env_id, kwargs):
    with pytest.raises(InvalidParameterError):
        gym.make(env_id, **kwargs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_bad_env_keywords_raise(env_id):
    for kwargs in BAD_ENV_KWARGS[env_id]:  # (a misspelt keyword would raise TypeError instead)
        with pytest.raises(InvalidParameterError):
            gym.make(env_id, **kwargs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_success_threshold_is_one_name(env_id):
    """Every env that reports ``is_success`` takes ``success_threshold``; none has another name for it."""
    env = gym.make(env_id)
    _, info = env.reset(seed=0)
    env.close()
    params = inspect.signature(_env_class(env_id)).parameters
    assert ("is_success" in info) == ("success_threshold" in params)
    assert "position_threshold" not in params


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_closed_env_raises(env_id):
    env = gym.make(env_id, render_mode="rgb_array", width=32, height=24)
    env.reset(seed=0)
    env.close()
    env.close()  # idempotent
    with pytest.raises(ClosedEnvironmentError):
        env.step(env.action_space.sample())
    with pytest.raises(ClosedEnvironmentError):
        env.reset(seed=0)
    with pytest.raises(ClosedEnvironmentError):
        env.render()
    assert env.unwrapped.client is None


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_step_before_reset_is_a_clear_error(env_id):
    env = gym.make(env_id).unwrapped
    with pytest.raises(ResetNeeded, match="before reset"):
        env.step(env.action_space.sample())
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_action_to_model_and_back(env_id):
    env = gym.make(env_id).unwrapped
    rng = np.random.default_rng(0)
    actions = rng.uniform(-0.99, 0.99, (5, *env.action_space.shape)).astype(np.float32)
    for action in actions:
        q = env.action_to_model(action)
        assert q.dtype == np.float64 and np.all(np.isfinite(q))
        back = env.model_to_action(q)
        assert back.dtype == np.float32
        np.testing.assert_allclose(back, action, atol=1e-6)
    np.testing.assert_array_equal(env.action_to_model(np.full(env.action_space.shape, 7.0)),
                                  env.action_to_model(env.action_space.high))  # clipped into the box
    far = env.action_to_model(env.action_space.high) * 10.0 + 1.0
    assert np.all(np.abs(env.model_to_action(far)) <= 1.0)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_previous_action_and_action_rate_term(env_id):
    env = gym.make(env_id, action_rate_weight=0.5)
    u = env.unwrapped
    assert u.previous_action is None
    env.reset(seed=1)
    previous = u.previous_action
    assert previous.shape == env.action_space.shape and np.all(np.abs(previous) <= 1.0)
    env.action_space.seed(1)
    for _ in range(2):
        action = env.action_space.sample()
        _, reward, _, _, info = env.step(action)
        expected = -0.5 * float(np.sum((action.astype(float) - previous) ** 2))
        assert info["reward_action_rate"] == pytest.approx(expected, rel=1e-12)
        assert [k for k in info if k.startswith("reward_")][-1] == "reward_action_rate"  # the base's term, last
        np.testing.assert_array_equal(u.previous_action, action.astype(float))
        previous = u.previous_action
    env.close()


@pytest.mark.parametrize("env_id", GOAL_ENV_IDS)
def test_compute_reward_contract(env_id):
    """One ``compute_reward`` contract: exact for the step's own goals, goal-independent terms
    from ``info``, vectorised over a batch of infos, absent in the flat form."""
    flat = gym.make(env_id)
    assert not hasattr(flat.unwrapped, "compute_reward")
    flat.close()
    env = gym.make(env_id, goal_conditioned=True, action_rate_weight=0.2)
    obs, _ = env.reset(seed=2)
    env.action_space.seed(2)
    achieved, desired, infos, rewards = [], [], [], []
    for _ in range(3):
        obs, reward, _, _, info = env.step(env.action_space.sample())
        assert env.unwrapped.compute_reward(obs["achieved_goal"], obs["desired_goal"], info) == reward
        achieved.append(obs["achieved_goal"])
        desired.append(obs["desired_goal"])
        infos.append(info)
        rewards.append(reward)
    assert infos[-1]["reward_action_rate"] < 0
    batch = env.unwrapped.compute_reward(np.array(achieved), np.array(desired), np.array(infos))
    np.testing.assert_array_equal(batch, rewards)
    batch_list = env.unwrapped.compute_reward(np.array(achieved), np.array(desired), infos)
    np.testing.assert_array_equal(batch_list, rewards)
    shifted = dict(infos[-1], reward_action_rate=infos[-1]["reward_action_rate"] - 1.0)
    assert env.unwrapped.compute_reward(achieved[-1], desired[-1], shifted) == pytest.approx(rewards[-1] - 1.0)
    goal_only = env.unwrapped.compute_reward(np.array(achieved), np.array(desired), None)
    assert goal_only.shape == (3,) and np.all(goal_only > batch)  # without the (negative) action-rate term
    relabelled = env.unwrapped.compute_reward(np.array(achieved), np.array(achieved), np.array(infos))
    assert relabelled.shape == (3,) and np.all(relabelled > batch - 1e-12)  # reaching the goal pays best
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_rendering_does_not_change_the_episode(env_id):
    """``render()`` only draws: an episode with renders equals one without (camera without side effects)."""
    traces = []
    for render in (False, True):
        env = gym.make(env_id, render_mode="rgb_array", width=32, height=24)
        obs, _ = env.reset(seed=5)
        env.action_space.seed(5)
        trace = [gym.spaces.utils.flatten(env.observation_space, obs)]
        for _ in range(3):
            if render:
                env.render()
            obs, reward, *_ = env.step(env.action_space.sample())
            trace.append(np.append(gym.spaces.utils.flatten(env.observation_space, obs), reward))
        env.close()
        traces.append(np.concatenate(trace))
    np.testing.assert_array_equal(traces[0], traces[1])


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_base_keywords_pass_through_and_survive_pickling(env_id):
    env = gym.make(env_id, width=40, height=30, action_rate_weight=0.25, frame_skip=2)
    clone = pickle.loads(pickle.dumps(env))
    for e in (env, clone):
        u = e.unwrapped
        assert (u.width, u.height, u.action_rate_weight, u.frame_skip) == (40, 30, 0.25, 2)
        e.close()
    with pytest.raises(TypeError):
        gym.make(env_id, not_a_keyword=1)


# ---------------------------------------------------------------- learnability
# The first episodes of every RL run are random: an env must survive them, keep its
# observations inside (not clipped into) their bounds, and give rewards of order one.
# A legged env's fall is its task's failure, not a model's limit: a shorter floor there.
LEARNABLE_FRACTION = {"soft_envs/QuadrupedWalk-v0": 0.01, "soft_envs/QuadrupedPose-v0": 0.05}


def _learnability_cases():
    cases = [(env_id, {}) for env_id in ENV_IDS]
    cases += [("soft_envs/PCCTrack-v0", {"action_type": kind}) for kind in ("torque", "pressure")]
    return [pytest.param(env_id, kwargs, id=env_id.split("/")[-1] + "-" + "-".join(map(str, kwargs.values())),
                         marks=[pytest.mark.slow] if "PCC" in env_id else [])
            for env_id, kwargs in cases]


@pytest.mark.parametrize("env_id, kwargs", _learnability_cases())
def test_random_action_episodes_are_learnable(env_id, kwargs):
    from soft_envs.bench.learnability import random_episodes

    limit = gym.spec(env_id).max_episode_steps
    fraction = LEARNABLE_FRACTION.get(env_id, 0.5)
    # Episodes only need to reach the required length: cap them there.
    m = random_episodes(env_id, kwargs, episodes=3, seed=0, max_steps=int(np.ceil(fraction * limit)))
    assert np.median(m.lengths) >= fraction * limit, f"random episodes end after {m.lengths} of {limit} steps"
    assert m.outside == 0.0
    assert m.clipped == 0.0, "an observation entry was clipped into its bounds under random actions"
    assert 0.03 <= m.reward_scale <= 30.0, f"per-step reward of order {m.reward_scale:.3g}, not one"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_delta_actions_and_observation_history(env_id):
    """``action_mode="delta"``: a zero action holds the command, the observation ends with it;
    ``history=2``: the observation carries the previous two observations and commands."""
    plain = gym.make(env_id)
    env = gym.make(env_id, action_mode="delta", delta_scale=0.5, history=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught if "display" not in str(w.message)] == []
    n_obs = plain.observation_space.shape[0]
    n_act = plain.action_space.shape[0]
    assert env.observation_space.shape == (3 * n_obs + 3 * n_act,)
    obs, _ = env.reset(seed=0)
    held = env.unwrapped.previous_action
    np.testing.assert_allclose(obs[n_obs:n_obs + n_act], held, atol=1e-6)  # the command after the observation
    obs1, *_ = env.step(np.zeros(n_act, dtype=np.float32))
    np.testing.assert_allclose(env.unwrapped.previous_action, held)  # zero change: the same command
    push = np.full(n_act, 0.2, dtype=np.float32)
    obs2, *_ = env.step(push)
    np.testing.assert_allclose(env.unwrapped.previous_action, np.clip(held + 0.1, -1, 1), atol=1e-6)
    np.testing.assert_array_equal(obs2[n_obs + n_act:2 * n_obs + 2 * n_act], obs1[:n_obs + n_act])  # one step old
    np.testing.assert_array_equal(obs2[2 * n_obs + 2 * n_act:], obs1[n_obs + n_act:2 * n_obs + 2 * n_act])
    assert env.observation_space.contains(obs2)
    env.close()
    plain.close()
    if gym.spec(env_id).vector_entry_point is not None:  # the native vector env, wrapped (test_closed_loop.py)
        envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", history=1)
        single = gym.make(env_id, history=1)
        assert envs.single_observation_space == single.observation_space
        envs.close()
        single.close()
    with pytest.raises(InvalidParameterError):
        gym.make(env_id, action_mode="relative")
    with pytest.raises(InvalidParameterError):
        gym.make(env_id, history=-1)


NON_REAL = {"complex": complex, "datetime": "datetime64[s]", "object": object, "string": str}


@pytest.mark.parametrize("dtype", list(NON_REAL), ids=list(NON_REAL))
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_an_action_of_a_non_real_dtype_is_a_value_error_naming_it(env_id, dtype):
    """A complex number, a date, an object or a string is never cast into an action silently."""
    env = gym.make(env_id)
    env.reset(seed=0)
    action = np.zeros(env.action_space.shape).astype(NON_REAL[dtype])
    with pytest.raises(ValueError, match="real numbers; got dtype"):
        env.unwrapped.step(action)
    with pytest.raises(ValueError, match="real numbers; got dtype"):
        env.unwrapped.action_to_model(action)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_into_a_public_conversion_is_a_value_error(env_id, bad):
    env = gym.make(env_id)
    env.reset(seed=0)
    u = env.unwrapped
    action = np.zeros(env.action_space.shape)
    action[0] = bad
    with pytest.raises(ValueError, match="NaN/inf"):
        u.action_to_model(action)
    command = u.action_to_model(np.zeros(env.action_space.shape))
    command[-1] = bad
    with pytest.raises(ValueError, match="NaN/inf"):
        u.model_to_action(command)
    env.close()
