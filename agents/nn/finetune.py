"""Fine-tuning the network IK on a robot's own samples (PyTorch; the ``learn`` extra).

:meth:`NeuralIK.finetune <soft_envs.agents.nn.NeuralIK.finetune>` adapts a trained network to
``(inflation times, measured tip)`` samples of one robot (:func:`~soft_envs.agents.nn.collect_samples`).
Regressing the times on the tips directly would average between the redundant arm's many
solutions of a tip (the samples' times are random, not one branch), so it learns in two steps,
Jordan and Rumelhart's *distal teacher* (Cognitive Science 16, 1992):

1. **a forward model of the robot**: the network's own kinematic model plus a learned residual,
   ``x̂(t) = f(t) + r(t)``, ``r`` a small dense network fitted to ``x − f(t)`` (MSE, L2
   regularised, early stopping on a validation share of the samples);
2. **the inverse network through it**: starting from the given weights, minimise the tip error
   ``‖x̂(net(x)) − x‖²`` [mm²] over targets ``x`` — the measured tips and, because a hundred
   samples are too few targets, tips of the forward model at random times — plus a small anchor
   ``‖net(x) − net₀(x)‖²`` that keeps the network on its own branch of solutions (the shipped
   network's: TRR's from the middle of the bounds). ``f``'s gradient is its analytic Jacobian.

Inference stays numpy (the result is a plain :class:`~soft_envs.agents.nn.NeuralIK`); the
recipe and its figures are in the new network's ``metadata["finetune"]``. Use its prediction
as it is (``NeuralReachAgent(env, net, refine=False)``): the hybrid's TRR refinement runs on the
kinematic model, which is not the robot, and would undo what the network learnt.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from soft_envs.clock import now
from soft_envs.exceptions import InvalidParameterError

MM = 1e3  # losses in mm² (the scale the errors are judged at)


@dataclass(frozen=True)
class FinetuneRecipe:
    """Hyper-parameters of :meth:`NeuralIK.finetune` (choices of this package, module docstring).

    ``residual_hidden``/``residual_l2``/``residual_epochs``: the forward model's residual network
    (GELU layers), its L2 coefficient and epoch cap (early stopping after ``patience`` epochs
    without a better validation loss); ``validation``: the share of samples held out for it.
    ``epochs``: passes of the inverse network over ``targets`` targets (the samples' tips and
    forward-model tips of random times); ``anchor_weight``: weight of the anchor on the original
    network's (normalised) outputs; ``learning_rate``, ``batch_size``: both stages' (NAdam).
    """

    residual_hidden: tuple[int, ...] = (64, 64)
    residual_l2: float = 1e-4
    residual_epochs: int = 500
    patience: int = 40
    validation: float = 0.15
    epochs: int = 30
    targets: int = 4000
    anchor_weight: float = 1e-3
    learning_rate: float = 1e-3
    batch_size: int = 64

    def __post_init__(self) -> None:
        if not 0.0 < self.validation < 0.5:
            raise InvalidParameterError(f"validation must be in (0, 0.5); got {self.validation!r}")
        if min(self.residual_epochs, self.patience, self.epochs, self.targets, self.batch_size) < 1:
            raise InvalidParameterError("epochs, patience, targets and batch_size must be >= 1")
        if self.residual_l2 < 0 or self.anchor_weight < 0 or self.learning_rate <= 0:
            raise InvalidParameterError("residual_l2 and anchor_weight must be >= 0, learning_rate > 0")


def _torch():
    from soft_envs.agents.nn.torch_parts import _torch as torch_module

    return torch_module()


def _dense(torch, sizes: list[int], final_scale: float = 1.0):
    layers = []
    for k in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[k], sizes[k + 1]))
        if k < len(sizes) - 2:
            layers.append(torch.nn.GELU(approximate="tanh"))
    net = torch.nn.Sequential(*layers).double()
    with torch.no_grad():  # start from a zero residual
        net[-1].weight.mul_(final_scale)
        net[-1].bias.zero_()
    return net


def _fit_residual(torch, times: np.ndarray, residual_mm: np.ndarray, mid: np.ndarray, half: np.ndarray,
                  recipe: FinetuneRecipe, seed: int, progress: bool):
    """Fit ``r(t)`` [mm] to the residuals; returns the network (on normalised times) and a report."""
    from soft_envs.console import progress as progress_bar

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(times))
    n_val = max(1, int(round(recipe.validation * len(times))))
    val, train = order[:n_val], order[n_val:]
    u = torch.tensor((times - mid) / half)
    y = torch.tensor(residual_mm)
    scale = float(np.sqrt(np.mean(residual_mm[train] ** 2))) or 1.0
    net = _dense(torch, [times.shape[1], *recipe.residual_hidden, 3], final_scale=0.1)
    optimizer = torch.optim.NAdam(net.parameters(), lr=3.0 * recipe.learning_rate)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=recipe.patience // 4)
    kernels = [m.weight for m in net if isinstance(m, torch.nn.Linear)]
    generator = torch.Generator().manual_seed(seed)
    best, best_val, best_epoch = None, np.inf, -1
    bar = progress_bar(range(recipe.residual_epochs), enabled=progress, desc="finetune: forward model", leave=False)
    for epoch in bar:
        net.train()
        perm = torch.from_numpy(train)[torch.randperm(len(train), generator=generator)]
        for k in range(0, len(perm), recipe.batch_size):
            idx = perm[k:k + recipe.batch_size]
            loss = torch.mean((scale * net(u[idx]) - y[idx]) ** 2) / scale**2
            loss = loss + recipe.residual_l2 * sum(torch.sum(w * w) for w in kernels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        net.eval()
        with torch.no_grad():
            val_loss = float(torch.mean(torch.sum((scale * net(u[val]) - y[val]) ** 2, dim=1)))
        scheduler.step(val_loss)
        if val_loss < best_val:
            best_val, best_epoch = val_loss, epoch
            best = {k: v.detach().clone() for k, v in net.state_dict().items()}
        bar.set_postfix(val_mm=f"{np.sqrt(val_loss):.3f}")
        if epoch - best_epoch >= recipe.patience:
            break
    net.load_state_dict(best)
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)

    def residual(t):  # torch tensor [s] -> [mm]
        return scale * net((t - torch.from_numpy(mid)) / torch.from_numpy(half))

    return residual, {"residual_validation_rms_mm": float(np.sqrt(best_val)), "residual_epochs": best_epoch + 1,
                      "residual_rms_mm": float(np.sqrt(np.mean(residual_mm**2))), "validation_samples": int(n_val)}


def finetune(network: Any, times: np.ndarray, tips: np.ndarray, *, seed: int = 0,
             recipe: FinetuneRecipe | None = None, threads: int | None = 1, progress: bool = True) -> Any:
    """A new network fine-tuned from ``network`` on a robot's samples (module docstring).

    Args:
        network: the starting network (its weights are not changed).
        times: commanded inflation times ``(n, 3N)`` [s], ``n >= 10``.
        tips: the measured tips ``(n, 3)`` [m] (the frame the network's targets are in).
        seed: seeds the split, the initial residual weights, the targets and the batches.
        recipe: hyper-parameters (default :class:`FinetuneRecipe`).
        threads: ``torch.set_num_threads`` (small batches run best on one).
        progress: progress bars (:func:`soft_envs.console.progress`: a bar on a terminal, else a line every 30 s).
    """
    from soft_envs.agents.nn.torch_parts import tip_function
    from soft_envs.console import progress as progress_bar

    recipe = recipe or FinetuneRecipe()
    model = network.model
    times = model.check_configuration(times)
    tips = np.asarray(tips, dtype=float)
    if times.ndim != 2 or times.shape[0] < 10:
        raise InvalidParameterError(f"finetune needs at least 10 samples (n, {model.n_dof}) of times; "
                                    f"got shape {times.shape}")
    if tips.shape != (times.shape[0], 3) or not np.all(np.isfinite(tips)):
        raise InvalidParameterError(f"tips must be finite, of shape ({times.shape[0]}, 3) [m]; got {tips.shape}")
    if np.max(np.abs(tips)) > 10.0 * model.reach:
        raise InvalidParameterError("tips are in metres (millimetres given?)")
    torch = _torch()
    start = now()
    if threads:
        torch.set_num_threads(int(threads))
    torch.manual_seed(seed)
    mid, half = 0.5 * (model.upper + model.lower), 0.5 * (model.upper - model.lower)
    residual, report = _fit_residual(torch, times, (tips - model.forward(times)) * MM, mid, half, recipe, seed,
                                     progress)
    tip = tip_function(model)

    def forward_mm(t):  # torch [s] -> the robot's tip [mm], differentiable
        return tip(t) * MM + residual(t)

    rng = np.random.default_rng(seed + 1)
    n_extra = max(0, recipe.targets - len(tips))
    with torch.no_grad():
        synthetic = forward_mm(torch.tensor(model.sample(rng, n_extra))).numpy() / MM if n_extra else np.empty((0, 3))
    targets = np.concatenate((tips, synthetic))
    x_std = torch.tensor((targets - network.x_mean) / network.x_std)
    target_mm = torch.tensor(targets * MM)
    layers = [torch.nn.Linear(W.shape[0], W.shape[1]) for W, _ in network.weights]
    for layer, (W, b) in zip(layers, network.weights, strict=True):
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(W.T.astype(np.float64)))
            layer.bias.copy_(torch.from_numpy(b.astype(np.float64)))
    modules = []
    for k, layer in enumerate(layers):
        modules.append(layer)
        if k < len(layers) - 1:
            modules.append(torch.nn.GELU(approximate="tanh"))
    net = torch.nn.Sequential(*modules).double()
    with torch.no_grad():
        anchor = net(x_std).clone()
    mid_t, half_t = torch.from_numpy(mid), torch.from_numpy(half)

    def tip_error_mm2(x, target):
        out = net(x)
        return torch.sum((forward_mm(mid_t + half_t * torch.clamp(out, -1.0, 1.0)) - target) ** 2, dim=1), out

    with torch.no_grad():
        before = float(torch.mean(torch.sqrt(tip_error_mm2(x_std, target_mm)[0])))
    optimizer = torch.optim.NAdam(net.parameters(), lr=recipe.learning_rate)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=recipe.epochs)
    generator = torch.Generator().manual_seed(seed)
    bar = progress_bar(range(recipe.epochs), enabled=progress, desc="finetune: network", leave=False)
    for _ in bar:
        net.train()
        perm = torch.randperm(len(targets), generator=generator)
        total = 0.0
        for k in range(0, len(perm), recipe.batch_size):
            idx = perm[k:k + recipe.batch_size]
            err, out = tip_error_mm2(x_std[idx], target_mm[idx])
            loss = torch.mean(err) + recipe.anchor_weight * torch.mean(torch.sum((out - anchor[idx]) ** 2, dim=1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(idx)
        scheduler.step()
        bar.set_postfix(loss=f"{total / len(perm):.3g}")
    net.eval()
    with torch.no_grad():
        after = float(torch.mean(torch.sqrt(tip_error_mm2(x_std, target_mm)[0])))
    weights = [(m.weight.detach().numpy().T.astype(np.float32), m.bias.detach().numpy().astype(np.float32))
               for m in net if isinstance(m, torch.nn.Linear)]
    report |= {"samples": int(len(tips)), "seed": int(seed), "recipe": dataclasses.asdict(recipe),
               "forward_model_tip_error_mm": {"before": before, "after": after},
               "seconds": now() - start, "torch": torch.__version__}
    metadata = dict(network.metadata, finetune=report)
    # the network's own class (this module does not import the network module, which calls it)
    return type(network)(weights, network.x_mean, network.x_std, network.t_low, network.t_high, metadata)


__all__ = ["FinetuneRecipe", "finetune"]
