"""Neural-network IK: shipped weights, numpy inference, hybrid, dataset and training pipeline."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import soft_envs  # noqa: F401
from soft_envs.agents.nn import NeuralIK, NeuralReachAgent, gelu
from soft_envs.bench.peter import table1_targets
from soft_envs.robots.peter import Peter


class _Shipped(dict):
    """The shipped networks, loaded on first use."""

    def __missing__(self, n_modules: int) -> NeuralIK:
        self[n_modules] = NeuralIK.pretrained(n_modules)
        return self[n_modules]


@pytest.fixture(scope="module")
def nets() -> dict[int, NeuralIK]:
    return _Shipped()


# ---------------------------------------------------------------- shipped networks

@pytest.mark.parametrize("n_modules", [2, 3, 4])
def test_pretrained_shapes_bounds_and_model(nets, n_modules):
    net = nets[n_modules]
    model = net.model
    assert model.n_modules == n_modules and model.kinematics == "tilted"
    assert net.n_outputs == 3 * n_modules
    _, targets = table1_targets(n_modules, 50, seed=123)
    t = net.predict(targets)
    assert t.shape == (50, 3 * n_modules) and t.dtype == np.float64
    assert np.all(t >= model.lower) and np.all(t <= model.upper)
    single = net.predict(targets[7])
    assert single.shape == (3 * n_modules,)
    np.testing.assert_allclose(single, t[7], atol=1e-6)
    assert net.metadata["training"]["n_samples"] == 10_000


@pytest.mark.parametrize("n_modules, bound_mm", [(2, 0.02), (3, 0.05), (4, 0.05)])
def test_pretrained_beats_paper_network(nets, n_modules, bound_mm):
    """Mean tip error on 300 targets (not the training seed's) below the stated bound [mm]."""
    net = nets[n_modules]
    _, targets = table1_targets(n_modules, 300, seed=99)
    errors = np.linalg.norm(net.model.forward(net.predict(targets)) - targets, axis=-1)
    assert errors.mean() * 1e3 < bound_mm


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=3, max_size=3))
def test_predict_always_within_bounds(target):
    """Any finite target, even far outside the workspace, gives times inside the bounds."""
    net = NeuralIK.pretrained(2)
    t = net.predict(np.array(target))
    assert np.all(np.isfinite(t)) and np.all(t >= 0.0) and np.all(t <= 2.0)


@pytest.mark.parametrize("bad", [np.array([0.0, np.nan, 0.1]), np.zeros(2), np.zeros((4, 2)), np.zeros((2, 2, 3)),
                                 np.array([0.0, 0.0, 120.0]),  # millimetres for metres
                                 np.array([1e300, 0.0, 0.0]), np.array([[0.0, 0.0, 0.1], [0.0, 0.0, 120.0]])])
def test_predict_rejects_bad_targets(nets, bad):
    with pytest.raises(ValueError):
        nets[2].predict(bad)


def test_pretrained_rejects_unknown_module_count():
    with pytest.raises(ValueError):
        NeuralIK.pretrained(5)


def test_save_load_roundtrip_without_pickle(nets, tmp_path):
    path = tmp_path / "net.npz"
    nets[3].save(path)
    with np.load(path, allow_pickle=False) as data:  # raises if anything needed pickle
        meta = json.loads(str(data["metadata"]))
        assert meta["model"]["n_modules"] == 3
    loaded = NeuralIK.load(path)
    x = table1_targets(3, 20, 5)[1]
    np.testing.assert_array_equal(loaded.predict(x), nets[3].predict(x))


def test_load_rejects_other_npz(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, a=np.zeros(3))
    with pytest.raises(ValueError, match="not a NeuralIK weights file"):
        NeuralIK.load(path)


@pytest.mark.parametrize("poison", ["weight_0", "bias_1", "x_std", "t_high"])
def test_weights_file_with_nan_does_not_load(nets, tmp_path, poison):
    path = tmp_path / "net.npz"
    nets[2].save(path)
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k].copy() for k in data.files}
    arrays[poison].flat[0] = np.nan
    bad = tmp_path / "nan.npz"
    np.savez(bad, **arrays)
    with pytest.raises(ValueError):
        NeuralIK.load(bad)


def test_inconsistent_weights_rejected():
    W = [(np.zeros((3, 4)), np.zeros(4)), (np.zeros((5, 6)), np.zeros(6))]
    with pytest.raises(ValueError):
        NeuralIK(W, np.zeros(3), np.ones(3), np.zeros(6), np.full(6, 2.0))


# ---------------------------------------------------------------- hybrid and agent

def test_hybrid_reaches_every_target(nets):
    model, targets = table1_targets(2, 60, seed=7)
    res = nets[2].solve_batch(targets)
    assert res.errors.max() < 1e-5 and res.success.all()
    assert np.all(res.solutions >= model.lower) and np.all(res.solutions <= model.upper)
    np.testing.assert_allclose(model.forward(res.solutions), targets, atol=1e-5)
    plain = nets[2].solve_batch(targets, refine=False)
    assert plain.errors.mean() > res.errors.mean()  # refinement does something
    one = nets[3].solve(table1_targets(3, 1, seed=8)[1][0])
    assert one.success and one.error < 1e-6


def test_neural_agent_in_peter_reach():
    env = gym.make("soft_envs/PeterReach-v0", n_modules=2, kinematic=True, kinematics="tilted")
    agent = NeuralReachAgent(env)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        agent.reset(obs, info)
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        assert info["distance"] < 1e-5  # action float32 rounding of the times
    env.close()


# ---------------------------------------------------------------- numpy ↔ torch, dataset, training

def test_gelu_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.linspace(-6, 6, 1001).astype(np.float32)
    expected = torch.nn.functional.gelu(torch.from_numpy(x), approximate="tanh").numpy()
    np.testing.assert_allclose(gelu(x), expected, atol=1e-6)


def test_dataset_splits_and_labels():
    from soft_envs.agents.nn.train import make_dataset

    model = Peter(2)
    data = make_dataset(model, 400, seed=3, labels="branch")
    sizes = (len(data.train), len(data.validation), len(data.test))
    assert sizes == (300, 60, 40)
    assert len(np.unique(np.concatenate((data.train, data.validation, data.test)))) == 400
    np.testing.assert_allclose(model.forward(data.times), data.targets, atol=1e-6)  # branch labels solve
    assert np.all(data.times >= model.lower) and np.all(data.times <= model.upper)
    again = make_dataset(model, 400, seed=3, labels="branch")
    np.testing.assert_array_equal(again.targets, data.targets)
    np.testing.assert_array_equal(again.train, data.train)
    random = make_dataset(model, 400, seed=3, labels="random")
    np.testing.assert_array_equal(random.targets, data.targets)
    np.testing.assert_allclose(model.forward(random.times), random.targets, atol=1e-12)
    with pytest.raises(ValueError):
        make_dataset(model, 400, labels="nearest")


def test_forward_loss_gradient_is_the_model_jacobian():
    torch = pytest.importorskip("torch")
    from soft_envs.agents.nn.train import tip_function

    model = Peter(2)
    tip = tip_function(model)
    t = torch.tensor(model.sample(np.random.default_rng(0), 4), dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(tip, (t,), eps=1e-6, atol=1e-7)


def test_numpy_export_matches_torch_network():
    torch = pytest.importorskip("torch")
    from soft_envs.agents.nn.train import Recipe, build_network, to_neural_ik

    model = Peter(3)
    torch.manual_seed(0)
    net = build_network(3, 9, Recipe(hidden=(32, 16)))
    net.eval()
    x_mean, x_std = np.array([0.0, 0.0, 0.15]), np.array([0.02, 0.02, 0.01])
    neural = to_neural_ik(net, x_mean, x_std, model, {})
    targets = np.random.default_rng(1).normal(x_mean, x_std, size=(64, 3))
    with torch.no_grad():
        y = net(torch.tensor((targets - x_mean) / x_std, dtype=torch.float32)).numpy()
    expected = 1.0 + np.clip(y, -1, 1)  # mid 1 s, half 1 s
    np.testing.assert_allclose(neural.predict(targets), expected, atol=1e-5)


def test_train_tiny_network_end_to_end(tmp_path):
    pytest.importorskip("torch")
    from soft_envs.agents.nn.train import Recipe, train

    model = Peter(2)
    recipe = Recipe(hidden=(32, 32), max_epochs=4, patience=2)
    net, report = train(model, recipe, n_samples=400, seed=1, progress=False)
    assert 1 <= report["epochs"] <= 4
    assert report["history"][-1]["train"] < report["history"][0]["train"] * 1.5
    assert np.isfinite(report["test_tip_error_mm"]["mean"])
    t = net.predict(table1_targets(2, 10, 0)[1])
    assert np.all(t >= 0) and np.all(t <= 2)
    path = tmp_path / "tiny.npz"
    net.save(path)
    assert NeuralIK.load(path).metadata["training"]["recipe"]["hidden"] == [32, 32]


def test_train_ik_command_writes_loadable_weights(tmp_path, capsys):
    pytest.importorskip("torch")
    from soft_envs.cli import main

    out = tmp_path / "peter_2_cli.npz"
    code = main(["train-ik", "--modules", "2", "--samples", "200", "--epochs", "2", "--recipe", "paper",
                 "--output", str(out)])
    assert code == 0
    net = NeuralIK.load(out)
    assert net.metadata["training"]["recipe"]["labels"] == "random"
    assert net.metadata["training"]["recipe"]["dropout"] == 0.3
    assert "test tip error" in capsys.readouterr().out
    assert main(["train-ik", "--modules", "7", "--epochs", "1", "--output", str(out)]) == 2
