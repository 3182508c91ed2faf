"""``PCCPush-v0``: the hanging arm, the box on the table, the draws, the contact's ``info`` and the
scripted push."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401
from soft_envs.agents.pcc_push import ScriptedPushAgent
from soft_envs.envs.pcc_push import INSIDE, REACH_RADIUS, START_RADIUS

ENV_ID = "soft_envs/PCCPush-v0"


def test_the_arm_hangs_above_the_table_and_the_box_rests_on_it():
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=0)
    unwrapped = env.unwrapped
    half = 0.5 * unwrapped.box_size
    tip, box, goal = obs[0:3], obs[3:6], obs[6:9]
    # the straight arm hangs from the mount: its tip 15 mm above the table on the axis
    assert np.allclose(tip[:2], 0.0, atol=1e-3) and abs(tip[2] - 0.015) < 1e-3
    depth = unwrapped.arms.box_parameters.resting_penetration
    assert abs(box[2] - (half - depth)) < 1e-5 and abs(goal[2] - box[2]) < 1e-5
    assert START_RADIUS[0] - 1e-9 <= np.linalg.norm(box[:2]) <= START_RADIUS[1] + 1e-9
    assert np.allclose(obs[9:12], goal - box, atol=1e-6)
    assert np.allclose(info["object_position"], box, atol=1e-6)
    assert info["object_distance"] == pytest.approx(np.linalg.norm((goal - box)[:2]), abs=1e-6)
    env.close()


def test_draws_push_outwards_or_across_within_reach():
    env = gym.make(ENV_ID)
    unwrapped = env.unwrapped
    rng = np.random.default_rng(5)
    low, high = unwrapped.push_range
    for _ in range(50):
        x, y, _, gx, gy = unwrapped.draw_task(rng)
        box, goal = np.array([x, y]), np.array([gx, gy])
        assert low - 1e-12 <= np.linalg.norm(goal - box) <= high + 1e-12
        assert np.linalg.norm(goal) <= REACH_RADIUS
        direction = (goal - box) / np.linalg.norm(goal - box)
        start = box - (0.5 * unwrapped.box_size + unwrapped.model.body_radius + 0.005) * direction
        assert np.linalg.norm(start) <= np.linalg.norm(box) - INSIDE + 1e-12
    env.close()


def test_an_untouched_box_stays_put():
    """The arm held straight never reaches the box: it must not move (a box moving untouched is an
    env defect a learner would exploit)."""
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=3)
    start = info["object_position"].copy()
    hold = env.unwrapped.model_to_action(np.zeros(env.unwrapped.model.n_dof))
    for _ in range(60):
        obs, _, _, _, info = env.step(hold)
    assert np.linalg.norm(info["object_position"] - start) < 1e-4
    assert info["contact_force"] == 0.0 and info["collisions"] == 0
    env.close()


def test_random_actions_keep_contact_shallow_and_observations_finite():
    """Random actions swing the tip at 1-2 m/s into the 20 g box: the box's coupling, a step behind the
    arm, lets such an impact reach 1.8 mm (seeds 0, 1: the deepest true depth; the table 0) — above the
    1 mm the static obstacles keep, bounded here at 2.5 mm (see the env page)."""
    env = gym.make(ENV_ID)
    env.action_space.seed(1)
    deepest = 0.0
    for seed in range(2):
        env.reset(seed=seed)
        for _ in range(gym.spec(ENV_ID).max_episode_steps):
            obs, _, terminated, truncated, info = env.step(env.action_space.sample())
            assert np.all(np.isfinite(obs))
            deepest = max(deepest, info["penetration"])
            if terminated or truncated:
                break
    assert deepest <= 2.5e-3
    env.close()


@pytest.mark.parametrize(("seed", "realism"), [(1002, "ideal"), (1004, "ideal"), (4, "realistic"), (5, "realistic")])
def test_the_scripted_push_moves_the_box_to_its_goal(seed, realism):
    """(Realistic seeds 4 and 5: arms the push failed on while its IK stepped in ``(ΔL, θ, φ)``.)"""
    env = gym.make(ENV_ID, realism=realism)
    obs, info = env.reset(seed=seed)
    start = info["object_distance"]
    agent = ScriptedPushAgent(env)
    agent.reset(obs, info)
    for _ in range(gym.spec(ENV_ID).max_episode_steps):
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        if terminated or truncated:
            break
    assert info["object_distance"] < 0.01 < start
    assert info["is_success"] and info["penetration"] <= 1e-3
    env.close()


def test_every_push_starts_pressing_lightly():
    """A new push on a new line starts at ``press``: the last push's press, grown against its stuck
    box, would throw this one's box forward (a realistic episode with a second push)."""
    env = gym.make(ENV_ID, realism="realistic")
    obs, info = env.reset(seed=1003)
    agent = ScriptedPushAgent(env)
    agent.reset(obs, info)
    starts, previous = [], agent.phase
    for _ in range(gym.spec(ENV_ID).max_episode_steps):
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        if agent.phase == "push" and previous != "push":
            starts.append(agent._press)
        previous = agent.phase
        if terminated or truncated:
            break
    env.close()
    assert len(starts) >= 2
    assert all(press <= agent.press + agent.press_gain * agent.push_speed * env.unwrapped.dt for press in starts)


def test_bad_push_keywords_are_value_errors():
    from soft_envs.exceptions import InvalidParameterError

    for kwargs in (dict(box_mass=0.0), dict(box_size=0.005), dict(push_range=(0.05, 0.01)),
                   dict(physics="stiff"), dict(action_type="residual"), dict(box_friction=-0.1),
                   dict(reach_behind=-0.01), dict(reach_behind=0.2)):
        with pytest.raises(InvalidParameterError):
            gym.make(ENV_ID, **kwargs)


@pytest.mark.parametrize("behind", [0.0, 0.025])
def test_the_reach_term_points_behind_the_box_on_its_push_line(behind):
    """``reach = −w ‖p − tip‖``: ``p`` the box's centre, or ``reach_behind`` behind it on the line from
    its goal through it (the table's plane, the centre's height)."""
    env = gym.make(ENV_ID, reach_behind=behind, reach_weight=3.0)
    obs, _ = env.reset(seed=4)
    _, _, _, _, info = env.step(np.zeros(env.action_space.shape, dtype=np.float32))
    box, goal, tip = obs[3:6].astype(float), obs[6:9].astype(float), obs[0:3].astype(float)
    line = (goal - box)[:2] / np.linalg.norm((goal - box)[:2])
    point = env.unwrapped.arms.push_point()[0]
    np.testing.assert_allclose(point[:2], info["object_position"][:2] - behind * line, atol=1e-5)
    assert point[2] == pytest.approx(info["object_position"][2])
    tip = env.unwrapped.arms.to_world(env.unwrapped.arms.measured_tip)[0]
    assert info["reward_reach"] == pytest.approx(-3.0 * np.linalg.norm(point - tip), rel=1e-6)
    env.close()


def _held_swing(delay_robust_gains: bool, seconds: float = 8.0) -> tuple[int | None, np.ndarray]:
    """The hanging arm behind a 0.125 s dead time (the paper's 0.1-0.15 s) given a set-point ~16 mm off
    its straight hang and held: the control step it left the PCC model at (or ``None``) and the
    largest distance [m] of the measured tip from its last second's mean in each second."""
    env = gym.make(ENV_ID, regulator_delay=0.125, delay_robust_gains=delay_robust_gains)
    _, info = env.reset(seed=0)
    setpoint = np.asarray(info["setpoint"], dtype=float).copy()
    setpoint[1] += 0.1  # the first segment's κx [1/m]
    action = env.unwrapped.model_to_action(setpoint)
    tips, left = [], None
    for k in range(int(round(seconds / env.unwrapped.dt))):
        obs, _, terminated, _, _ = env.step(action)
        tips.append(obs[0:3].copy())
        if terminated:
            left = k
            break
    per = int(round(1.0 / env.unwrapped.dt))
    env.close()
    path = np.array(tips, dtype=float)
    mean = path[-per:].mean(axis=0)
    return left, np.array([np.linalg.norm(path[i:i + per] - mean, axis=1).max()
                           for i in range(0, len(path) - per + 1, per)])


def test_the_hanging_arm_holds_a_setpoint_behind_the_regulators_dead_time():
    """Under the paper's gains (kp 80, kv 3, +D) the delayed feedback feeds the hanging arm's first
    bending mode (15.7 rad/s) and the arm leaves the PCC model within seconds; with the env's default
    delay-robust gains (kp 6.1, kv 0.23, no +D) its swing decays (measured: 16 mm in the first second,
    0.9 mm in the eighth, about −0.4/s)."""
    left, _ = _held_swing(False)
    assert left is not None
    left, swing = _held_swing(True)
    assert left is None and len(swing) == 8
    assert swing[-1] < 0.1 * swing[0] and np.all(np.diff(swing) < 0.0)


def test_the_push_env_scales_the_law_for_the_dead_time_and_the_tracking_env_keeps_the_papers():
    push = gym.make(ENV_ID, realism="realistic").unwrapped
    track = gym.make("soft_envs/PCCTrack-v0", realism="realistic").unwrapped
    try:
        kp, kv, first_mode = push.delay_gains
        assert (push.controller.kp, push.controller.kv) == (kp, kv) and not push.controller.compensate_damping
        assert 5.0 < kp < 8.0 and 0.15 < kv < 0.3 and 15.0 < first_mode < 16.5
        assert gym.make(ENV_ID).unwrapped.delay_gains is None  # ideal: no dead time, the paper's law
        assert track.delay_gains is None and (track.controller.kp, track.controller.kv) == (80.0, 3.0)
        scaled = [gym.make("soft_envs/PCCTrack-v0", realism="realistic", delay_robust_gains=True, backend=backend)
                  for backend in ("batched", "pybullet")]  # (the gains from the batched core beside PyBullet's)
        assert scaled[0].unwrapped.delay_gains == pytest.approx(scaled[1].unwrapped.delay_gains, rel=1e-12)
        assert 30.0 < scaled[0].unwrapped.delay_gains[2] < 40.0  # the upright arm's first mode [rad/s]
        for env in scaled:
            env.close()
    finally:
        push.close()
        track.close()


@pytest.mark.parametrize("seed", [0, 2])
def test_the_tip_pressed_on_the_table_beside_the_box_comes_to_rest(seed):
    """The tip pressed onto the table 20 mm from the axis, the box 2-5 cm away: the table's contact keeps
    its own stiffness (the box's softened law is its slot's alone), and the arm comes to rest on it. (With
    one law per arm the table took the box's, at 1-6 % of its stiffness: the tip sank 1.5-3.2 mm and
    bounced every other step, its rates flipping sign each step, up to 10 rad/s.)"""
    from soft_envs.agents.ik.trust_region import trr
    from soft_envs.geometry import quaternion_to_matrix

    env = gym.make(ENV_ID)
    arm = env.unwrapped
    _, info = env.reset(seed=seed)
    rotation = quaternion_to_matrix(np.asarray(arm.base_orientation, dtype=float))
    target = np.array([0.02 * np.cos(2.0), 0.02 * np.sin(2.0), -0.005])  # [m, world]: 5 mm into the table
    local = rotation.T @ (target - np.array([0.0, 0.0, arm.mount_height]))
    action = arm.model_to_action(trr(arm.model, local, np.asarray(info["setpoint"], dtype=float), restarts=0).solution)
    for _ in range(60):
        _, _, terminated, _, info = env.step(action)
        assert not terminated
    rates = []
    for _ in range(20):  # physics step by physics step
        arm.simulate(1)
        rates.append(arm.arms.body.state.w[0].copy())
    env.close()
    rates = np.array(rates)
    assert info["contact_force"] > 1.0 and info["penetration"] < 2e-4
    assert np.abs(rates).max() < 0.05 and np.mean(np.sign(rates[1:]) != np.sign(rates[:-1])) < 0.5
