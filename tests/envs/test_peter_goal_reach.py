"""Goals the episode's arm can reach (soft_envs.envs.peter_goal_reach)."""
import numpy as np
import pytest

from soft_envs.envs.peter_goal_reach import GOAL_REDRAWS, ReachCheck
from soft_envs.envs.peter_reach import PeterReachEnv


@pytest.fixture(scope="module")
def env():
    e = PeterReachEnv(n_modules=2, kinematic=True, realism="realistic")
    yield e
    e.close()


def test_peter_goal_reach_bounds_and_verdicts(env):
    check = ReachCheck(env)
    weak = {"leg_gain": np.full(6, 0.7), "supply_gain": 1.0, "leg_offset": np.zeros(6), "leak_rate": np.zeros(6)}
    low, high = check.bounds(weak)
    assert np.allclose(low, 0.0) and np.allclose(high, 0.7 * 2.0 - 0.05)
    assert not check.reachable(np.full(6, 2.0), weak)  # the straight arm at full stroke: too long for 70 % legs
    assert check.reachable(np.full(6, 1.0), weak)
    assert check.reachable(np.full(6, 1.9), {})  # the nominal arm within its margin
    assert not check.reachable(np.full(6, 2.0), {})  # the full stroke is kept in reserve (REACH_MARGIN)


def test_peter_goal_reach_redraws_from_the_same_stream(env):
    weak = {"leg_gain": np.full(6, 0.7), "supply_gain": 1.0}
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    task = env.draw_episode_task(a, weak)
    draws = [env.draw_task(b) for _ in range(GOAL_REDRAWS + 1)]
    assert any(np.array_equal(task, d) for d in draws)
    assert ReachCheck(env).reachable(task[:6], weak)


def test_peter_goal_reach_ideal_draw_is_draw_task():
    e = PeterReachEnv(n_modules=2, kinematic=True, realism="ideal")
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    assert np.array_equal(e.draw_episode_task(a, {}), e.draw_task(b))
    assert a.random() == b.random()  # nothing more drawn
    e.close()


def test_peter_goal_reach_with_obstacles_needs_a_clear_body(env):
    check, model = ReachCheck(env), env.model
    times = np.full(6, 1.0)
    rest = model.backbone(np.zeros(6))
    beside = rest[len(rest) // 2] + np.array([model.body_radius + 0.0105, 0.0, 0.0])  # 0.5 mm from the resting body
    far = np.array([0.3, 0.3, 0.0])
    assert check.reachable(times, {}, np.array([[*far, 0.01]]))
    assert not check.reachable(times, {}, np.array([[*beside, 0.01]]))  # closer than OBSTACLE_CLEARANCE at rest
    assert check.reachable(times, {}, np.array([[*beside, 0.0]]))  # radius 0: an empty slot
    goal_body = model.backbone(times)
    on_goal = goal_body[-2] + np.array([0.0, 0.0, 0.0])  # inside the body at the goal's configuration
    assert not check.reachable(times, {}, np.array([[*on_goal, 0.005]]))


def test_peter_obstacle_reach_draws_tasks_the_drawn_arm_can_do():
    e = PeterReachEnv(n_modules=2, obstacles=3, realism="realistic")
    check = ReachCheck(e)
    for seed in range(8):
        e.reset(seed=seed)
        task = e.draw_episode_task(np.random.default_rng(seed), e.perturbations)
        assert check.reachable(task[:6], e.perturbations, task[6:])
    e.close()
