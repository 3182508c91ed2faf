"""The PCC arms' smooth set-point (``action_type="smooth"``) and the task-space action it carries
(``action_mode="task"``): the Jacobian against finite differences of the model through the env's
conversions (the hanging push arm's turned into the world), the tip moving as commanded from the
straight arm, the single env equal to the native vector env, the feedback law reaching its goals, and
the refusals."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import soft_envs  # noqa: F401
from soft_envs.exceptions import InvalidParameterError
from soft_envs.geometry import quaternion_to_matrix
from soft_envs.robots import PCCArm

REACH, PUSH, TRACK = "soft_envs/PCCReach-v0", "soft_envs/PCCPush-v0", "soft_envs/PCCTrack-v0"
TASK = {"action_type": "smooth", "action_mode": "task"}


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), shrink=st.floats(0.0, 1.0))
def test_the_smooth_jacobian_is_the_models_derivative_and_full_rank_straight(seed, shrink):
    arm = PCCArm(3, 6)
    u = arm.project_smooth(np.random.default_rng(seed).uniform(arm.smooth_lower, arm.smooth_upper) * shrink)
    step = 1e-7
    numeric = np.stack([(arm.smooth_forward(u + step * e) - arm.smooth_forward(u - step * e)) / (2 * step)
                        for e in np.eye(arm.n_dof)], axis=1)
    np.testing.assert_allclose(arm.smooth_jacobian(u), numeric, atol=2e-8)
    np.testing.assert_allclose(arm.smooth_jacobian(u[None])[0], arm.smooth_jacobian(u), atol=1e-15)
    assert np.linalg.matrix_rank(arm.smooth_jacobian(np.zeros(arm.n_dof)), tol=1e-6) == 3  # (θ, φ) has rank 1 there


@pytest.mark.parametrize("env_id", [REACH, PUSH])
@settings(max_examples=10, deadline=None)
@given(command=st.lists(st.floats(-0.6, 0.6), min_size=9, max_size=9).map(np.array))
def test_the_command_jacobian_is_the_tips_derivative_in_the_envs_frame(env_id, command):
    env = gym.make(env_id, **TASK).unwrapped
    command = command[:env.model.n_dof]
    turn = quaternion_to_matrix(np.asarray(getattr(env, "base_orientation", (0.0, 0.0, 0.0, 1.0)), dtype=float))

    def tip(c):
        return turn @ env.model.forward(env.model.from_smooth(env.action_to_model(c)))

    step = 1e-6
    numeric = np.stack([(tip(command + step * e) - tip(command - step * e)) / (2 * step)
                        for e in np.eye(command.size)], axis=1)
    np.testing.assert_allclose(env.command_jacobian(command[None])[0], numeric, atol=1e-7)
    np.testing.assert_allclose(env.model_to_action(env.action_to_model(command)), command, atol=1e-6)
    env.close()


@pytest.mark.parametrize("env_id", [REACH, PUSH])
def test_a_task_action_moves_the_straight_arms_tip_where_it_says(env_id):
    """From the straight arm (where ``(θ, φ)`` set-points have no sideways direction but the bend's), ten
    steps of ``+y`` at 2 mm a step move the true tip ~20 mm along the env's +y, little else."""
    env = gym.make(env_id, **TASK, task_step=2e-3)
    env.reset(seed=3)
    base = env.unwrapped
    world = base.arms.to_world if hasattr(base.arms, "to_world") else (lambda points: points)
    before = world(base.arms.tip)[0].copy()
    for _ in range(10):
        env.step(np.array([0.0, 1.0, 0.0], dtype=np.float32))
    moved = world(base.arms.tip)[0] - before
    assert 0.017 < moved[1] < 0.022, moved
    assert abs(moved[0]) < 1e-3 and abs(moved[2]) < 2e-3, moved
    env.close()


@pytest.mark.parametrize(("env_id", "extra"), [(REACH, {}), (REACH, {"task_feedback": 0.2}), (PUSH, {})])
def test_check_env_is_clean(env_id, extra):
    env = gym.make(env_id, **TASK, **extra)
    check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize(("env_id", "extra"), [(REACH, {"task_feedback": 0.3, "obstacles": 3}), (PUSH, {})])
def test_the_single_env_equals_the_vector_env(env_id, extra):
    single = gym.make(env_id, **TASK, **extra)
    vector = gym.make_vec(env_id, num_envs=3, **TASK, **extra)
    obs_v, _ = vector.reset(seed=11)
    obs_s, _ = single.reset(seed=11)
    np.testing.assert_allclose(obs_v[0], obs_s, atol=1e-12)
    rng = np.random.default_rng(2)
    for _ in range(12):
        actions = rng.uniform(-1.0, 1.0, (3, 3)).astype(np.float32)
        obs_v, reward_v, *_ = vector.step(actions)
        obs_s, reward_s, *_ = single.step(actions[0])
        np.testing.assert_allclose(obs_v[0], obs_s, atol=1e-9)
        assert reward_v[0] == pytest.approx(reward_s, abs=1e-9)
    single.close()
    vector.close()


def test_the_feedback_law_alone_reaches_free_space_goals_on_the_realistic_arm():
    env = gym.make(REACH, **TASK, task_feedback=0.2, realism="realistic")
    for seed in (0, 1):
        env.reset(seed=seed)
        for _ in range(100):
            *_, info = env.step(np.zeros(3, dtype=np.float32))
        assert info["distance"] < 1e-3, (seed, info["distance"])
    env.close()


@pytest.mark.parametrize(("env_id", "kwargs", "match"), [
    (REACH, {"action_mode": "task"}, "no task-space action"),
    (PUSH, {**TASK, "task_feedback": 0.2}, "no measured task error"),
    (TRACK, {"action_type": "smooth", "trajectory": "planar_circle"}, "spatial arm"),
])
def test_refusals(env_id, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        gym.make(env_id, **kwargs)
    if env_id != TRACK:
        with pytest.raises(InvalidParameterError, match=match):
            gym.make_vec(env_id, num_envs=2, **kwargs)


def test_the_task_feedback_controller_makes_each_env_with_its_task_space_action():
    from soft_envs.controllers import env_keywords

    assert env_keywords("task-feedback", "pcc-obstacles", REACH) == TASK
    assert env_keywords("task-feedback", "peter-2", "soft_envs/PeterReach-v0") == {"action_mode": "task"}
