"""The obstacle-aware reach agents (agents/reach.py) on a minimal fake env: no simulator.

The fake env is what the agents read: ``unwrapped``, ``model``, ``dt``, ``model_to_action`` (here
the identity, so the action is the planned configuration) and ``obstacle_rows`` (``(S, 16)`` in the
arm's base frame, EMPTY rows no obstacle); the flat observation is PeterReach's layout
``[tip, goal, goal − tip, tip velocity, …]``.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from soft_envs.agents.ik import sqp, trr
from soft_envs.agents.ik.obstacles import ObstacleTerms, obstacle_rows
from soft_envs.agents.reach import ObstacleReachAgent, SQPObstacleReachAgent, TRRReachAgent, displaced_obstacles
from soft_envs.collision import SHAPE_WIDTH, Sphere, shape_rows
from soft_envs.robots import PCCArm, Peter


class FakeEnv:
    """The parts of a goal-reaching env the agents use."""

    def __init__(self, model, rows=None, dt: float = 0.05) -> None:
        self.model = model
        self.obstacle_rows = rows
        self.dt = dt
        self.unwrapped = self

    def model_to_action(self, q: np.ndarray) -> np.ndarray:
        return np.array(q, dtype=float)


def _observation(tip: np.ndarray, goal: np.ndarray, velocity=(0.0, 0.0, 0.0)) -> np.ndarray:
    return np.concatenate((tip, goal, goal - tip, velocity)).astype(np.float32).astype(float)


def _blocking_sphere(arm, q: np.ndarray) -> Sphere:
    """A 3 mm sphere 1 mm into the body of ``q`` at the middle of its backbone."""
    points = arm.backbone(q)
    k = points.shape[0] // 2
    tangent = points[k + 1] - points[k - 1]
    side = np.cross(tangent, [0.0, 0.0, 1.0]) if abs(tangent[2]) < 0.99 * np.linalg.norm(tangent) \
        else np.cross(tangent, [1.0, 0.0, 0.0])
    side /= np.linalg.norm(side)
    return Sphere(tuple(points[k] + side * (arm.body_radius + 3e-3 - 1e-3)), 3e-3)


def _distance(arm, rows, q) -> float:
    return ObstacleTerms(arm, obstacle_rows(rows)).min_distance(q)


@pytest.fixture
def pcc_case():
    arm = PCCArm(3, 6)
    goal = arm.forward(arm.sample(np.random.default_rng(3)))
    blind = trr(arm, goal)
    rows = shape_rows([_blocking_sphere(arm, blind.solution)], slots=3)  # two EMPTY slots
    assert _distance(arm, rows, blind.solution) < 0
    return arm, goal, rows


@pytest.mark.parametrize("agent_type", [ObstacleReachAgent, SQPObstacleReachAgent])
def test_the_agent_plans_around_the_env_s_obstacles(pcc_case, agent_type):
    arm, goal, rows = pcc_case
    env = FakeEnv(arm, rows)
    agent = agent_type(env)
    q = agent.act(_observation(np.zeros(3), goal))
    result = agent.last_result
    assert result is not None and result.success and result.collision_free
    assert np.linalg.norm(arm.forward(q) - goal) < 1e-3
    assert _distance(arm, rows, q) >= agent.clearance - 1e-6


def test_a_first_plan_the_approach_clearance_holds_off_is_made_at_the_clearance():
    """The goal between two spheres 5 mm from the body on either side: no configuration reaches it 10 mm
    clear (TRR's best stops ~18 mm short), so the first plan is made at the 4 mm clearance."""
    arm = PCCArm(3, 6)
    q = arm.sample(np.random.default_rng(3))
    goal, points = arm.forward(q), arm.backbone(q)
    tangent = (points[-1] - points[-2]) / np.linalg.norm(points[-1] - points[-2])
    side = np.cross(tangent, [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    offset = 0.01 + arm.body_radius + 0.005
    rows = shape_rows([Sphere(tuple(goal + side * offset), 0.01), Sphere(tuple(goal - side * offset), 0.01)])
    assert not trr(arm, goal, obstacles=obstacle_rows(rows), clearance=0.01).success
    agent = ObstacleReachAgent(FakeEnv(arm, rows), clearance=0.004, approach_clearance=0.01, feedback=True)
    q = agent.act(_observation(np.zeros(3), goal))
    assert agent.last_result is not None and agent.last_result.success
    assert np.linalg.norm(arm.forward(q) - goal) < 1e-3
    assert 0.004 - 1e-6 <= _distance(arm, rows, q) < 0.01


def test_a_plan_s_time_budget_is_the_solver_s_timeout(pcc_case):
    arm, _, rows = pcc_case
    env = FakeEnv(arm, rows)
    assert ObstacleReachAgent(env).plan_timeout == inspect.signature(trr).parameters["timeout"].default
    assert SQPObstacleReachAgent(env).plan_timeout == inspect.signature(sqp).parameters["timeout"].default
    assert ObstacleReachAgent(env, timeout=0.25).plan_timeout == 0.25


def test_the_obstacles_are_read_at_every_act(pcc_case):
    arm, goal, rows = pcc_case
    env = FakeEnv(arm, None)
    agent = ObstacleReachAgent(env)
    obs = _observation(np.zeros(3), goal)
    first = agent.act(obs)
    plan = agent.last_result
    np.testing.assert_array_equal(agent.act(obs), first)
    assert agent.last_result is plan  # nothing changed: no new plan
    env.obstacle_rows = rows  # an obstacle appears on the planned body
    assert _distance(arm, rows, first) < 0
    second = agent.act(obs)
    assert agent.last_result is not plan and agent.last_result.collision_free
    assert _distance(arm, rows, second) >= 0 and np.linalg.norm(arm.forward(second) - goal) < 1e-3
    plan = agent.last_result
    env.obstacle_rows = rows.copy()  # the same obstacles again: the plan stands
    agent.act(obs)
    assert agent.last_result is plan
    agent.reset()
    assert agent.last_result is None


def test_without_obstacles_it_acts_as_the_trr_agent():
    arm = Peter(2)
    goal = arm.forward(arm.sample(np.random.default_rng(4)))
    obs = _observation(np.zeros(3), goal)
    plain = TRRReachAgent(FakeEnv(arm)).act(obs)
    for rows in (None, np.zeros((2, SHAPE_WIDTH))):
        env = FakeEnv(arm, rows)
        np.testing.assert_array_equal(ObstacleReachAgent(env).act(obs), plain)
    del env.obstacle_rows  # an env without the attribute
    np.testing.assert_array_equal(ObstacleReachAgent(env).act(obs), plain)


def test_feedback_moves_the_aim_and_keeps_clear(pcc_case):
    arm, goal, rows = pcc_case
    env = FakeEnv(arm, rows, dt=0.1)
    agent = ObstacleReachAgent(env, feedback=True, hold_time=0.2)
    q = agent.act(_observation(np.zeros(3), goal))
    sag = np.array([0.0, 0.0, -2e-3])  # the measured tip sags 2 mm below the plan's
    tip = arm.forward(q) + sag
    for _ in range(3):
        q = agent.act(_observation(tip, goal))
    assert agent._aim is not None
    np.testing.assert_allclose(agent._aim, goal - sag, atol=1e-6)  # aim raised by the miss
    assert np.linalg.norm(arm.forward(q) - (goal - sag)) < 1e-3
    assert agent.last_result is not None and agent.last_result.collision_free
    assert _distance(arm, rows, q) >= 0


def test_the_approach_is_corrected_by_the_model_error_seen_on_the_way(pcc_case):
    arm, goal, rows = pcc_case
    agent = ObstacleReachAgent(FakeEnv(arm, rows), feedback=True, step=(0.02, 0.02))
    error = np.array([4e-3, -3e-3, 0.0])  # the real tip: the nominal one of the set-points a period ago, + 5 mm
    commanded = [agent.act(_observation(arm.forward(np.zeros(arm.n_dof)) + error, goal))]
    assert agent._route and agent._aim is not None
    np.testing.assert_array_equal(agent._aim, agent._goal)  # the first plan: no error seen yet
    for _ in range(4):
        tip = arm.forward(commanded[-2] if len(commanded) > 1 else commanded[-1]) + error
        commanded.append(agent.act(_observation(tip, goal, velocity=(0.05, 0.0, 0.0))))
    np.testing.assert_allclose(agent._aim, goal - error, atol=1e-6)  # re-planned on the way (float32 tip)
    assert agent.last_result is not None and agent.last_result.collision_free
    quiet = ObstacleReachAgent(FakeEnv(arm, rows), feedback=True, step=(0.02, 0.02), approach_tolerance=0.01)
    commanded = [quiet.act(_observation(np.zeros(3), goal))]
    for _ in range(4):
        commanded.append(quiet.act(_observation(arm.forward(commanded[-1]) + error, goal, velocity=(0.05, 0, 0))))
    np.testing.assert_array_equal(quiet._aim, quiet._goal)  # 5 mm is below its 10 mm tolerance
    off = ObstacleReachAgent(FakeEnv(arm, rows), feedback=True, step=(0.02, 0.02), approach=False)
    commanded = [off.act(_observation(np.zeros(3), goal))]
    for _ in range(4):
        commanded.append(off.act(_observation(arm.forward(commanded[-1]) + error, goal, velocity=(0.05, 0, 0))))
    np.testing.assert_array_equal(off._aim, off._goal)  # no loop on the way


@pytest.mark.parametrize("keyword", [{"approach_lag": -1}, {"approach_every": 0}, {"approach_tolerance": 0.0},
                                     {"approach_lag": 1.5}, {"approach_clearance": -1e-3},
                                     {"approach_clearance": float("nan")}, {"arrival_periods": -1},
                                     {"arrival_periods": 2.5}])
def test_bad_approach_keywords_raise_value_error(pcc_case, keyword):
    arm, _, rows = pcc_case
    with pytest.raises(ValueError):
        ObstacleReachAgent(FakeEnv(arm, rows), feedback=True, **keyword)


def test_bad_clearance_and_rows_raise_value_error(pcc_case):
    arm, goal, rows = pcc_case
    with pytest.raises(ValueError):
        ObstacleReachAgent(FakeEnv(arm, rows), clearance=-1.0)
    bad = rows.copy()
    bad[0, 13] = -1.0  # a sphere of negative radius
    agent = ObstacleReachAgent(FakeEnv(arm, bad))
    with pytest.raises(ValueError):
        agent.act(_observation(np.zeros(3), goal))


# ---------------------------------------------------------------- the path: paced agents on the real env

def _episode(agent_type, seed: int, **make):
    """One ``PeterReach-v0`` episode with three obstacles: the commanded set-points, the last ``info``,
    the agent and the env's model and obstacles."""
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the envs)

    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, obstacles=3, **make)
    try:
        obs, info = env.reset(seed=seed)
        agent = agent_type(env, feedback=True)
        agent.reset(obs, info)
        commanded = [np.zeros(env.unwrapped.model.n_dof)]
        for _ in range(50):
            obs, _, terminated, truncated, info = env.step(agent.act(obs))
            commanded.append(info["inflation_times"])
            if terminated or truncated:
                break
        return np.array(commanded), info, agent, env.unwrapped.model, env.unwrapped.obstacle_rows
    finally:
        env.close()


@pytest.mark.parametrize("seed", [1002, 1003, 1006])  # seeds where commanding the plan at once collides
def test_the_paced_agent_keeps_every_commanded_configuration_clear(seed):
    commanded, info, agent, model, rows = _episode(ObstacleReachAgent, seed)
    assert agent.step_limits is not None and agent.route_clear
    up, down = agent.step_limits
    change = np.diff(commanded, axis=0)
    assert np.all(change <= up + 1e-6) and np.all(-change <= down + 1e-6)  # the legs' rates per period
    terms = ObstacleTerms(model, obstacle_rows(rows))
    assert min(terms.min_distance(q) for q in commanded) >= agent.clearance - 1e-6
    assert info["collisions"] == 0 and info["is_success"] and info["distance"] < 1e-3


def test_the_blind_and_the_unpaced_agents_collide_on_the_same_seed():
    for agent_type, options in ((TRRReachAgent, {}), (ObstacleReachAgent, {"paced": False})):
        info = _episode(lambda env, feedback, t=agent_type, o=options: t(env, feedback=feedback, **o), 1003)[1]
        assert info["collisions"] > 0


def test_the_step_limits_follow_the_env_s_rates():
    import gymnasium as gym

    import soft_envs  # noqa: F401

    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, obstacles=1, vent_rate=0.005)
    agent = ObstacleReachAgent(env)
    assert agent.step_limits is not None
    up, down = agent.step_limits
    np.testing.assert_allclose(up, 0.1)  # 10 mm/s filling at 10 mm/s per second of inflation, 0.1 s
    np.testing.assert_allclose(down, 0.05)  # venting at 5 mm/s
    assert ObstacleReachAgent(env, paced=False).step_limits is None
    assert ObstacleReachAgent(env, step=(0.2, 0.3)).step_limits[1][0] == 0.3
    with pytest.raises(ValueError):
        ObstacleReachAgent(env, step=(0.1, -0.1))
    env.close()


def test_plan_route_goes_around_a_sphere_on_the_straight_segment():
    from soft_envs.agents.ik.route import advance, duration, plan_route, segment_clearance

    arm = Peter(2)
    start, end = np.array([2.0, 0, 0, 2.0, 0, 0]), np.array([0, 2.0, 2.0, 0, 2.0, 2.0])  # bent one way, the other
    above = arm.backbone(0.5 * (start + end))[-1] + [0.0, 0.0, 0.035]  # over the tip midway, straight up
    terms = ObstacleTerms(arm, obstacle_rows(shape_rows([Sphere(tuple(above), 1e-2)])))
    assert terms.min_distance(start) > 3e-3 and terms.min_distance(end) > 3e-3
    assert segment_clearance(terms, start, end, 0.05) < 0.0
    up, down = np.full(6, 0.1), np.full(6, 0.1)
    route = plan_route(terms, start, end, up=up, down=down, lower=arm.lower, upper=arm.upper, required=3e-3,
                       spacing=0.05)
    assert route is not None and len(route) == 2 and np.array_equal(route[-1], end)
    assert segment_clearance(terms, start, route[0], 0.05) >= 3e-3
    assert segment_clearance(terms, route[0], end, 0.05) >= 3e-3
    q, steps, todo = start, 0, [w.copy() for w in route]
    while todo:
        nxt = advance(q, todo, up, down)
        assert np.all(np.abs(nxt - q) <= 0.1 + 1e-12)
        q, steps = nxt, steps + 1
    np.testing.assert_array_equal(q, end)
    assert steps == math.ceil(duration(start, route[0], up, down) + duration(route[0], end, up, down) - 1e-9)


def test_displaced_obstacles_move_by_their_share_of_the_correction():
    rows = np.zeros((3, SHAPE_WIDTH))
    rows[:, 1:4] = [[0.0, 0.0, -0.01], [0.01, 0.0, 0.05], [0.0, 0.02, 0.2]]  # below the base, halfway, past the tip
    correction, goal, base = np.array([0.004, -0.002, 0.0]), np.array([0.0, 0.0, 0.1]), np.zeros(3)
    moved = displaced_obstacles(rows, correction, goal, base)
    np.testing.assert_allclose(moved[:, 1:4] - rows[:, 1:4], [0.0 * correction, 0.5 * correction, correction])
    np.testing.assert_array_equal(moved[:, 4:], rows[:, 4:])  # sizes and kinds untouched
    np.testing.assert_array_equal(displaced_obstacles(rows, np.zeros(3), goal, base), rows)


def test_a_feedback_plan_sees_the_obstacles_where_the_real_body_meets_them(pcc_case):
    arm, goal, rows = pcc_case
    env = FakeEnv(arm, rows, dt=0.1)
    agent = ObstacleReachAgent(env, feedback=True, hold_time=0.2, paced=False)
    q = agent.act(_observation(np.zeros(3), goal))
    miss = np.array([1.5e-3, 0.0, 0.0])  # the real tip lands 1.5 mm short along x
    seen = []
    solver = agent.solver
    agent.solver = lambda model, aim, q0, obstacles, **kw: seen.append(obstacles) or solver(
        model, aim, q0, obstacles=obstacles, **kw)
    for _ in range(3):
        q = agent.act(_observation(arm.forward(q) - miss, goal))
    assert seen, "a feedback re-plan"
    present = obstacle_rows(rows)
    np.testing.assert_array_equal(arm.backbone(np.zeros(arm.n_dof))[0], np.zeros(3))  # the base at the origin
    np.testing.assert_allclose(seen[-1], displaced_obstacles(present, agent._aim - goal, goal, np.zeros(3)))
    assert not np.allclose(seen[-1][:, 1:4], present[:, 1:4])
