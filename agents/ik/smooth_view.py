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


class StrainView(IKView):
    """``model`` (a :class:`~soft_envs.robots.PCCArm`) in the coordinates ``x = (ΔL / L, θ cos φ,
    θ sin φ)`` per segment — the smooth coordinates with each elongation as its strain — for the IK of
    a redundant PCC arm: no singularity at the straight arm (there ``φ`` is undefined and the model's
    Jacobian loses its rank), and a metre of elongation weighs as much in a step's norm as the bend
    that moves the tip as far (a strain of 1 and a bend of 1 rad move the tip ~``L``; in ``ΔL`` [m] the
    minimum-norm step would prefer elongations by 1/``L``: one segment contracted and another stretched
    by millimetres, tens of kPa of common pressure in each, for a lateral millimetre of the tip).
    Bounds: the smooth box's (the bend disk is tighter: a ``x`` outside it is projected onto it,
    :meth:`~soft_envs.robots.PCCArm.project_smooth`, before the body is placed). Tip and backbone [m,
    base frame]; the body's capsules as the model's (an obstacle-aware solve can run in the view)."""

    def __init__(self, model: PCCArm) -> None:
        self.model = model
        #: ``u = x * scale``: the segments' lengths [m] at the elongations, 1 at the bends.
        self.scale = np.ones(model.n_dof)
        self.scale[0::3] = model.segment_lengths
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
