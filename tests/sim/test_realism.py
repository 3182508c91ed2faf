"""The realism framework: presets, overrides, validation, draws and the delayed noisy sensor."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soft_envs.sim.realism import PRESETS, DelayedSensor, Perturbation, Realism, spawn_generator

TABLE = (
    Perturbation("gain", "1", "actuator gain", (0.8, 1.2), "assumption: test", ideal=1.0, valid=(0.1, 10.0),
                 per_element=True),
    Perturbation("delay", "s", "command delay", (0.05, 0.1), "assumption: test", valid=(0.0, 5.0)),
)


def test_presets_resolve_to_ideal_and_realistic_ranges():
    assert PRESETS == ("ideal", "realistic")
    ideal = Realism(TABLE)
    assert ideal.is_ideal() and ideal.ranges == {"gain": (1.0, 1.0), "delay": (0.0, 0.0)}
    assert Realism(TABLE, None).is_ideal()
    real = Realism(TABLE, "realistic")
    assert not real.is_ideal() and real.ranges == {"gain": (0.8, 1.2), "delay": (0.05, 0.1)}


def test_a_dict_overrides_single_perturbations_on_a_preset():
    fixed = Realism(TABLE, {"delay": 0.2})  # on "ideal"
    assert fixed.ranges == {"gain": (1.0, 1.0), "delay": (0.2, 0.2)}
    assert fixed.is_ideal("gain") and not fixed.is_ideal("delay")
    mixed = Realism(TABLE, {"preset": "realistic", "gain": [0.9, 1.0]})
    assert mixed.ranges == {"gain": (0.9, 1.0), "delay": (0.05, 0.1)}


@pytest.mark.parametrize("realism, message", [
    ("noisy", "valid presets: ideal, realistic"),
    ({"preset": "best"}, "valid presets"),
    ({"friction": 0.5}, "valid ones: gain, delay"),
    ({"delay": -0.1}, "must lie in [0, 5]"),
    ({"delay": 6.0}, "must lie in [0, 5]"),
    ({"gain": (1.2, 0.9)}, "low 1.2 > high 0.9"),
    ({"gain": float("nan")}, "finite"),
    ({"gain": (1, 2, 3)}, "a number or a (low, high) pair"),
    ({"gain": "big"}, "a number or a (low, high) pair"),
    (42, "one of"),
])
def test_bad_realism_raises_a_value_error_naming_the_valid_choices(realism, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        Realism(TABLE, realism)


def test_limit_rejects_a_range_beyond_an_env_bound():
    realism = Realism(TABLE, {"delay": (0.0, 2.0)})
    realism.limit("delay", 2.0, "one episode")
    with pytest.raises(ValueError, match="one episode"):
        realism.limit("delay", 1.0, "one episode")


def test_draws_are_uniform_within_their_ranges_with_per_element_sizes():
    realism = Realism(TABLE, "realistic")
    draws = [realism.draw(np.random.default_rng(k), {"gain": 6}) for k in range(200)]
    gains = np.array([d["gain"] for d in draws])
    delays = np.array([d["delay"] for d in draws])
    assert gains.shape == (200, 6) and np.all((gains >= 0.8) & (gains <= 1.2))
    assert np.all((delays >= 0.05) & (delays <= 0.1))
    assert abs(gains.mean() - 1.0) < 0.01 and gains.std() > 0.1  # uniform on ±0.2: std 0.115
    ideal = realism.ideal_values({"gain": 6})
    assert np.array_equal(ideal["gain"], np.ones(6)) and ideal["delay"] == 0.0


@settings(max_examples=50, deadline=None)
@given(low=st.floats(0.1, 10.0), width=st.floats(0.0, 5.0), seed=st.integers(0, 2**32 - 1))
def test_any_valid_range_draws_inside_it(low, width, seed):
    high = min(low + width, 10.0)
    value = Realism(TABLE, {"gain": (low, high)}).draw(np.random.default_rng(seed), {"gain": 3})["gain"]
    assert np.all((value >= low) & (value <= high))


def test_describe_lists_every_perturbation_with_its_source():
    text = Realism(TABLE).describe()
    assert "`gain`" in text and "`delay`" in text and text.count("assumption: test") == 2


def test_a_spawned_generator_leaves_the_parent_stream_alone():
    parent, twin = np.random.default_rng(7), np.random.default_rng(7)
    child = spawn_generator(parent)
    assert parent.random() == twin.random()
    other = spawn_generator(np.random.default_rng(7))
    assert child.random() == other.random()  # same seed, same child
    assert spawn_generator(parent).random() != spawn_generator(parent).random()  # successive children differ
    plain = np.random.Generator(np.random.PCG64())  # no SeedSequence kept: still a generator
    assert isinstance(spawn_generator(plain), np.random.Generator)


def test_sensor_latency_returns_the_value_whole_samples_old():
    sensor = DelayedSensor(latency_steps=2)
    assert np.array_equal(sensor.reset(np.zeros(2)), np.zeros(2))
    out = [sensor.read(np.full(2, float(k))) for k in range(1, 6)]
    assert [o[0] for o in out] == [0.0, 0.0, 1.0, 2.0, 3.0]


def test_sensor_noise_has_the_given_deviation_per_component():
    sensor = DelayedSensor(noise_std=np.array([1e-3, 0.0]), rng=np.random.default_rng(0))
    sensor.reset(np.zeros(2))
    samples = np.array([sensor.read(np.array([1.0, 2.0])) for _ in range(4000)])
    assert np.all(samples[:, 1] == 2.0)
    assert abs(samples[:, 0].mean() - 1.0) < 1e-4 and abs(samples[:, 0].std() - 1e-3) < 5e-5
