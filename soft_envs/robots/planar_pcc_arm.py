"""The planar PCC arm (:class:`PlanarPCCArm`): :class:`~soft_envs.robots.pcc_arm.PCCArm` with every
bending plane ``φ = 0``, the paper's 2-D arm with its tip-angle task (seed 004, eq. 3)."""

from __future__ import annotations

import numpy as np

from soft_envs.robots.pcc_arm import PCCArm


class PlanarPCCArm(PCCArm):
    """The 2-D PCC arm: ``φ = 0``; configuration ``(ΔL, θ)`` per segment (``(2N,)`` or ``(B, 2N)``).

    The arm moves in the ``x–z`` plane (``forward`` returns ``(x, 0, z)``); ``θ`` is signed
    (positive bends towards ``+x``). :meth:`tip_angle` is the signed tip direction ``Σ θ_i``
    measured from ``z`` (the paper's eq. 3 secondary task).
    """

    per_segment = 2
    planar = True

    def _segment_bounds(self):
        def lo(i: int) -> np.ndarray:
            return np.array([-self.elongation * self.segment_lengths[i], -self.max_bend])

        def hi(i: int) -> np.ndarray:
            return np.array([self.elongation * self.segment_lengths[i], self.max_bend])
        return lo, hi

    def _embed(self, c: np.ndarray) -> np.ndarray:
        s = c.reshape(*c.shape[:-1], self.n_segments, 2)
        full = np.concatenate((s, np.zeros(s.shape[:-1] + (1,))), axis=-1)
        return full.reshape(c.shape[:-1] + (3 * self.n_segments,))

    def _config_embedding(self) -> np.ndarray:
        emb = np.zeros((3 * self.n_segments, 2 * self.n_segments))
        for i in range(self.n_segments):
            emb[3 * i, 2 * i] = emb[3 * i + 1, 2 * i + 1] = 1.0
        return emb

    def _smooth_from_config(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return super()._smooth_from_config(self._embed(c))

    def _reduce_jacobian(self, jac: np.ndarray) -> np.ndarray:
        keep = np.sort(np.concatenate((np.arange(self.n_segments) * 3, np.arange(self.n_segments) * 3 + 1)))
        return jac[..., keep]

    def to_smooth(self, c: np.ndarray) -> np.ndarray:
        """Planar configurations are already smooth (``θ`` signed, no ``φ``): returns a copy."""
        return np.array(self.check_configuration(c), dtype=float)

    def from_smooth(self, u: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
        return np.array(u, dtype=float)

    @property
    def smooth_lower(self) -> np.ndarray:
        return self.lower.copy()

    @property
    def smooth_upper(self) -> np.ndarray:
        return self.upper.copy()

    def project_smooth(self, u: np.ndarray) -> np.ndarray:
        return np.clip(u, self.lower, self.upper)

    def smooth_constraint(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(0), np.zeros((0, self.n_dof))

    def smooth_kinematics(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tip, jac = PCCArm.smooth_kinematics(self, self._embed(np.asarray(u, dtype=float)))
        return tip, self._reduce_jacobian(jac)

    def smooth_forward(self, u: np.ndarray) -> np.ndarray:
        return self.forward(u)

    def arc_tip(self, c: np.ndarray) -> np.ndarray:
        return PCCArm.arc_tip(self._as_3d(), self._embed(self.check_configuration(c)))

    def link_points(self, c: np.ndarray) -> np.ndarray:
        return PCCArm.link_points(self._as_3d(), self._embed(self.check_configuration(c)))

    def smooth_backbone_kinematics(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The planar configuration is already smooth: :meth:`backbone_kinematics`."""
        return self.backbone_kinematics(u)

    def _as_3d(self) -> PCCArm:
        return PCCArm(self.n_segments, self.links_per_segment, self.segment_lengths.copy(), **self._parameters())

    def pcc_state(self, c: np.ndarray) -> np.ndarray:
        """``(ε, κ)`` per segment (``κ = θ / (L + ΔL)`` [1/m]), shape like ``c``."""
        c = self.check_configuration(c)
        s = c.reshape(*c.shape[:-1], self.n_segments, 2)
        out = np.stack((s[..., 0] / self.segment_lengths, s[..., 1] / (self.segment_lengths + s[..., 0])), axis=-1)
        return out.reshape(c.shape)

    def tip_angle(self, c: np.ndarray) -> np.ndarray:
        """Signed tip direction ``Σ θ_i`` from the base ``z`` axis towards ``+x`` [rad]."""
        c = self.check_configuration(c)
        return c[..., 1::2].sum(axis=-1)

    def tip_angle_gradient(self, c: np.ndarray | None = None) -> np.ndarray:
        """``d tip_angle / d c`` (constant), ``(2N,)``."""
        g = np.zeros(self.n_dof)
        g[1::2] = 1.0
        return g

    def stiffness(self) -> np.ndarray:
        return super().stiffness()[:, :2]
