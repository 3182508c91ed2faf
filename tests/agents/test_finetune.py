"""``NeuralIK.finetune`` (PyTorch) and the controllers that learn on the env's robot before acting."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")

import soft_envs  # noqa: E402,F401
from soft_envs.agents.nn import NeuralIK  # noqa: E402
from soft_envs.agents.nn.finetune import FinetuneRecipe  # noqa: E402
from soft_envs.agents.on_robot import OnRobotReachAgent  # noqa: E402
from soft_envs.exceptions import InvalidParameterError  # noqa: E402
from soft_envs.robots import CalibratedPeter, Peter  # noqa: E402

SMALL = FinetuneRecipe(residual_epochs=150, epochs=4, targets=800)  # a test's budget


@pytest.fixture(scope="module")
def robot_and_samples():
    arm = Peter(2, kinematics="pcc")
    rng = np.random.default_rng(0)
    robot = CalibratedPeter(arm.with_parameters(radius=0.047), leg_gain=rng.uniform(0.8, 1.2, 6),
                            leg_offset=rng.uniform(0.0, 2e-3, 6), loads=[0.2, 0.3], base_tilt=[0.01, -0.02])
    times = arm.sample(rng, 200)
    return robot, times, robot.forward(times) + rng.normal(0.0, 1e-4, (200, 3))


@pytest.mark.slow
def test_finetuning_brings_the_network_to_the_robot(robot_and_samples, tmp_path):
    robot, times, tips = robot_and_samples
    shipped = NeuralIK.pretrained(2)
    before = [w.copy() for w, _ in shipped.weights]
    tuned = shipped.finetune(times, tips, seed=0, recipe=SMALL, progress=False)
    goals = robot.forward(robot.arm.sample(np.random.default_rng(1), 100))
    error_before = np.linalg.norm(robot.forward(shipped.predict(goals)) - goals, axis=1).mean()
    error_after = np.linalg.norm(robot.forward(tuned.predict(goals)) - goals, axis=1).mean()
    assert error_before > 4e-3  # the shipped network misses this robot by millimetres …
    assert error_after < 0.25 * error_before  # … the fine-tuned one much less
    assert all(np.array_equal(w, w0) for (w, _), w0 in zip(shipped.weights, before, strict=True))  # a new network
    report = tuned.metadata["finetune"]
    assert report["samples"] == 200 and report["forward_model_tip_error_mm"]["after"] < 1.0
    tuned.save(tmp_path / "tuned.npz")  # the metadata is plain JSON; numpy inference as before
    np.testing.assert_allclose(NeuralIK.load(tmp_path / "tuned.npz").predict(goals), tuned.predict(goals))


def test_the_same_seed_gives_the_same_network(robot_and_samples):
    _, times, tips = robot_and_samples
    tiny = FinetuneRecipe(residual_epochs=5, epochs=1, targets=300)
    a = NeuralIK.pretrained(2).finetune(times[:40], tips[:40], seed=3, recipe=tiny, progress=False)
    b = NeuralIK.pretrained(2).finetune(times[:40], tips[:40], seed=3, recipe=tiny, progress=False)
    assert all(np.array_equal(wa, wb) for (wa, _), (wb, _) in zip(a.weights, b.weights, strict=True))


def test_bad_finetune_input_is_a_value_error(robot_and_samples):
    _, times, tips = robot_and_samples
    net = NeuralIK.pretrained(2)
    with pytest.raises(InvalidParameterError, match="at least 10"):
        net.finetune(times[:5], tips[:5])
    with pytest.raises(InvalidParameterError, match="shape"):
        net.finetune(times, tips[:50])
    with pytest.raises(InvalidParameterError, match="millimetres"):
        net.finetune(times, tips * 1e3)
    with pytest.raises(ValueError, match="shape"):
        net.finetune(times[:, :4], tips)
    with pytest.raises(InvalidParameterError, match="validation"):
        FinetuneRecipe(validation=0.9)


@pytest.mark.slow
@pytest.mark.parametrize("method, options", [("trr-calibrated", {}), ("nn-finetuned", {"recipe": SMALL})])
def test_a_learning_controller_learns_on_the_episodes_robot_then_reaches(method, options):
    realism = {"preset": "realistic", "observation_latency": 0.0}
    env = gym.make("soft_envs/PeterReach-v0", kinematic=True, realism=realism)
    agent = OnRobotReachAgent(env, method, samples=150, **options)
    with pytest.raises(InvalidParameterError, match="learn"):
        agent.act(np.zeros(18, dtype=np.float32))
    _, drawn = env.reset(seed=2)
    agent.learn(seed=0)
    errors = []
    for goal in range(5):
        obs, info = env.reset(seed=100 + goal, options={"keep_robot": True})
        assert all(np.array_equal(info["realism"][k], drawn["realism"][k]) for k in drawn["realism"])
        agent.reset(obs, info)
        for _ in range(50):
            obs, _, _, truncated, info = env.step(agent.act(obs))
            if truncated:
                break
        errors.append(info["distance"])
    assert np.mean(errors) < 1.5e-3  # open loop on a robot the nominal model misses by ~10 mm
    env.close()


def test_a_learning_controller_checks_its_arguments():
    env = gym.make("soft_envs/PeterReach-v0", kinematic=True)
    with pytest.raises(InvalidParameterError, match="method"):
        OnRobotReachAgent(env, "trr-learned")
    with pytest.raises(InvalidParameterError, match="samples"):
        OnRobotReachAgent(env, "trr-calibrated", samples=3)
    env.close()
