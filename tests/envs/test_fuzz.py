"""Stateful fuzzing of every environment (``soft_envs.bench.fuzz``), a small budget, and the minimal
reproducers of every defect it found (each fixed at its root)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
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


# ------------------------------------------------------------------------------ sizes and rates
def _size_keywords() -> list[tuple[str, str, int]]:
    """``(env id, keyword, its documented upper bound)`` of every size keyword of the envs."""
    from soft_envs.envs.base import MAX_FRAME_SKIP, MAX_IMAGE_SIZE, MAX_SOLVER_ITERATIONS
    from soft_envs.envs.closed_loop import MAX_HISTORY
    from soft_envs.envs.hexapod_pose import MAX_ROD_STEPS
    from soft_envs.envs.obstacle_course import MAX_OBSTACLES
    from soft_envs.robots.pcc_arm import MAX_LINKS_PER_SEGMENT, MAX_SEGMENTS
    from soft_envs.robots.peter import MAX_LINKS_PER_MODULE, MAX_MODULES

    common = [("frame_skip", MAX_FRAME_SKIP), ("width", MAX_IMAGE_SIZE), ("height", MAX_IMAGE_SIZE)]
    return ([("soft_envs/PCCTrack-v0", k, b) for k, b in [("n_segments", MAX_SEGMENTS),
                                                           ("links_per_segment", MAX_LINKS_PER_SEGMENT)] + common]
            + [("soft_envs/PeterReach-v0", k, b) for k, b in [
                ("n_modules", MAX_MODULES), ("links_per_module", MAX_LINKS_PER_MODULE), ("obstacles", MAX_OBSTACLES),
                ("history", MAX_HISTORY), ("solver_iterations", MAX_SOLVER_ITERATIONS)] + common]
            + [("soft_envs/QuadrupedWalk-v0", "solver_iterations", MAX_SOLVER_ITERATIONS),
               ("soft_envs/HexapodPose-v0", "n_steps", MAX_ROD_STEPS)])


SIZE_KEYWORDS = _size_keywords()


@given(case=st.sampled_from(SIZE_KEYWORDS), excess=st.one_of(st.integers(1, 10), st.integers(10, 10**18)))
@settings(max_examples=80, derandomize=True, database=None, deadline=None)
def test_a_size_keyword_beyond_its_bound_is_refused_before_anything_is_built(case, excess):
    # PCCTrack n_segments=10**6 built its model and chain for tens of seconds before the joint count refused it
    env_id, keyword, bound = case
    before = connected_clients()
    with pytest.raises(InvalidParameterError, match=rf"{keyword}.* (to|at most) {bound}\b"):
        gym.make(env_id, **{keyword: bound + excess})
    assert connected_clients() == before


@pytest.mark.parametrize("keyword", ["n_segments", "links_per_segment"])
def test_an_absurd_arm_size_is_refused_before_the_arm_is_built(keyword, monkeypatch):
    from soft_envs.robots.pcc_arm import PCCArm

    def built(*args, **kwargs):
        raise AssertionError("the arm's body was built before its size was checked")

    monkeypatch.setattr(PCCArm, "chain", built)
    with pytest.raises(InvalidParameterError, match=keyword):
        gym.make("soft_envs/PCCTrack-v0", **{keyword: 10**6})


@pytest.mark.parametrize("env_id", ["soft_envs/PeterReach-v0", "soft_envs/PCCTrack-v0"])
@pytest.mark.parametrize("keyword", ["num_envs", "max_episode_steps"])
def test_an_absurd_vector_size_is_refused(env_id, keyword):
    from soft_envs.envs.vector_base import MAX_EPISODE_LIMIT, MAX_NUM_ENVS

    bound = {"num_envs": MAX_NUM_ENVS, "max_episode_steps": MAX_EPISODE_LIMIT}[keyword]
    sizes = {"num_envs": 2} | {keyword: 10 * bound}
    with pytest.raises(InvalidParameterError, match=rf"{keyword} must be an integer from 1 to {bound}\b"):
        gym.make_vec(env_id, vectorization_mode="vector_entry_point", **sizes)


def test_a_sync_vector_env_of_pybullet_envs_is_bounded_by_pybullets_clients():
    from soft_envs.envs.vector_base import MAX_PYBULLET_ENVS

    before = connected_clients()
    with pytest.raises(InvalidParameterError, match=f"num_envs must be an integer from 1 to {MAX_PYBULLET_ENVS}"):
        gym.make_vec("soft_envs/PeterReach-v0", num_envs=MAX_PYBULLET_ENVS + 1, vectorization_mode="vector_entry_point",
                     physics="stiff")
    assert connected_clients() == before


@pytest.mark.parametrize("env_id, kwargs", [
    ("soft_envs/PeterReach-v0", {"kinematic": True, "time_step": 1.0, "frame_skip": 3}),
    ("soft_envs/PCCTrack-v0", {"time_step": 0.5, "frame_skip": 2, "controller_period": 0.5}),
    ("soft_envs/QuadrupedPose-v0", {"time_step": 1.0, "frame_skip": 1}),
    ("soft_envs/HexapodPose-v0", {"time_step": 1.0, "frame_skip": 2}),
])
def test_a_control_period_of_a_second_or_more_keeps_render_fps_a_positive_integer(env_id, kwargs):
    # int(round(1 / dt)) was 0 for dt >= 2 s: RecordVideo wrote 0-fps videos, HumanRendering's clock.tick(0)
    env = gym.make(env_id, **kwargs)
    fps = env.unwrapped.metadata["render_fps"]
    assert env.unwrapped.dt >= 1.0 and isinstance(fps, int) and fps == 1  # gymnasium.utils.play wants an int
    env.close()


def test_render_fps_is_the_control_rate_rounded_and_at_least_one():
    from soft_envs.envs.base import render_fps

    assert [render_fps(dt) for dt in (0.05, 1 / 60, 0.1, 0.7, 1.0, 2.0, 1e4)] == [20, 60, 10, 1, 1, 1, 1]
    envs = gym.make_vec("soft_envs/PeterReach-v0", num_envs=2, kinematic=True, time_step=1.0, frame_skip=3)
    assert envs.metadata["render_fps"] == 1
    envs.close()
