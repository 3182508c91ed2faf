"""Stateful fuzzing of every environment (``soft_envs.bench.fuzz``), a small budget, and the minimal
reproducers of every defect it found (each fixed at its root)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

import soft_envs
from soft_envs.bench.fuzz import connected_clients, machine
from soft_envs.exceptions import ClosedEnvironmentError, InvalidParameterError

ENV_IDS = list(soft_envs.ENV_IDS)
SEQUENCES = {"soft_envs/HexapodPose-v0": 20}  # a new n_steps costs a reference Cosserat solve
SLOW = ("soft_envs/PeterReach-v0", "soft_envs/PCCTrack-v0")  # about 5 s each on 2 shared cores


@pytest.mark.parametrize("env_id", [pytest.param(e, marks=pytest.mark.slow) if e in SLOW else e for e in ENV_IDS])
def test_random_call_sequences_keep_every_invariant(env_id):
    budget = settings(max_examples=SEQUENCES.get(env_id, 40), stateful_step_count=8, deadline=None, database=None,
                      derandomize=True, suppress_health_check=list(HealthCheck))
    run_state_machine_as_test(machine([env_id]), settings=budget)


@pytest.mark.slow
def test_random_call_sequences_on_the_vector_envs_keep_every_invariant():
    budget = settings(max_examples=30, stateful_step_count=6, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck))
    run_state_machine_as_test(machine(ENV_IDS, vector=True), settings=budget)


# ------------------------------------------------------------------------------ the defects found
def _episode(env, seed: int, actions) -> np.ndarray:
    obs, _ = env.reset(seed=seed)
    trace = [obs]
    for action in actions:
        trace.append(env.step(action)[0])
    return np.array(trace)


@pytest.mark.parametrize("env_id, time_step", [("soft_envs/QuadrupedPose-v0", 1e-4),
                                               ("soft_envs/QuadrupedWalk-v0", 1e-4)])
def test_the_quadruped_replays_an_episode_whatever_ran_before(env_id, time_step):
    # Bullet kept the last episode's contact points (warm-start impulses, friction anchors) over a reset
    actions = np.random.default_rng(0).uniform(-1, 1, (5, 12)).astype(np.float32)
    env = gym.make(env_id, time_step=time_step)
    for seed in (0, 0, 0, 1, 1):  # one env, episode after episode; each as a fresh env plays it
        fresh = gym.make(env_id, time_step=time_step)
        np.testing.assert_array_equal(_episode(env, seed, actions), _episode(fresh, seed, actions))
        fresh.close()
    env.close()


def test_a_realism_range_that_would_make_an_invalid_arm_is_refused_at_construction():
    # PeterReach radius=1.0 with a radius error up to +10 %: accepted, then an error at every reset
    before = connected_clients()
    with pytest.raises(InvalidParameterError, match="radius_error"):
        gym.make("soft_envs/PeterReach-v0", radius=1.0, realism={"radius_error": (0.0, 0.1)})
    assert connected_clients() == before
    env = gym.make("soft_envs/PeterReach-v0", radius=0.5, realism={"radius_error": (0.0, 0.1)})
    env.reset(seed=0)
    env.close()


@pytest.mark.parametrize("kwargs", [{"radius": None}, {"gap": "1"}, {"n_modules": None}, {"links_per_module": None},
                                    {"leg_stiffness": "1"}])
def test_a_keyword_of_the_wrong_type_is_a_typed_error(kwargs):
    with pytest.raises(InvalidParameterError):
        gym.make("soft_envs/PeterReach-v0", **kwargs)


def test_a_constructor_that_refuses_its_keywords_leaves_no_pybullet_client():
    before = connected_clients()
    kept = []  # the errors, kept as a REPL (sys.last_value), a logger or a test report keeps them
    for env_id, kwargs in [("soft_envs/PeterReach-v0", {"physics": "stiff", "realism": "realistic"}),
                           ("soft_envs/PCCTrack-v0", {"controller_period": 0.0033})]:
        with pytest.raises(InvalidParameterError) as caught:
            gym.make(env_id, **kwargs)
        kept.append(caught.value)  # its traceback holds the half-built env
    assert connected_clients() == before


def test_a_goal_of_any_angle_is_observed_in_its_canonical_form():
    env = gym.make("soft_envs/QuadrupedPose-v0")
    obs, _ = env.reset(seed=0, options={"goal": (0.0, 0.0, 4.0)})  # the yaw 4 rad is 4 - 2π
    assert env.observation_space.contains(obs)
    np.testing.assert_allclose(obs[39:42], [0.0, 0.0, 4.0 - 2 * np.pi], atol=1e-6)
    obs, _ = env.reset(seed=0, options={"goal": (0.1, -0.2, 0.3)})  # already canonical: unchanged
    np.testing.assert_allclose(obs[39:42], [0.1, -0.2, 0.3], rtol=1e-6)
    with pytest.raises(InvalidParameterError, match="three finite numbers"):
        env.reset(seed=0, options={"goal": "up"})
    env.close()


def test_a_refused_reset_leaves_the_env_needing_a_reset():
    env = gym.make("soft_envs/QuadrupedPose-v0")
    env.reset(seed=0)
    with pytest.raises(InvalidParameterError):
        env.reset(options={"goal": (np.nan, 0.0, 0.0)})
    with pytest.raises(gym.error.ResetNeeded):
        env.step(np.zeros(12, dtype=np.float32))
    env.reset(seed=0)
    env.step(np.zeros(12, dtype=np.float32))
    env.close()


@pytest.mark.parametrize("env_id", ["soft_envs/PeterReach-v0", "soft_envs/PCCTrack-v0"])
def test_a_refused_reset_leaves_a_native_vector_env_needing_a_reset(env_id):
    envs = gym.make_vec(env_id, num_envs=2)
    envs.reset(seed=0)
    with pytest.raises(InvalidParameterError):
        envs.reset(options={"unknown_option": 1})
    with pytest.raises(gym.error.ResetNeeded):
        envs.step(envs.action_space.sample())
    envs.reset(seed=0)
    envs.step(envs.action_space.sample())
    envs.close()


# ------------------------------------------------------------------------------ the fuzzer can fail
class _FlawedEnv(gym.Env):
    """A tiny env with one flaw: ``"leaky"`` remembers how many resets it saw (no replay),
    ``"outside"`` observes beyond its space, ``"untyped"`` raises a bare ``RuntimeError``."""

    metadata = {"render_modes": []}

    def __init__(self, flaw: str = "leaky") -> None:
        self.flaw = flaw
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.resets = 0
        self.state = np.zeros(2, np.float32)
        self.closed = False
        self.ready = False  # a reset has succeeded since the last refused one

    def render(self):
        if self.closed:
            raise ClosedEnvironmentError("closed")

    def close(self):
        self.closed = True

    def reset(self, *, seed=None, options=None):
        if self.closed:
            raise ClosedEnvironmentError("closed")
        self.ready = False  # the contract of every env: a refused reset leaves the env needing one ...
        if options:  # ... and unknown reset options are refused
            raise InvalidParameterError(f"unknown reset options {sorted(options)}")
        self.ready = True
        super().reset(seed=seed)
        self.resets += 1
        self.state = self.np_random.uniform(-0.5, 0.5, 2).astype(np.float32)
        if self.flaw == "leaky":
            self.state[0] = 0.01 * (self.resets % 2)
        return self.state.copy(), {}

    def step(self, action):
        if self.closed:
            raise ClosedEnvironmentError("closed")
        if not self.ready:
            raise gym.error.ResetNeeded("reset first")
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (2,) or not np.all(np.isfinite(action)):
            raise InvalidParameterError("bad action")
        if self.flaw == "untyped":
            raise RuntimeError("boom")
        scale = 3.0 if self.flaw == "outside" else 0.1
        self.state = np.clip(self.state + scale * np.clip(action, -1, 1), -scale * 10, scale * 10).astype(np.float32)
        return self.state.copy(), 0.0, False, False, {}


@pytest.mark.parametrize("flaw, message", [("leaky", "differs from the first run"),
                                           ("outside", "outside observation_space"), ("untyped", "untyped")])
def test_the_fuzzer_finds_a_flawed_env(flaw, message):
    env_id = f"fuzztest/Flawed{flaw.title()}-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=_FlawedEnv, kwargs={"flaw": flaw})
    budget = settings(max_examples=100, stateful_step_count=8, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck), phases=(Phase.generate,))  # found, not shrunk
    with pytest.raises(BaseException) as caught:
        run_state_machine_as_test(machine([env_id]), settings=budget)
    found = list(getattr(caught.value, "exceptions", [caught.value]))  # one failure, or hypothesis's group
    assert [message in str(e) for e in found] == [True], [str(e)[:200] for e in found]


def test_a_payload_the_legs_cannot_carry_is_refused_and_a_collapse_ends_the_episode():
    # soft PeterReach with kilograms on soft legs diverged: NaN tips, 1e13 m/s, LinAlgError (singular M)
    with pytest.raises(InvalidParameterError, match="cannot carry"):
        gym.make("soft_envs/PeterReach-v0", n_modules=4, payload=5.0, leg_stiffness=200.0)
    env = gym.make("soft_envs/PeterReach-v0", n_modules=4, payload=2.0, leg_stiffness=400.0)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(50):
        obs, reward, terminated, _, info = env.step(rng.uniform(-1, 1, 12))
        assert env.observation_space.contains(obs) and np.isfinite(reward)
        if terminated:
            break
    assert terminated and "crushed" in info["termination_reason"]
    frozen = env.step(rng.uniform(-1, 1, 12))[0]  # stopped until the next reset
    np.testing.assert_array_equal(frozen[:3], obs[:3])
    env.close()


def test_a_count_keyword_has_an_upper_bound():
    # HexapodPose n_steps=10**6 was accepted: minutes to construct, ~90 s a step
    with pytest.raises(InvalidParameterError, match="n_steps must be an integer from 2 to"):
        gym.make("soft_envs/HexapodPose-v0", n_steps=10**6)
