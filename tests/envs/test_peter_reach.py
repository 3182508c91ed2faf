"""PeterReach-v0 specifics: layout, goals, success, the TRR agent acting through step, the soft
physics (sag, fill time, ideal settings), the stiff option, PyBullet's joint limit, no native leak."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import soft_envs  # noqa: F401
from soft_envs.agents.ik import trr
from soft_envs.agents.reach import TRRReachAgent
from soft_envs.robots import Peter


def run_agent(env, agent, seed, steps):
    obs, info = env.reset(seed=seed)
    agent.reset(obs, info)
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
    return obs, reward, info


@pytest.mark.parametrize("n_modules", [1, 2, 4])
def test_trr_agent_reaches_the_goal_in_physics_with_gravity(n_modules):
    # Open loop the compliant arm sags under its own weight (0.2 mm for one module, up to
    # 10 mm for four); closing the loop on the measured tip removes it within the episode.
    env = gym.make("soft_envs/PeterReach-v0", n_modules=n_modules)
    open_loop, closed_loop = TRRReachAgent(env), TRRReachAgent(env, feedback=True)
    for seed in range(2):
        _, _, info_open = run_agent(env, open_loop, seed, 50)
        _, reward, info = run_agent(env, closed_loop, seed, 50)
        assert 1e-4 < info_open["distance"] < 15e-3
        assert info["is_success"] and info["distance"] < 0.2 * info_open["distance"], info["distance"]
        assert reward == pytest.approx(-100.0 * info["distance"])  # the default weight: centimetres
    env.close()


def test_a_two_second_fill_completes_within_an_episode():
    env = gym.make("soft_envs/PeterReach-v0", n_modules=2)
    assert env.unwrapped.dt == pytest.approx(0.1) and env.spec.max_episode_steps * env.unwrapped.dt >= 4.0
    env.reset(seed=0)
    full = np.ones(6, dtype=np.float32)  # every leg to 2 s
    inflation = [env.step(full)[4]["leg_inflation"] for _ in range(25)]
    np.testing.assert_allclose(inflation[9], 1.0, atol=1e-9)   # 1 s of filling at 10 mm/s
    np.testing.assert_allclose(inflation[19], 2.0, atol=1e-9)  # full after 2 s ...
    np.testing.assert_allclose(inflation[-1], 2.0, atol=1e-9)  # ... and it stays there
    env.close()


def test_ideal_settings_reproduce_the_kinematic_model():
    env = gym.make("soft_envs/PeterReach-v0", n_modules=3, gravity=False, actuation="instant")
    env.reset(seed=0)
    action = np.linspace(-1.0, 0.8, 9).astype(np.float32)
    for _ in range(40):
        obs, _, _, _, info = env.step(action)
    model = env.unwrapped.model
    assert np.linalg.norm(env.unwrapped.tip - model.forward(env.unwrapped.action_to_model(action))) < 1e-9
    env.close()


def test_stiff_option_is_the_position_servo_body():
    from soft_envs.sim.peter_body import PeterBody

    env = gym.make("soft_envs/PeterReach-v0", physics="stiff")
    assert isinstance(env.unwrapped.body, PeterBody) and env.unwrapped.dt == pytest.approx(0.05)
    agent = TRRReachAgent(env)
    assert run_agent(env, agent, 0, 20)[2]["distance"] < 1e-5  # holds the commanded shape
    env.close()


def test_bodies_over_pybullets_joint_limit_raise_at_construction():
    with pytest.raises(ValueError, match="at most 128 links"):
        gym.make("soft_envs/PeterReach-v0", n_modules=4, links_per_module=15)
    gym.make("soft_envs/PeterReach-v0", n_modules=4, links_per_module=15, kinematic=True).close()


def test_make_step_close_cycles_do_not_grow_the_process():
    # PyBullet's direct (Dantzig) solver leaks ~8 KB per client that stepped; the soft default
    # never uses it. 300 cycles of the stiff body grow the process by ~2.4 MB.
    import ctypes
    import gc

    libc = ctypes.CDLL(None)

    def rss_mb() -> float:
        gc.collect()
        if hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4096 / 1e6

    def cycle() -> None:
        env = gym.make("soft_envs/PeterReach-v0")
        env.reset(seed=0)
        env.step(env.action_space.sample())
        env.close()

    for _ in range(30):
        cycle()
    before = rss_mb()
    for _ in range(300):
        cycle()
    assert rss_mb() - before < 1.0


def test_kinematic_variant_on_the_paper_model_is_exact():
    env = gym.make("soft_envs/PeterReach-v0", n_modules=3, kinematic=True, kinematics="tilted")
    assert env.unwrapped.client is None
    agent = TRRReachAgent(env)
    _, _, info = run_agent(env, agent, 0, 1)
    assert info["distance"] < 1e-6  # float32 goal in the observation
    env.close()


def test_planning_on_the_paper_model_shows_the_model_gap_in_physics():
    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, gravity=False)
    agent = TRRReachAgent(env, model=Peter(2, kinematics="tilted"))
    gaps = [run_agent(env, agent, seed, 30)[2]["distance"] for seed in range(3)]
    env.close()
    assert np.mean(gaps) > 1e-3  # millimetres: the two models disagree


def test_observation_layout_and_goals_are_reachable():
    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, kinematic=True)
    obs, info = env.reset(seed=5)
    u = env.unwrapped
    np.testing.assert_allclose(obs[0:3], u.tip, atol=1e-6)
    np.testing.assert_allclose(obs[3:6], u.goal, atol=1e-6)
    np.testing.assert_allclose(obs[6:9], u.goal - u.tip, atol=1e-6)
    np.testing.assert_allclose(obs[12:], -1.0)  # deflated at reset
    action = np.linspace(-1, 1, 6).astype(np.float32)
    obs, *_ = env.step(action)
    np.testing.assert_allclose(obs[12:], action, atol=1e-6)
    np.testing.assert_allclose(u.action_to_model(action), np.linspace(0, 2, 6), atol=1e-6)
    for seed in range(5):
        env.reset(seed=seed)
        assert trr(u.model, u.goal).success
    env.close()


def test_goal_conditioned_form_and_compute_reward():
    env = gym.make("soft_envs/PeterReach-v0", goal_conditioned=True, kinematic=True)
    obs, _ = env.reset(seed=1)
    assert set(obs) == {"observation", "achieved_goal", "desired_goal"}
    obs, reward, _, _, info = env.step(env.action_space.sample())
    recomputed = env.unwrapped.compute_reward(obs["achieved_goal"], obs["desired_goal"], info)
    assert recomputed == reward  # exactly: learners relabel goals with it
    flat = gym.make("soft_envs/PeterReach-v0", kinematic=True)
    assert not hasattr(flat.unwrapped, "compute_reward")
    flat.close()
    batch = env.unwrapped.compute_reward(np.zeros((4, 3)), np.ones((4, 3)), [info] * 4)
    np.testing.assert_allclose(batch, -100.0 * np.sqrt(3))
    env.close()


def test_reward_is_the_distance_in_centimetres_by_default_and_info_stays_in_metres():
    """The default scale makes a step's reward O(1) for Stable-Baselines3's defaults."""
    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, kinematic=True)
    metres = gym.make("soft_envs/PeterReach-v0", n_modules=2, kinematic=True, distance_weight=1.0)
    starts = []
    for seed in range(20):
        for e in (env, metres):
            e.reset(seed=seed)
        action = np.zeros(6, dtype=np.float32)
        _, reward, _, _, info = env.step(action)
        _, reward_m, _, _, info_m = metres.step(action)
        assert info["distance"] == info_m["distance"]  # metres whatever the weight
        assert reward == info["reward_distance"] == pytest.approx(-100.0 * info["distance"], rel=1e-12)
        assert reward_m == pytest.approx(-info["distance"], rel=1e-12)
        starts.append(reward)
    assert 0.5 < -np.mean(starts) < 5.0  # O(1) a step (about 2 at the middle of the bounds)
    env.close()
    metres.close()


def test_action_rate_term_is_named_and_weighted():
    env = gym.make("soft_envs/PeterReach-v0", kinematic=True, action_rate_weight=0.5)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.ones(6, dtype=np.float32))
    assert info["reward_action_rate"] == pytest.approx(-0.5 * 6 * 2.0**2)
    assert reward == info["reward_distance"] + info["reward_action_rate"]
    env.close()


def test_success_term_is_a_bonus_within_the_threshold_and_relabels_exactly():
    env = gym.make("soft_envs/PeterReach-v0", kinematic=True, goal_conditioned=True, success_reward=2.0)
    obs, _ = env.reset(seed=3)
    obs, reward, _, _, info = env.step(env.action_space.sample())
    assert info["reward_success"] == (2.0 if info["distance"] < 1e-3 else 0.0)
    assert reward == info["reward_distance"] + info["reward_success"] + info["reward_action_rate"]
    assert env.unwrapped.compute_reward(obs["achieved_goal"], obs["desired_goal"], info) == reward
    tip = obs["achieved_goal"]
    goals = np.stack([tip, tip + np.float32([5e-4, 0.0, 0.0]), tip + np.float32([2e-3, 0.0, 0.0])])
    relabelled = env.unwrapped.compute_reward(np.stack([tip] * 3), goals, [info] * 3)
    distances = np.linalg.norm(goals.astype(float) - tip.astype(float), axis=1)
    np.testing.assert_allclose(relabelled, -100.0 * distances + 2.0 * (distances < 1e-3))
    default = gym.make("soft_envs/PeterReach-v0", kinematic=True)  # no term unless asked for
    default.reset(seed=3)
    assert "reward_success" not in default.step(default.action_space.sample())[4]
    default.close()
    env.close()


@pytest.mark.parametrize("kwargs", [dict(kinematics="tilted"), dict(distance_weight=-1.0), dict(success_reward=-1.0),
                                    dict(success_threshold=0.0), dict(n_modules=7), dict(render_mode="video")])
def test_bad_parameters_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        gym.make("soft_envs/PeterReach-v0", **kwargs)


@pytest.mark.parametrize("kwargs", [dict(render_mode="rgb_array"), dict(backend="pybullet")],
                         ids=["drawing-client", "physics-client"])
def test_many_envs_open_and_close_without_leaking_clients(kwargs):
    """Each env its own client (the soft default opens one for its first picture), closed with it."""
    clients = []
    for _ in range(20):
        env = gym.make("soft_envs/PeterReach-v0", **kwargs)
        env.reset(seed=0)
        if env.render_mode is not None:
            env.render()
        clients.append(env.unwrapped.render_client)
        env.close()
    assert len({id(c) for c in clients}) == 20
    assert not any(c.isConnected() for c in clients)


def test_goal_marker_stays_visible_once_the_arm_reaches_it():
    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, render_mode="rgb_array")
    obs, info = env.reset(seed=1)
    agent = TRRReachAgent(env)
    for _ in range(30):
        obs, _, _, _, info = env.step(agent.act(obs))
    assert info["is_success"]
    frame = env.render().astype(int)
    red = (frame[..., 0] > 180) & (frame[..., 1] < 80) & (frame[..., 2] < 80)
    assert red.sum() >= 10, "the goal marker (sphere and pin) should show above the reached tip"
    env.close()
