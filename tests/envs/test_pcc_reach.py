"""``PCCReach-v0``: goals, obstacles, the contact's ``info`` and the obstacle-aware PCC agents."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401
from soft_envs.agents.ik.obstacles import ObstacleTerms, obstacle_rows
from soft_envs.agents.ik.smooth_view import SmoothView
from soft_envs.agents.pcc_reach import PCCObstacleReachAgent, PCCTRRObstacleReachAgent
from soft_envs.agents.reach import TRRReachAgent
from soft_envs.envs.obstacle_course import body_clearance
from soft_envs.envs.pcc_reach import PCC_OBSTACLE_RADII

ENV_ID = "soft_envs/PCCReach-v0"


def test_goals_are_the_nominal_tips_of_configurations_within_the_range():
    env = gym.make(ENV_ID, goal_range=0.5)
    model = env.unwrapped.model
    rng = np.random.default_rng(3)
    for _ in range(20):
        c = env.unwrapped.draw_task(rng)
        segments = c.reshape(-1, 3)
        assert np.all(np.abs(segments[:, 0]) <= 0.5 * model.elongation * model.segment_lengths + 1e-15)
        assert np.all(np.abs(segments[:, 1]) <= 0.5 * model.max_bend + 1e-15)
    obs, info = env.reset(seed=4)
    assert np.allclose(obs[3:6], env.unwrapped.arms.goal[0], atol=1e-6)
    assert "distance" in info and info["is_success"] is False
    env.close()


def test_obstacles_are_drawn_clear_of_the_start_and_goal_bodies_and_observed():
    env = gym.make(ENV_ID, obstacles=3)
    unwrapped = env.unwrapped
    model = unwrapped.model
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        c = unwrapped.draw_task(np.random.default_rng(seed))[:model.n_dof]  # (any goal: the draw's rule)
        obstacles = unwrapped.arms.obstacles[0]
        assert np.allclose(obs[-12:].reshape(3, 4), obstacles, atol=1e-6)
        present = obstacles[obstacles[:, 3] > 0]
        assert present.shape[0] >= 2
        assert np.all((present[:, 3] >= PCC_OBSTACLE_RADII[0]) & (present[:, 3] <= PCC_OBSTACLE_RADII[1]))
        start = model.backbone(np.zeros(model.n_dof))
        for centre in present:
            assert body_clearance(start, model.body_radius, centre[:3], centre[3]) >= 3e-3 - 1e-12
        assert unwrapped.obstacle_rows.shape == (3, 16)
        assert c.shape == (model.n_dof,)
    env.close()


def test_random_actions_run_to_the_limit_with_shallow_contact():
    """Random episodes into the obstacles: finite observations, every physics step ≤ 1 mm deep."""
    env = gym.make(ENV_ID, obstacles=3)
    env.action_space.seed(0)
    deepest, touches = 0.0, 0
    for seed in range(3):
        env.reset(seed=seed)
        for _ in range(gym.spec(ENV_ID).max_episode_steps):
            obs, _, terminated, truncated, info = env.step(env.action_space.sample())
            assert np.all(np.isfinite(obs))
            deepest = max(deepest, info["penetration"])
            if terminated or truncated:
                break
        touches += info["collisions"]
        assert info["is_success"] is False or info["collisions"] == 0
    assert touches > 0  # the arm did meet the spheres
    assert deepest <= 1e-3
    env.close()


@pytest.mark.parametrize("whole_steps", [False, True])
def test_fast_random_swings_stay_shallow_in_the_contacts_sub_steps(whole_steps):
    """32 arms × 200 random steps (the tip at up to ~6 m/s, 30 mm a 5 ms step): within 1 mm with the
    contact's sub-steps; in whole steps (``max_substeps = 1``) the same run cuts 1.9 mm into a sphere."""
    env = gym.make_vec(ENV_ID, num_envs=32, obstacles=3)
    if whole_steps:
        env.arms.scene.max_substeps = 1
    env.action_space.seed(0)
    env.reset(seed=0)
    deepest = 0.0
    for _ in range(200):
        obs, _, _, _, info = env.step(env.action_space.sample())
        assert np.all(np.isfinite(obs))
        deepest = max(deepest, float(info["penetration"].max()))
    env.close()
    assert (deepest > 1.5e-3) if whole_steps else (deepest <= 1e-3)


def test_a_collision_voids_success_and_is_counted_once_per_touch():
    env = gym.make(ENV_ID, obstacles=1)
    unwrapped = env.unwrapped
    obs, info = env.reset(seed=0)
    model = unwrapped.model
    # move the one sphere onto the goal-side of the arm's middle: the straight arm bends into it
    tip = unwrapped.arms.goal[0].copy()
    centre = model.backbone(np.zeros(model.n_dof))[6] + np.array([0.02, 0.0, 0.0])
    rows = np.zeros((1, 1, 4))
    rows[0, 0] = (*centre, 0.008)
    unwrapped.arms.obstacles[0] = rows[0]
    from soft_envs.envs.obstacle_course import sphere_rows
    unwrapped.arms.scene.set_shapes(np.array([0]), sphere_rows(rows))
    c = np.zeros(model.n_dof)
    c[1], c[2] = 1.2, 0.0  # bend the first segment towards +x, into the sphere
    for _ in range(10):
        obs, _, _, _, info = env.step(env.unwrapped.model_to_action(c))
    assert info["collisions"] >= 1
    assert info["contact_force"] >= 0.0 and info["penetration"] <= 1e-3
    assert info["is_success"] is False
    assert np.isfinite(tip).all()
    env.close()


def test_smooth_view_backbone_jacobian_matches_finite_differences():
    model = gym.make(ENV_ID).unwrapped.model
    view = SmoothView(model)
    u = model.to_smooth(np.array([0.002, 0.7, 0.3, -0.003, 0.9, -2.0]))
    points, jac = view.backbone_kinematics(u)
    assert np.allclose(points, view.backbone(u), atol=1e-12)
    eps = 1e-7
    for i in range(u.size):
        step = np.zeros_like(u)
        step[i] = eps
        fd = (view.backbone(u + step) - view.backbone(u - step)) / (2 * eps)
        assert np.allclose(fd, jac[:, :, i], atol=1e-6)


@pytest.mark.parametrize(("seed", "preset"), [(1001, "ideal"), (1003, "ideal"), (1024, "realistic")])
def test_obstacle_aware_agent_reaches_without_a_collision(seed, preset):
    """(Realistic 1024, two segments: the straight arm starts 3.6 mm from a sphere; a route that kept that
    distance throughout, instead of leaving it first, touched on the way: 7 collisions.)"""
    from soft_envs.evaluate import PRESETS

    kwargs = {"n_segments": 2} if preset == "realistic" else {}
    env = gym.make(ENV_ID, obstacles=3, **kwargs, **PRESETS[preset])
    obs, info = env.reset(seed=seed)
    agent = PCCObstacleReachAgent(env, feedback=True)
    agent.reset(obs, info)
    for _ in range(gym.spec(ENV_ID).max_episode_steps):
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        if terminated or truncated:
            break
    terms = ObstacleTerms(env.unwrapped.model, obstacle_rows(env.unwrapped.obstacle_rows))
    assert agent.last_result is not None and agent.last_result.collision_free
    assert terms.min_distance(agent.last_result.solution) >= agent.clearance - 1e-6
    assert info["collisions"] == 0 and info["distance"] < 1e-3 and info["is_success"]
    env.close()


@pytest.mark.parametrize("seed", [0, 64])
def test_a_route_no_single_waypoint_clears_is_found_by_the_tree_search(seed, monkeypatch):
    """Two segments, three spheres: from the straight arm no straight or one-waypoint route reaches the
    TRR plan clear (the arm stepped straight at it, through a sphere: 3 and 16 collisions before the tree
    search); the tree search's does."""
    from soft_envs.agents.ik import route

    env = gym.make(ENV_ID, n_segments=2, obstacles=3)
    obs, info = env.reset(seed=seed)
    agent = PCCTRRObstacleReachAgent(env, feedback=True)
    agent.reset(obs, info)
    searched = []
    original = route.connect_route

    def recorded(*args, **kwargs):
        out = original(*args, **kwargs)
        searched.append(out is not None)
        return out

    monkeypatch.setattr(route, "connect_route", recorded)
    for _ in range(gym.spec(ENV_ID).max_episode_steps):
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        if terminated or truncated:
            break
    env.close()
    assert searched and searched[0]
    assert info["collisions"] == 0 and info["is_success"]


def test_blind_trr_reaches_in_free_space():
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=1000)
    agent = TRRReachAgent(env)
    agent.reset(obs, info)
    for _ in range(gym.spec(ENV_ID).max_episode_steps):
        obs, _, _, _, info = env.step(agent.act(obs))
    assert info["distance"] < 1e-3 and info["is_success"]
    assert "collisions" not in info
    env.close()
