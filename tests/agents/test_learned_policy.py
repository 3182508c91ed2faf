"""The numpy policy (soft_envs.agents.learned): inference, bad input, files read without pickle."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from soft_envs.agents.learned import MLPPolicy, shipped, shipped_names
from soft_envs.exceptions import InvalidParameterError


def _policy(seed: int = 0, n_in: int = 5, n_out: int = 3) -> MLPPolicy:
    rng = np.random.default_rng(seed)
    weights = [(rng.normal(size=(n_in, 8)), rng.normal(size=8)), (rng.normal(size=(8, n_out)), rng.normal(size=n_out))]
    return MLPPolicy(weights, rng.normal(size=n_in), rng.uniform(0.5, 2.0, n_in), "elu", {"env_id": "x"})


def test_act_is_the_mlp_of_the_standardised_input_clipped():
    policy = _policy()
    obs = np.linspace(-1.0, 1.0, 5)
    (W1, b1), (W2, b2) = policy.weights
    h = (obs - policy.obs_mean) / policy.obs_std @ W1 + b1
    h = np.where(h > 0, h, np.exp(h) - 1.0)
    expected = np.clip(h @ W2 + b2, -1.0, 1.0)
    np.testing.assert_allclose(policy.act(obs), expected, rtol=1e-6, atol=1e-6)
    batch = np.stack([obs, -obs])
    assert policy.act(batch).shape == (2, 3)
    np.testing.assert_allclose(policy.act(batch)[0], policy.act(obs), atol=1e-7)
    action, state = policy.predict(obs, deterministic=True)
    assert state is None and action.shape == (3,)


def test_relu_and_tanh_hidden_layers():
    rng = np.random.default_rng(2)
    weights = [(rng.normal(size=(5, 8)), rng.normal(size=8)), (rng.normal(size=(8, 3)), rng.normal(size=3))]
    obs = rng.normal(size=5)
    for name, f in (("relu", lambda h: np.maximum(h, 0.0)), ("tanh", np.tanh)):
        policy = MLPPolicy(weights, np.zeros(5), np.ones(5), name)
        expected = np.clip(f(obs @ weights[0][0] + weights[0][1]) @ weights[1][0] + weights[1][1], -1.0, 1.0)
        np.testing.assert_allclose(policy.act(obs), expected, rtol=1e-6, atol=1e-6)


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, 5, elements=st.floats(-1e6, 1e6)))
def test_actions_stay_in_the_box_for_any_finite_observation(obs):
    action = _policy().act(obs)
    assert np.all(np.abs(action) <= 1.0) and np.all(np.isfinite(action))


@pytest.mark.parametrize("bad", [np.full(5, np.nan), np.zeros(4), np.zeros((2, 2, 5)), np.zeros(5, complex),
                                 np.array(["a"] * 5)])
def test_bad_observations_raise_value_errors(bad):
    with pytest.raises(ValueError):
        _policy().act(bad)


def test_bad_networks_are_refused():
    W = np.ones((5, 3))
    with pytest.raises(InvalidParameterError, match="activation"):
        MLPPolicy([(W, np.ones(3))], np.zeros(5), np.ones(5), "relu6")
    with pytest.raises(InvalidParameterError, match="do not fit"):
        MLPPolicy([(W, np.ones(4))], np.zeros(5), np.ones(5))
    with pytest.raises(InvalidParameterError, match="NaN"):
        MLPPolicy([(W * np.nan, np.ones(3))], np.zeros(5), np.ones(5))
    with pytest.raises(InvalidParameterError, match="obs_std"):
        MLPPolicy([(W, np.ones(3))], np.zeros(5), np.zeros(5))


def test_save_and_load_round_trip_without_pickle(tmp_path):
    policy = _policy()
    path = policy.save(tmp_path / "p")
    assert path.suffix == ".npz" and json.loads(path.with_suffix(".json").read_text()) == {"env_id": "x"}
    with np.load(path, allow_pickle=False) as data:  # every entry is a plain array
        assert all(data[key].dtype != object for key in data.files)
    loaded = MLPPolicy.load(path)
    obs = np.arange(5.0)
    np.testing.assert_allclose(loaded.act(obs), policy.act(obs), atol=1e-5)  # float32 weights on disk
    assert loaded.card == {"env_id": "x"}
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(InvalidParameterError, match="not an MLPPolicy"):
        MLPPolicy.load(tmp_path / "other.npz")


def test_shipped_policies_load_and_unknown_names_are_refused():
    for name in shipped_names():
        policy = shipped(name)
        for key in ("env_id", "env_kwargs", "recipe", "seed", "timesteps", "evaluation", "soft_envs_version"):
            assert key in policy.card, (name, key)
    with pytest.raises(InvalidParameterError, match="no shipped policy"):
        shipped("no-such-policy")
