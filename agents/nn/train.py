"""Training of the neural-network IK (PyTorch; the ``learn`` extra). ``soft-envs train-ik``.

The paper's recipe (García-Samartín et al. 2025, section 3.3): 10 000 samples from the
kinematic model, split 75 / 15 / 10 % (train / validation / test); dense 256-128-64-32 with
GELU, L2 regularisation and 30 % dropout between the dense layers; Nadam, MSE; at most 250
epochs of batches of 32, early stopping after 20 epochs without improvement of the validation
loss (best weights restored). Inputs are standardised, outputs scaled to the actuator bounds
(``y = (t − mid) / half`` in ``[−1, 1]``).

Choices the paper lacks, options here (the shipped networks use them; ``bench nn`` measures
each against the paper's recipe):

* no dropout (``dropout=0``): 30 % dropout keeps the fit at the 0.5 mm level;
* ``labels="branch"``: a redundant arm has many inflation times per target, and a regression
  on the random times that generated each target learns their *average*, which is not a
  solution. The branch labels are instead the solution TRR reaches from the fixed start (the
  middle of the bounds; minimum-norm damped steps), a single-valued smooth map of the target.
* ``forward_weight > 0``: a forward-model loss ``‖x(t_pred) − x_target‖²`` [mm²] through the
  model's own forward kinematics and analytic Jacobian (numpy, wrapped as a torch autograd
  function), so the network is trained on the tip error that is measured, not only on times.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from soft_envs.agents.ik.trust_region import trr_batch
from soft_envs.agents.nn.network import NeuralIK
from soft_envs.agents.nn.torch_parts import _torch, tip_function
from soft_envs.exceptions import InvalidParameterError, check_integer
from soft_envs.robots.peter import Peter

SPLITS = (0.75, 0.15, 0.10)  # train, validation, test (the paper)
MAX_SAMPLES = 10_000_000  # the largest dataset (samples of the model; the shipped networks: 10,000)
MAX_EPOCHS = 100_000  # the most epochs (and patience) of a training
MAX_WIDTH = 65_536  # the most units of a hidden layer
MAX_LAYERS = 64  # the most hidden layers
MAX_BATCH_SIZE = 1 << 20  # the largest batch
MAX_THREADS = 1024  # the most torch threads (soft_envs.sim.threads.MAX_THREADS; agents do not import sim)
LABELS = ("random", "branch")


@dataclass
class Recipe:
    """Network and training hyper-parameters.

    The defaults are the shipped networks' recipe: the paper's architecture, optimiser, batch,
    epochs and early stopping, with TRR-branch labels, the forward-model loss, learning-rate
    decay on plateaus and no dropout (the paper's 30 % dropout costs most of the accuracy of
    a regression this precise; see ``bench nn``). :data:`PAPER_RECIPE` is the paper's.
    ``l2`` is the coefficient of the L2 penalty ``l2 · Σ‖W‖²`` added to the loss (kernels only,
    as Keras' ``kernel_regularizer``); the paper does not give its value. Sizes are bounded:
    ``hidden`` 1 to :data:`MAX_LAYERS` layers of 1 to :data:`MAX_WIDTH` units, ``batch_size`` up to
    :data:`MAX_BATCH_SIZE`, ``max_epochs`` and ``patience`` up to :data:`MAX_EPOCHS`.
    """

    hidden: tuple[int, ...] = (256, 128, 64, 32)
    dropout: float = 0.0
    l2: float = 1e-6
    learning_rate: float = 1e-3
    batch_size: int = 32
    max_epochs: int = 250
    patience: int = 20
    labels: str = "branch"
    forward_weight: float = 1.0
    lr_decay: bool = True

    def __post_init__(self) -> None:
        if self.labels not in LABELS:
            raise InvalidParameterError(f"labels must be one of {LABELS}; got {self.labels!r}")
        if not 0.0 <= self.dropout < 1.0 or self.l2 < 0 or self.forward_weight < 0:
            raise InvalidParameterError("dropout must be in [0, 1), l2 and forward_weight >= 0")
        if self.batch_size < 1 or self.max_epochs < 1 or self.patience < 1 or self.learning_rate <= 0:
            raise InvalidParameterError("batch_size, max_epochs, patience must be >= 1, learning_rate > 0")
        if not 1 <= len(self.hidden) <= MAX_LAYERS:
            raise InvalidParameterError(f"hidden needs 1 to {MAX_LAYERS} layers; got {len(self.hidden)}")
        for width in self.hidden:
            check_integer("hidden width", width, minimum=1, maximum=MAX_WIDTH)
        check_integer("batch_size", self.batch_size, minimum=1, maximum=MAX_BATCH_SIZE)
        check_integer("max_epochs", self.max_epochs, minimum=1, maximum=MAX_EPOCHS)
        check_integer("patience", self.patience, minimum=1, maximum=MAX_EPOCHS)


PAPER_RECIPE = Recipe(dropout=0.3, labels="random", forward_weight=0.0, lr_decay=False)


@dataclass
class Dataset:
    """Targets [m] ``(n, 3)``, labels [s] ``(n, 3N)`` and the train/validation/test index arrays."""

    targets: np.ndarray
    times: np.ndarray
    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray
    info: dict = field(default_factory=dict)


def model_parameters(model: Peter) -> dict:
    """Keyword arguments that rebuild ``model`` (stored in the weights' metadata)."""
    return {"n_modules": model.n_modules, "radius": model.radius, "gap": model.gap,
            "leg_length_at_rest": model.leg_length_at_rest, "leg_rate": model.leg_rate,
            "max_inflation_time": model.max_inflation_time, "kinematics": model.kinematics}


def check_samples(n_samples: int) -> int:
    """A dataset's size: an integer from 20 to :data:`MAX_SAMPLES`, else :class:`InvalidParameterError`."""
    if isinstance(n_samples, float) and n_samples.is_integer():  # (10_000.0 was accepted)
        n_samples = int(n_samples)
    return check_integer("n_samples", n_samples, minimum=20, maximum=MAX_SAMPLES)


def make_dataset(model: Peter, n_samples: int = 10_000, seed: int = 0, labels: str = "branch") -> Dataset:
    """Samples of the kinematic model: tips of uniformly random inflation times, seeded.

    ``labels="random"`` keeps the generating times (the paper); ``"branch"`` relabels each
    target with TRR's solution from the middle of the bounds (see the module docstring).
    """
    if labels not in LABELS:
        raise InvalidParameterError(f"labels must be one of {LABELS}; got {labels!r}")
    check_samples(n_samples)
    rng = np.random.default_rng(seed)
    times = model.sample(rng, int(n_samples))
    targets = model.forward(times)
    info: dict = {"labels": labels}
    if labels == "branch":
        res = trr_batch(model, targets, seed=seed)
        info["label_max_error_m"] = float(res.errors.max())
        times = res.solutions
    order = rng.permutation(len(targets))
    n_train, n_val = int(round(SPLITS[0] * len(order))), int(round(SPLITS[1] * len(order)))
    return Dataset(targets, times, order[:n_train], order[n_train:n_train + n_val], order[n_train + n_val:], info)


# ---------------------------------------------------------------------------- torch parts

def build_network(n_inputs: int, n_outputs: int, recipe: Recipe):
    """The dense network (GELU, tanh form; dropout between the dense layers) as ``torch.nn.Sequential``."""
    torch = _torch()
    layers, width = [], n_inputs
    for k, size in enumerate(recipe.hidden):
        layers += [torch.nn.Linear(width, size), torch.nn.GELU(approximate="tanh")]
        if recipe.dropout > 0 and k < len(recipe.hidden) - 1:
            layers.append(torch.nn.Dropout(recipe.dropout))
        width = size
    layers.append(torch.nn.Linear(width, n_outputs))
    return torch.nn.Sequential(*layers)


def to_neural_ik(net, x_mean, x_std, model: Peter, metadata: dict) -> NeuralIK:
    """Export a trained ``torch.nn.Sequential`` to a numpy :class:`NeuralIK`."""
    torch = _torch()
    weights = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy())
               for m in net if isinstance(m, torch.nn.Linear)]
    return NeuralIK(weights, x_mean, x_std, model.lower, model.upper,
                    dict(metadata, model=model_parameters(model)))


def tip_errors(net: NeuralIK, targets: np.ndarray) -> np.ndarray:
    """Tip errors [m] of the network's predictions on its own model."""
    return np.linalg.norm(net.model.forward(net.predict(targets)) - targets, axis=-1)


def train(
    model: Peter,
    recipe: Recipe = Recipe(),  # noqa: B008 (read, never changed)
    n_samples: int = 10_000,
    seed: int = 0,
    *,
    dataset: Dataset | None = None,
    threads: int | None = 1,
    progress: bool = True,
) -> tuple[NeuralIK, dict]:
    """Train a network for ``model``; returns it (numpy) and a report (losses, test errors, time).

    Args:
        model: the arm (the shipped networks: ``Peter(n)``, tilted-plane kinematics).
        recipe: hyper-parameters (default: the paper's plus branch labels and forward loss).
        n_samples: samples generated when ``dataset`` is not given (20 to :data:`MAX_SAMPLES`).
        seed: seeds the data, the split, the initial weights and the batches.
        dataset: reuse a dataset (e.g. to compare recipes on the same samples).
        threads: ``torch.set_num_threads`` (small batches run best on 1 thread).
        progress: report the epochs (:func:`soft_envs.console.progress`: a bar on a terminal, else
            a line every 30 s).
    """
    torch = _torch()
    from soft_envs.console import progress as progress_bar

    start = time.perf_counter()
    if threads:
        torch.set_num_threads(int(threads))
    torch.manual_seed(seed)
    data = dataset if dataset is not None else make_dataset(model, n_samples, seed, recipe.labels)
    x_mean = data.targets[data.train].mean(axis=0)
    x_std = data.targets[data.train].std(axis=0)
    mid, half = 0.5 * (model.upper + model.lower), 0.5 * (model.upper - model.lower)

    def tensors(idx: np.ndarray):
        x = torch.tensor((data.targets[idx] - x_mean) / x_std, dtype=torch.float32)
        y = torch.tensor((data.times[idx] - mid) / half, dtype=torch.float32)
        target = torch.tensor(data.targets[idx], dtype=torch.float64)
        return x, y, target

    x_tr, y_tr, p_tr = tensors(data.train)
    x_va, y_va, p_va = tensors(data.validation)
    net = build_network(3, model.n_dof, recipe)
    optimizer = torch.optim.NAdam(net.parameters(), lr=recipe.learning_rate)
    scheduler = (torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=8)
                 if recipe.lr_decay else None)
    kernels = [m.weight for m in net if isinstance(m, torch.nn.Linear)]
    tip = tip_function(model)
    mid_t, half_t = torch.tensor(mid), torch.tensor(half)
    mm = 1e3

    def loss_terms(x, y, target):
        out = net(x)
        label = torch.mean((out - y) ** 2)
        if recipe.forward_weight == 0:
            return label, label
        t = mid_t + half_t * torch.clamp(out.double(), -1.0, 1.0)
        fwd = torch.mean(torch.sum(((tip(t) - target) * mm) ** 2, dim=1)).float()
        return label + recipe.forward_weight * fwd, label

    generator = torch.Generator().manual_seed(seed)
    best_state, best_val, best_epoch, history = None, np.inf, -1, []
    bar = progress_bar(range(recipe.max_epochs), desc=f"train-ik {model.n_modules} modules", unit="epochs",
                       leave=False, enabled=progress)
    for epoch in bar:
        net.train()
        order = torch.randperm(len(x_tr), generator=generator)
        total = 0.0
        for k in range(0, len(order), recipe.batch_size):
            idx = order[k:k + recipe.batch_size]
            loss, _ = loss_terms(x_tr[idx], y_tr[idx], p_tr[idx])
            if recipe.l2:
                loss = loss + recipe.l2 * sum(torch.sum(w * w) for w in kernels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(idx)
        net.eval()
        with torch.no_grad():
            val, val_label = loss_terms(x_va, y_va, p_va)
        val = float(val)
        history.append({"epoch": epoch, "train": total / len(order), "validation": val,
                        "validation_label_mse": float(val_label)})
        if scheduler is not None:
            scheduler.step(val)
        if val < best_val:
            best_val, best_epoch = val, epoch
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        bar.set_postfix(val=f"{val:.3g}", best=f"{best_val:.3g}")
        if epoch - best_epoch >= recipe.patience:
            break
    net.load_state_dict(best_state)
    net.eval()
    seconds = time.perf_counter() - start
    report = {
        "recipe": dataclasses.asdict(recipe), "n_samples": int(len(data.targets)), "seed": int(seed),
        "splits": list(SPLITS), "epochs": len(history), "best_epoch": best_epoch,
        "best_validation_loss": best_val, "training_seconds": seconds,
        "threads": threads, "torch": torch.__version__, "dataset": data.info,
    }
    neural = to_neural_ik(net, x_mean, x_std, model, {"training": report})
    errors = tip_errors(neural, data.targets[data.test])
    report["test_tip_error_mm"] = {"mean": float(errors.mean() * 1e3), "median": float(np.median(errors) * 1e3),
                                   "max": float(errors.max() * 1e3), "n": int(len(errors))}
    neural.metadata["training"] = report
    report["history"] = history
    return neural, report


# ---------------------------------------------------------------------------- command line

def recipe_from_args(args: argparse.Namespace) -> Recipe:
    """The recipe chosen on the command line."""
    base = PAPER_RECIPE if getattr(args, "recipe", "ours") == "paper" else Recipe()
    changes = {"max_epochs": args.epochs}
    for name in ("dropout", "forward_weight", "patience"):
        if getattr(args, name, None) is not None:
            changes[name] = getattr(args, name)
    return dataclasses.replace(base, **changes)


def main(args: argparse.Namespace) -> int:
    """``soft-envs train-ik``: train, print the test errors, write the weights file."""
    try:
        model = Peter(args.modules)
        recipe = recipe_from_args(args)
        check_samples(args.samples)  # before anything is computed
        check_integer("threads", getattr(args, "threads", 1), minimum=1, maximum=MAX_THREADS)
    except ValueError as exc:
        print(f"train-ik: {exc}", file=sys.stderr)
        return 2
    output = args.output or f"peter_{args.modules}.npz"
    net, report = train(model, recipe, args.samples, args.seed, threads=getattr(args, "threads", 1))
    net.save(output)
    err = report["test_tip_error_mm"]
    print(f"trained {args.modules}-module network in {report['training_seconds']:.0f} s "
          f"({report['epochs']} epochs, best {report['best_epoch']}); test tip error "
          f"mean {err['mean']:.3f} mm, median {err['median']:.3f} mm, max {err['max']:.3f} mm "
          f"on {err['n']} targets")
    print(f"wrote {os.path.abspath(output)}")
    return 0
