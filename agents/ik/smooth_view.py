"""A PCC arm seen in its smooth coordinates ``u = (ΔL, θ cos φ, θ sin φ)`` per segment: the
configurations a route is planned and paced in where the arm's command moves straight in ``u``
(``PCCTrack-v0``'s and ``PCCReach-v0``'s command ramp, :mod:`soft_envs.envs.pcc_ramp`)
(:class:`SmoothView`); and with the elongations as strains, the coordinates a redundant arm's IK
steps in (:class:`StrainView`)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from soft_envs.agents.ik.result import IKResult
from soft_envs.robots.base import KinematicModel
from soft_envs.robots.pcc_arm import PCCArm


class IKView(KinematicModel):
    """A model seen in other coordinates for its IK (:class:`StrainView`): the kinematic model of those
    coordinates, and the maps to and from the model's configuration."""

    @abstractmethod
    def to_view(self, q: np.ndarray) -> np.ndarray:
        """The view's coordinates of the model's configuration ``q``."""

    @abstractmethod
    def from_view(self, x: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
        """The model's configuration of ``x`` (nearest ``reference`` where it is not unique)."""

    def solve(self, solver: Callable[..., IKResult], target: np.ndarray, q0: np.ndarray | None,
              **options) -> IKResult:
        """``solver(view, target, start, **options)`` (an IK solver: :func:`~soft_envs.agents.ik.trr`,
        :func:`~soft_envs.agents.ik.sqp`) in the view's coordinates, started from the model's ``q0``; the
        result's ``solution`` in the model's (``φ`` continued from ``q0``'s)."""
        result = solver(self, target, None if q0 is None else self.to_view(q0), **options)
        return replace(result, solution=self.from_view(result.solution, reference=q0))


class PCCView(IKView):
    """``model`` (a :class:`~soft_envs.robots.PCCArm`) in the coordinates ``x = u / scale``, ``u = (ΔL,
    θ cos φ, θ sin φ)`` per segment its smooth coordinates (no singularity at the straight arm, where ``φ``
    is undefined and the model's Jacobian loses its rank). Bounds: the smooth box's, scaled (the bend disk
    is tighter: an ``x`` outside it is projected onto it, :meth:`~soft_envs.robots.PCCArm.project_smooth`,
    before the body is placed). Tip and backbone [m, base frame] and their Jacobians in ``x``; the body's
    capsules as the model's (an obstacle-aware solve or a route can run in the view)."""

    def __init__(self, model: PCCArm, scale: np.ndarray) -> None:
        self.model = model
        #: ``u = x * scale`` ``(n,)``.
        self.scale = np.asarray(scale, dtype=float)
        self.lower, self.upper = model.smooth_lower / self.scale, model.smooth_upper / self.scale

    @property
    def reach(self) -> float | None:
        return self.model.reach

    def to_view(self, q: np.ndarray) -> np.ndarray:
        """The view's ``x`` of the model's configuration ``q`` ``(ΔL, θ, φ)`` per segment."""
        return self.model.to_smooth(q) / self.scale

    def from_view(self, x: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
        """The model's configuration of ``x`` (projected onto the bend disk; ``φ`` continued from
        ``reference``'s where a bend vanishes)."""
        return self.model.from_smooth(self.model.project_smooth(np.asarray(x, dtype=float) * self.scale),
                                      reference=reference)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """The tip [m] at ``x`` ``(n,)`` or ``(B, n)``."""
        return self.model.smooth_forward(self.model.project_smooth(np.asarray(x, dtype=float) * self.scale))

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """``∂tip/∂x`` ``(3, n)`` (of the projected ``x``; one configuration)."""
        u = self.model.project_smooth(np.asarray(x, dtype=float) * self.scale)
        return self.model.smooth_kinematics(u)[1] * self.scale

    @property
    def body_radius(self) -> float:
        return self.model.body_radius

    def backbone(self, x: np.ndarray) -> np.ndarray:
        """Backbone points ``(P, 3)`` [m] at ``x``."""
        return self.model.backbone(self.from_view(x))

    def backbone_kinematics(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Backbone points ``(P, 3)`` [m] and ``∂points/∂x`` ``(P, 3, n)``."""
        points, jac = self.model.smooth_backbone_kinematics(self.model.project_smooth(np.asarray(x, dtype=float)
                                                                                       * self.scale))
        return points, jac * self.scale

    def backbone_jacobian(self, x: np.ndarray) -> np.ndarray:
        """``∂points/∂x`` ``(P, 3, n)``."""
        return self.backbone_kinematics(x)[1]


class SmoothView(PCCView):
    """The PCC arm in its smooth coordinates ``u`` themselves (:class:`PCCView` with unit scale): where the
    arm's command moves straight, the coordinates a route is planned and paced in."""

    def __init__(self, model: PCCArm) -> None:
        super().__init__(model, np.ones(model.n_dof))


class StrainView(PCCView):
    """The PCC arm in ``x = (ΔL / L, θ cos φ, θ sin φ)`` per segment — each elongation as its strain —
    for the IK of a redundant PCC arm: a strain of 1 and a bend of 1 rad move the tip about as far (~``L``),
    so a minimum-norm step weighs them alike; in ``ΔL`` [m] it would prefer elongations by 1/``L`` (one
    segment contracted and another stretched by millimetres, tens of kPa of common pressure in each, for
    a lateral millimetre of the tip)."""

    def __init__(self, model: PCCArm) -> None:
        scale = np.ones(model.n_dof)
        scale[0::3] = model.segment_lengths  # the segments' lengths [m] at the elongations
        super().__init__(model, scale)
