"""A PCC arm seen in its smooth coordinates ``u = (ΔL, θ cos φ, θ sin φ)`` per segment: the
configurations a route is planned and paced in where the arm's command moves straight in ``u``
(``PCCTrack-v0``'s and ``PCCReach-v0``'s command ramp, :mod:`soft_envs.envs.pcc_ramp`)."""

from __future__ import annotations

import numpy as np

from soft_envs.robots.pcc_arm import PCCArm


class SmoothView:
    """``model`` (a :class:`~soft_envs.robots.PCCArm`) with ``u`` as its configuration: bounds
    ``smooth_lower``/``smooth_upper`` (the bend disk is the box's inscribed disk: a ``u`` outside it is
    projected onto it, :meth:`~soft_envs.robots.PCCArm.project_smooth`, before the body is placed),
    the tip and the body's backbone [m, base frame] and their Jacobians in ``u``."""

    def __init__(self, model: PCCArm) -> None:
        self.model = model
        self.n_dof = model.n_dof
        self.lower, self.upper = model.smooth_lower, model.smooth_upper

    @property
    def body_radius(self) -> float:
        return self.model.body_radius

    def forward(self, u: np.ndarray) -> np.ndarray:
        """The tip [m] at ``u``."""
        return self.model.smooth_forward(self.model.project_smooth(u))

    def backbone(self, u: np.ndarray) -> np.ndarray:
        """Backbone points ``(P, 3)`` [m] at ``u``."""
        return self.model.backbone(self.model.from_smooth(self.model.project_smooth(u)))

    def backbone_kinematics(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Backbone points ``(P, 3)`` [m] and ``∂points/∂u`` ``(P, 3, n)``."""
        return self.model.smooth_backbone_kinematics(self.model.project_smooth(u))

    def backbone_jacobian(self, u: np.ndarray) -> np.ndarray:
        """``∂points/∂u`` ``(P, 3, n)``."""
        return self.backbone_kinematics(u)[1]
