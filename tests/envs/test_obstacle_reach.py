"""PeterReach with obstacles (``obstacles=M``): the draws, the spaces and ``info``, random-action
episodes that touch the obstacles without passing through them, the success rule, bad keywords.
(The vector env's sub-envs equal the single envs with obstacles in tests/envs/test_vector_envs.py.)"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import soft_envs  # noqa: F401
from soft_envs.envs.obstacle_course import DEFAULT_CLEARANCE, ObstacleCourse, body_clearance, split_task
from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots import Peter

PETER = "soft_envs/PeterReach-v0"


def test_obstacles_are_drawn_near_the_path_and_clear_of_the_start_and_the_goal():
    model = Peter(2)
    course = ObstacleCourse(model, 3)
    rng = np.random.default_rng(0)
    start = model.backbone(np.zeros(6))
    empty = 0
    for _ in range(40):
        t = model.sample(rng)
        obstacles = course.draw(rng, t)
        goal = model.backbone(t)
        for centre, radius in zip(obstacles[:, :3], obstacles[:, 3]):
            if radius == 0.0:
                empty += 1
                continue
            assert course.radius_range[0] <= radius <= course.radius_range[1]
            for body in (start, goal):
                assert body_clearance(body, course.body_radius, centre, radius) >= DEFAULT_CLEARANCE - 1e-12
            # near the straight tip path: within the body's radius, its own and the widest gap of it
            a, b = start[-1], goal[-1]
            s = np.clip((centre - a) @ (b - a) / max((b - a) @ (b - a), 1e-300), 0, 1)
            assert np.linalg.norm(centre - (a + s * (b - a))) <= course.body_radius + radius + 0.010 + 1e-9
    assert empty <= 6  # at most 5 % of 120 draws find no place


def test_spaces_info_and_the_env_checker():
    env = gym.make(PETER, obstacles=3)
    base = gym.make(PETER)
    assert env.observation_space.shape[0] == base.observation_space.shape[0] + 12
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=1)
    task = env.unwrapped.arms.obstacles[0]
    np.testing.assert_allclose(obs[-12:], task.ravel().astype(np.float32))
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    for key in ("collisions", "penetration", "contact_force"):
        assert key in info
    assert info["is_success"] is False or info["collisions"] == 0
    env.close()
    base.close()


def test_random_action_episodes_touch_obstacles_without_passing_through():
    env = gym.make(PETER, obstacles=4)
    env.action_space.seed(0)
    touched, deepest = 0, 0.0
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        while True:
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            assert np.all(np.isfinite(obs)) and np.isfinite(reward)
            deepest = max(deepest, info["penetration"])
            if terminated or truncated:
                break
        touched += info["collisions"] > 0
    assert touched >= 1
    assert deepest <= 1e-3
    env.close()


def test_a_goal_reached_through_a_collision_is_no_success():
    env = gym.make(PETER, obstacles=1).unwrapped
    env.reset(seed=0)
    arms = env.arms
    arms.tip[0] = arms.goal[0]  # at the goal ...
    assert env._extra_info()["is_success"]
    arms.tally.collisions[0] = 1  # ... after a touch
    assert not env._extra_info()["is_success"]
    env.close()


def test_the_task_carries_the_obstacles():
    env = gym.make(PETER, obstacles=2).unwrapped
    task = env.draw_task(np.random.default_rng(5))
    t, obstacles = split_task(task[None], env.model.n_dof)
    assert t.shape == (1, 6) and obstacles.shape == (1, 2, 4)
    env.close()


@pytest.mark.parametrize("kwargs", [dict(obstacles=9), dict(obstacles=-1), dict(obstacles=1.5),
                                    dict(obstacles=2, kinematic=True), dict(obstacles=2, backend="pybullet"),
                                    dict(obstacles=2, physics="stiff")])
def test_bad_obstacle_keywords_raise(kwargs):
    with pytest.raises(InvalidParameterError):
        gym.make(PETER, **kwargs)


def test_pictures_show_the_obstacles_as_visual_spheres():
    from soft_envs.envs.obstacle_markers import OBSTACLE_RGBA, TOUCHED_RGBA
    from soft_envs.sim.bullet import render_rgb

    env = gym.make(PETER, obstacles=3, render_mode="rgb_array", width=160, height=120).unwrapped
    for seed in (0, 1):  # made again at each reset, at the episode's obstacles
        env.reset(seed=seed)
        frame = env.render()
        client, obstacles = env.render_client, env.arms.obstacles[0]
        drawn = [k for k in range(3) if obstacles[k, 3] > 0]
        assert [k for k, _ in env.obstacle_markers.bodies] == drawn
        for k, body in env.obstacle_markers.bodies:
            np.testing.assert_allclose(client.getBasePositionAndOrientation(body)[0], obstacles[k, :3], atol=1e-9)
            shape = client.getVisualShapeData(body)[0]
            assert shape[2] == client.GEOM_SPHERE and shape[3][0] == pytest.approx(obstacles[k, 3], rel=1e-6)
            np.testing.assert_allclose(shape[7], OBSTACLE_RGBA, atol=1e-6)
            assert client.getCollisionShapeData(body, -1) == ()  # drawn only
    assert client.getNumBodies() == 2 + len(drawn)  # the arm, the goal marker and the spheres
    for _, body in env.obstacle_markers.bodies:  # without them the picture differs
        client.resetBasePositionAndOrientation(body, [0.0, 0.0, -1.0], [0, 0, 0, 1])
    bare = render_rgb(client, width=160, height=120, **env._camera())
    assert np.count_nonzero(np.any(bare != frame, axis=-1)) > 20
    k, body = env.obstacle_markers.bodies[0]
    env.arms.touching[0, k] = True  # tinted while touched
    env.render()
    np.testing.assert_allclose(client.getVisualShapeData(body)[0][7], TOUCHED_RGBA, atol=1e-6)
    env.close()


@pytest.mark.parametrize("env_id, kwargs", [(PETER, {}), ("soft_envs/PCCReach-v0", {"n_segments": 2})])
def test_the_collision_term_charges_every_step_that_touches_an_obstacle(env_id, kwargs):
    """``collision_weight``: ``reward_collision`` is −weight in every step with a touch (a collision
    counted, or an obstacle touching at the step's end), 0 in steps that neither touch nor go on
    with a touch from the step before, and the terms sum to the reward."""
    weight = 7.0
    env = gym.make(env_id, obstacles=4, collision_weight=weight, **kwargs)
    env.action_space.seed(0)
    charged = 0
    for seed in range(3):
        env.reset(seed=seed)
        collisions, before, done = 0, False, False
        while not done:
            _, reward, terminated, truncated, info = env.step(env.action_space.sample())
            now = bool(env.unwrapped.arms.tally.touching[0].any())
            touched = info["collisions"] > collisions or now
            assert info["reward_collision"] in (-weight, 0.0)
            if touched:
                assert info["reward_collision"] == -weight
            elif not before:
                assert info["reward_collision"] == 0.0
            assert reward == pytest.approx(sum(v for k, v in info.items() if k.startswith("reward_")))
            charged += touched
            collisions, before, done = info["collisions"], now, terminated or truncated
    assert charged >= 1
    env.close()


@pytest.mark.parametrize("env_id, kwargs", [(PETER, {}), ("soft_envs/PCCReach-v0", {"n_segments": 2})])
def test_the_collision_term_needs_obstacles_and_a_nonnegative_weight(env_id, kwargs):
    assert "reward_collision" not in gym.make(env_id, obstacles=2, **kwargs).unwrapped.reset(seed=0)[1]
    with pytest.raises(InvalidParameterError, match="collision_weight needs obstacles"):
        gym.make(env_id, collision_weight=1.0, **kwargs)
    with pytest.raises(InvalidParameterError, match="collision_weight"):
        gym.make(env_id, obstacles=2, collision_weight=-1.0, **kwargs)


def test_the_gpu_env_refuses_the_collision_term_it_does_not_compute():
    from soft_envs.envs.peter_reach_cuda import PeterReachCudaVectorEnv

    with pytest.raises(InvalidParameterError, match="collision_weight"):
        PeterReachCudaVectorEnv._check_supported(gym.make(PETER, obstacles=1, collision_weight=1.0).unwrapped)
