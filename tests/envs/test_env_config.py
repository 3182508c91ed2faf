"""The soft arms' grouped configurations (``soft_envs.envs.config``): the same keywords, defaults
and errors as flat ``gym.make`` keywords, validated in one place, pickled as one object."""

from __future__ import annotations

import ast
import inspect
import pickle
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from soft_envs.envs.pcc_track import PCCTrackEnv
from soft_envs.envs.pcc_track_config import PCCTrackConfig
from soft_envs.envs.peter_reach import PeterReachEnv
from soft_envs.envs.peter_reach_config import PeterReachConfig
from soft_envs.exceptions import InvalidParameterError

CASES = [(PeterReachEnv, PeterReachConfig, "soft_envs/PeterReach-v0", {"payload": 0.1, "kinematic": False}),
         (PCCTrackEnv, PCCTrackConfig, "soft_envs/PCCTrack-v0", {"kp": 60.0, "action_type": "residual"})]

# The keyword defaults the flat constructors had (before the configurations): unchanged.
DEFAULTS = {
    "soft_envs/PeterReach-v0": {"n_modules": 2, "links_per_module": 3, "kinematic": False, "kinematics": "pcc",
                                "goal_conditioned": False, "success_reward": 0.0, "payload": 0.0, "gravity": True,
                                "physics": "soft", "actuation": "pneumatic", "command_delay": 0.0,
                                "backend": "batched", "solver_iterations": 100, "realism": "ideal"},
    "soft_envs/PCCTrack-v0": {"n_segments": 2, "links_per_segment": 6, "segment_length": 0.065,
                              "trajectory": "spiral", "time_scale": 1.0, "trajectory_scale": None,
                              "action_type": "configuration", "residual_limit": 0.02, "physics": "soft",
                              "actuation": None, "regulator_time_constant": 0.01, "regulator_delay": 0.0,
                              "controller_period": None, "kp": 80.0, "kv": 3.0, "compensate_damping": True,
                              "stiffness_error": 0.0, "payload": 0.0, "gravity": True, "rayleigh_stiffness": None,
                              "backend": "batched", "random_start": True, "start_straight": False,
                              "tracking_weight": 1.0, "success_threshold": 3e-3, "goal_conditioned": False,
                              "time_step": None, "frame_skip": None, "realism": "ideal"},
}


def _episode(env, seed: int = 3, steps: int = 4) -> np.ndarray:
    obs, _ = env.reset(seed=seed)
    trace = [obs]
    rng = np.random.default_rng(0)
    for _ in range(steps):
        trace.append(env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))[0])
    return np.array(trace)


@pytest.mark.parametrize(("env_cls", "config_cls", "env_id", "kwargs"), CASES)
def test_the_signature_lists_every_keyword_with_its_old_default(env_cls, config_cls, env_id, kwargs):
    params = inspect.signature(env_cls).parameters
    for name, default in DEFAULTS[env_id].items():
        assert params[name].default == default, name
    assert set(config_cls.owners()) <= set(params) and "config" in params and "use_physics" not in params


@pytest.mark.parametrize(("env_cls", "config_cls", "env_id", "kwargs"), CASES)
def test_a_config_is_the_keywords_grouped_and_pickles_as_one_object(env_cls, config_cls, env_id, kwargs):
    config, rest = config_cls.split(kwargs | {"render_mode": "rgb_array"})
    assert rest == {"render_mode": "rgb_array"}
    assert all(config.keywords()[k] == v for k, v in kwargs.items())
    by_keywords, by_config = gym.make(env_id, **kwargs), gym.make(env_id, config=config)
    np.testing.assert_array_equal(_episode(by_keywords), _episode(by_config))
    env = by_config.unwrapped
    assert env._ezpickle_kwargs["config"] is env.config and env.config == config
    copy = pickle.loads(pickle.dumps(env))
    assert copy.config == config and copy.config is not config
    np.testing.assert_array_equal(_episode(copy), _episode(env))
    with pytest.raises(AttributeError, match="configuration"):
        env.payload = 1.0  # the configuration is the one source of truth
    env.success_threshold = 0.01  # a reward keyword may change (a curriculum): into the configuration
    assert env.config.reward.success_threshold == 0.01
    with pytest.raises(InvalidParameterError):
        env.success_threshold = -1.0  # validated again; refused, it leaves the configuration unchanged
    assert env.success_threshold == 0.01
    for e in (by_keywords, by_config, copy):
        e.close()


@pytest.mark.parametrize(("env_cls", "config_cls", "env_id", "kwargs"), CASES)
def test_keywords_override_a_given_config_and_a_wrong_config_is_refused(env_cls, config_cls, env_id, kwargs):
    config, _ = config_cls.split(kwargs)
    env = env_cls(config=config, payload=0.2)
    assert env.payload == 0.2 and env.config.keywords() == config.keywords() | {"payload": 0.2}
    env.close()
    other = PCCTrackConfig if config_cls is PeterReachConfig else PeterReachConfig
    with pytest.raises(InvalidParameterError, match="config must be"):
        env_cls(config=other())
    with pytest.raises(TypeError, match="multiple values"):
        env_cls(2, **{config_cls.POSITIONAL[0]: 2})


@pytest.mark.parametrize(("config_cls", "kwargs", "match"), [
    (PCCTrackConfig, {"physics": "stiff"}, None), (PCCTrackConfig, {"action_type": "pressure", "physics": "stiff"},
                                                   "needs actuation='pressure'"),
    (PCCTrackConfig, {"controller_period": 0.0033}, "whole number"),
    (PCCTrackConfig, {"time_step": 1e-320}, ">= 1e-06"),
    (PeterReachConfig, {"kinematics": "tilted"}, "needs kinematic=True"),
    (PeterReachConfig, {"command_delay": 6.0}, "at most 5"), (PeterReachConfig, {"solver_iterations": 2.5}, "integer"),
])
def test_validation_is_in_the_config_before_any_env_exists(config_cls, kwargs, match):
    if match is None:  # a valid set: resolved defaults
        config, _ = config_cls.split(kwargs)
        assert (config.actuation.actuation, config.physics.time_step, config.physics.frame_skip) == ("direct", 2e-3, 25)
        return
    with pytest.raises(InvalidParameterError, match=match):
        config_cls.split(kwargs)


@pytest.mark.parametrize("name", ["pcc_track.py", "peter_reach.py", "hexapod_pose.py", "quadruped_base.py",
                                  "quadruped_pose.py", "quadruped_walk.py"])
def test_the_env_constructors_fit_in_a_screen(name):
    source = (Path(__file__).parents[2] / "soft_envs" / "envs" / name).read_text()
    inits = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    assert inits and all(n.end_lineno - n.lineno + 1 <= 60 for n in inits)
