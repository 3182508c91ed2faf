"""One soft arm on the batched core: what :class:`~soft_envs.sim.soft_arm.SoftArmBody`
steps with by default (``backend="batched"``), a batch of one.

:class:`SingleArmCore` holds the arm's :class:`~soft_envs.sim.batched_arm.ArmTopology` and its
:class:`~soft_envs.sim.batched_arm.ArmParams` (``B = 1``) and gives the body the batched core's
terms (``M``, ``C u̇ + G``, ``G``), its fused step
(:func:`~soft_envs.sim.batched_arm.step`: the terms at the start, the predictor, the terms at the
predicted end, the corrector, the new ``c̃``, in one compiled call) and its tip. The body keeps its
own state and its PyBullet body, which it builds, renders and reads the link frames of;
``backend="pybullet"`` takes ``M`` and ``C u̇ + G`` from PyBullet's ``calculateMassMatrix`` /
``calculateInverseDynamics`` instead — the reference the default is held to on whole episodes in
``tests/envs/test_single_core.py``.
"""

from __future__ import annotations

import numpy as np

from soft_envs.robots.chain import Chain
from soft_envs.sim import batched_arm
from soft_envs.sim.batched_arm import ArmParams, ArmState, ArmTopology
from soft_envs.sim.integrator import AlphaParameters
from soft_envs.sim.sections import SectionMap

#: Where a single soft body's dynamics come from.
BACKENDS = ("batched", "pybullet")


class SingleArmCore:
    """The batched core for one arm (module docstring).

    Args:
        chain: the body's chain (before :func:`~soft_envs.sim.sections.spinless_sections`).
        sections: its section map.
        stiffness: ``K``'s diagonal ``(n,)``.
        gravity_in_base: the gravity vector in the arm's base frame [m/s²].
        rayleigh: ``(α [1/s], β [s])``.
    """

    def __init__(self, chain: Chain, sections: SectionMap, stiffness: np.ndarray, gravity_in_base: np.ndarray,
                 rayleigh: tuple[float, float]) -> None:
        self.topology = ArmTopology.from_chain(chain, sections)
        mass, inertia = self.topology.link_dynamics(chain)
        self.params = ArmParams(mass[None].copy(), inertia[None].copy(),
                                np.asarray(gravity_in_base, dtype=float).reshape(1, 3).copy(),
                                np.asarray(stiffness, dtype=float).reshape(1, -1).copy(),
                                np.asarray(rayleigh, dtype=float).reshape(1, 2).copy())

    def set_link_dynamics(self, chain: Chain) -> None:
        """Masses and inertias of ``chain`` (the topology's with other masses)."""
        self.params.mass[0], self.params.inertia[0] = self.topology.link_dynamics(chain)

    def set_gravity(self, gravity_in_base: np.ndarray) -> None:
        self.params.gravity[0] = gravity_in_base

    def _state(self, u, w, a, c, rest, time: float, fresh: bool) -> ArmState:
        return ArmState(np.asarray(u, dtype=float).reshape(1, -1), np.asarray(w, dtype=float).reshape(1, -1),
                        np.asarray(a, dtype=float).reshape(1, -1), np.asarray(c, dtype=float).reshape(1, -1),
                        np.asarray(rest, dtype=float).reshape(1, -1), np.array([time], dtype=float),
                        np.array([fresh]))

    def terms(self, u: np.ndarray, w: np.ndarray | None, c: np.ndarray, stiffness: np.ndarray,
              *, with_mass: bool = True, own: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(M, C u̇ + G, G)`` at ``(u, u̇ = w)`` (``w`` None: at rest), ``θ``'s sign nearest ``c``
        (``own``: ``c`` is ``u``'s own ``c̃``, the body's state)."""
        self.params.stiffness[0] = stiffness
        zero = np.zeros_like(u)
        if not own:
            c = batched_arm.configuration(self.topology, np.asarray(u, dtype=float).reshape(1, -1),
                                          np.asarray(c, dtype=float).reshape(1, -1))[0]
        state = self._state(u, zero if w is None else w, zero, c, zero, 0.0, False)
        M, h, G = batched_arm.terms(self.topology, self.params, state, with_mass=with_mass)
        return M[0], h[0], G[0]

    def step(self, body_state: tuple, stiffness: np.ndarray, dt: float, tau_s: np.ndarray, tau_e: np.ndarray,
             rest_e: np.ndarray, cancel_damping: bool, parameters: AlphaParameters, corrector_passes: int,
             start_terms: tuple[np.ndarray, np.ndarray, np.ndarray] | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The new ``(u, u̇, a, c̃)`` after a step of ``dt`` [s] from ``body_state`` =
        ``(u, w, a, c, rest, fresh)`` (:func:`~soft_envs.sim.batched_arm.step` with ``B = 1``)."""
        u, w, a, c, rest, fresh = body_state
        self.params.stiffness[0] = stiffness
        state = self._state(u, w, a, c, rest, 0.0, fresh)
        start = None if start_terms is None else (start_terms[0][None], start_terms[1][None], start_terms[2][None])
        out = batched_arm.step(self.topology, self.params, state, dt, tau_s[None], torque_end=tau_e[None],
                               rest_end=rest_e[None], cancel_damping=cancel_damping, parameters=parameters,
                               corrector_passes=corrector_passes, start_terms=start, num_threads=1)
        return out.u[0], out.w[0], out.a[0], out.c[0]

    def tip_state(self, u: np.ndarray, w: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The last link's centre of mass, position [m] and velocity [m/s], base frame."""
        zero = np.zeros_like(u)
        position, velocity = batched_arm.point_state(self.topology, self._state(u, w, zero, c, zero, 0.0, False))
        return position[0], velocity[0]
