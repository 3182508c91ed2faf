"""What the network's training and fine-tuning share on PyTorch (the ``learn`` extra): the import
of torch with a clear error when it is missing, and the model's tip as an autograd function."""

from __future__ import annotations

from soft_envs.exceptions import MissingDependencyError
from soft_envs.robots.peter import Peter


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise MissingDependencyError("training needs PyTorch: pip install 'soft_envs[learn]'") from exc
    return torch


def tip_function(model: Peter):
    """A torch autograd function ``t [s] -> tip [m]`` using the model's forward and analytic Jacobian."""
    torch = _torch()

    class Tip(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):  # noqa: D401 - torch signature
            points, jac = model.module_points_jacobian(t.detach().double().numpy())
            ctx.save_for_backward(torch.from_numpy(jac[:, -1]).to(t.dtype))
            return torch.from_numpy(points[:, -1]).to(t.dtype)

        @staticmethod
        def backward(ctx, grad):
            (jac,) = ctx.saved_tensors
            return torch.einsum("bi,bij->bj", grad, jac)

    return Tip.apply
