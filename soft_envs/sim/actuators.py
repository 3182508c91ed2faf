"""Pneumatic actuators of the soft arms — PETER's legs that fill at a rate, the PCC arm's pressure
regulators, and the command delay both can have — and the PCC arm's PD + feed-forward law, for
``B`` arms at once (the single envs are ``B = 1``: one implementation), each arm with its
own parameters (fill and vent rates, gains, offsets, leaks, regulator lag and dead time — what
``realism=`` draws) and its own clock.

:class:`BatchedPneumaticLegs` (PETER, seed 000 eq. 1). The paper's input is an inflation time ``t``
[s] per leg and a leg inflated for ``t`` has the length ``l(t) = l₀ + v t`` (``v = 10 mm/s``):
the leg *grows at 10 mm/s while its valve is open*. Here a command ``t_cmd`` is a target
length ``l(t_cmd)`` and every leg's rest length moves towards it at the fill rate ``v`` when
it must grow and at a venting rate when it must shorten (an assumption — the paper measured
filling only; default 10 mm/s, never slower than 5 mm/s unless asked for), so a 0 → 2 s
command takes 2 s. ``instant=True`` puts the rest lengths on the target at once.

Imperfect legs (``set_imperfections``, the sim-to-real options): the valves
still open for the times the nominal law asks, but each leg's length changes by ``gain`` times
the nominal change, starts ``offset`` longer than ``l₀`` and, while inflated, loses length at
``leak_rate`` (a held leg drifts shorter; the open-loop valve timing does not notice). The
nominal progress (``lengths``) is what the valve timing follows; the legs' true rest lengths are
``actual_lengths``.

:class:`BatchedPressureRegulator` (PCC arm, seed 004 section 4). Each chamber's pressure follows its
set-point (clipped into the bounds) as a first-order lag of time constant ``time_constant``
(default 10 ms, an assumption for a piezo regulator and short tubing; 0 = ideal), after a
dead time ``delay`` (the paper's regulators: "a 100–150 ms delay"; default 0, 0.125 s is the
paper's setting).

:class:`BatchedDeadTime` delays a command by a fixed time per arm (quantised to the caller's steps: a
command given at ``t`` acts from the first step starting at or after ``t + delay``, with a ``1e-9`` s
tolerance); it keeps each arm's pending commands in a small queue (grown when needed) and releases,
at ``at(now)``, the latest one due. Every quantity is a ``(B, …)`` array; times ``now`` are ``(B,)``
(every arm keeps its own time, reset by index).

:class:`BatchedPDFeedforward`: :class:`~soft_envs.sim.pcc_body.PDFeedforward` (the paper's law)
for ``B`` arms.
"""

from __future__ import annotations

import numpy as np

from soft_envs.exceptions import InvalidParameterError
from soft_envs.robots.pcc_arm import PCCArm
from soft_envs.sim.batched_types import _rows

MIN_VENT_RATE = 5e-3  # m/s: the lowest venting rate accepted without ``allow_slow_venting``
ROW_BY_ROW = 16  # arms up to which the law's tip Jacobian is taken arm by arm (measured: faster)


def _per_arm(value, B: int, name: str, *, positive: bool = False) -> np.ndarray:
    v = np.array(np.broadcast_to(np.asarray(value, dtype=float), (B,)))
    if not np.all(np.isfinite(v)) or np.any(v <= 0 if positive else v < 0):
        raise InvalidParameterError(f"{name} must be {'> 0' if positive else '>= 0'} and finite; got {value!r}")
    return v


class BatchedDeadTime:
    """Commands ``(B, n)`` that act ``delay`` ``(B,)`` [s] after they are given (module docstring)."""

    EPS = 1e-9

    def __init__(self, delay: float | np.ndarray, initial: np.ndarray) -> None:
        initial = np.asarray(initial, dtype=float)
        B, n = initial.shape
        self.delay = _per_arm(delay, B, "delay")
        self.current = initial.copy()
        self._values = np.zeros((B, 4, n))
        self._due = np.full((B, 4), np.inf)
        self._order = np.zeros((B, 4), dtype=np.int64)
        self._count = 0

    def set_delay(self, index, delay) -> None:
        """The dead time [s] of the arms ``index`` (their pending commands are dropped)."""
        rows = _rows(index, self.current.shape[0])
        self.delay[rows] = _per_arm(delay, rows.size, "delay")
        self._due[rows] = np.inf

    def reset(self, index, value: np.ndarray) -> None:
        """Forget the arms' pending commands; ``value`` acts now."""
        rows = _rows(index, self.current.shape[0])
        self.current[rows] = value
        self._due[rows] = np.inf

    def give(self, value: np.ndarray, now: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Command ``value`` ``(B, n)`` at times ``now`` ``(B,)`` [s] (to the arms in ``mask``)."""
        B = self.current.shape[0]
        mask = np.ones(B, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        value = np.asarray(value, dtype=float)
        at_once = mask & (self.delay == 0.0)
        self.current[at_once] = value[at_once]
        later = np.flatnonzero(mask & (self.delay != 0.0))
        if later.size == 0:
            return
        free = np.isinf(self._due[later])
        if not free.any(axis=1).all():
            self._grow()
            free = np.isinf(self._due[later])
        slot = free.argmax(axis=1)
        self._values[later, slot] = value[later]
        self._due[later, slot] = np.asarray(now, dtype=float)[later] + self.delay[later]
        self._count += 1
        self._order[later, slot] = self._count

    @property
    def queue(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The arrays the compiled periods (:mod:`soft_envs.sim.period_kernels`) advance in place: the
        acting commands ``(B, n)``, the pending ones ``(B, q, n)``, when they are due ``(B, q)`` [s] (``inf``:
        a free slot) and the order they were given in ``(B, q)``."""
        return self.current, self._values, self._due, self._order

    def reserve(self, commands: int) -> int:
        """Room for ``commands`` more pending commands of every arm (the queue grown as :meth:`give`
        grows it); returns the order the first of them takes (the next ones: +1 each, :meth:`took`)."""
        while self._due.shape[1] - int(np.isfinite(self._due).sum(axis=1).max(initial=0)) < commands:
            self._grow()
        return self._count + 1

    def took(self, commands: int) -> None:
        """``commands`` orders were given out since :meth:`reserve`."""
        self._count += int(commands)

    def _grow(self) -> None:
        B, q, n = self._values.shape
        self._values = np.concatenate((self._values, np.zeros((B, q, n))), axis=1)
        self._due = np.concatenate((self._due, np.full((B, q), np.inf)), axis=1)
        self._order = np.concatenate((self._order, np.zeros((B, q), dtype=np.int64)), axis=1)

    def at(self, now: np.ndarray) -> np.ndarray:
        """The commands acting at times ``now`` ``(B,)`` [s], ``(B, n)``."""
        due = self._due <= np.asarray(now, dtype=float)[:, None] + self.EPS
        arms = np.flatnonzero(due.any(axis=1))
        if arms.size:
            order = np.where(due[arms], self._order[arms], -1)
            latest = order.argmax(axis=1)
            self.current[arms] = self._values[arms, latest]
            self._due[arms] = np.where(due[arms], np.inf, self._due[arms])
        return self.current


class BatchedPneumaticLegs:
    """PETER's legs for ``B`` arms (module docstring; the single env runs ``B = 1``).

    Args:
        n_arms, n_legs: ``B`` and legs per arm (``3N``).
        rest_length: leg length at zero inflation [m] (eq. 1).
        fill_rate: growth rate while filling [m/s] (eq. 1; the inflation-time scale).
        vent_rate: shortening rate while venting [m/s], a number or ``(B,)``.
        delay: command delay [s], a number or ``(B,)``.
        instant: rest lengths jump to their targets.
        allow_slow_venting: accept vent rates below 5 mm/s.

    State: :attr:`lengths` ``(B, 3N)`` [m] (nominal progress) and :attr:`actual_lengths`.
    """

    def __init__(self, n_arms: int, n_legs: int, *, rest_length: float, fill_rate: float,
                 vent_rate: float | np.ndarray = 0.010, delay: float | np.ndarray = 0.0, instant: bool = False,
                 allow_slow_venting: bool = False) -> None:
        B = int(n_arms)
        self.rest_length = float(rest_length)
        self.fill_rate = float(_per_arm(fill_rate, 1, "fill_rate", positive=True)[0])
        self.vent_rate = _per_arm(vent_rate, B, "vent_rate", positive=True)
        if np.any(self.vent_rate < MIN_VENT_RATE) and not allow_slow_venting:
            raise InvalidParameterError(f"vent_rate below {MIN_VENT_RATE * 1e3:g} mm/s needs allow_slow_venting=True")
        self.instant = bool(instant)
        self.lengths = np.full((B, int(n_legs)), self.rest_length)
        self.command_delay = BatchedDeadTime(delay, self.lengths)
        self.gain = np.ones_like(self.lengths)
        self.offset = np.zeros_like(self.lengths)
        self.leak_rate = np.zeros_like(self.lengths)
        self.perfect = np.ones(B, dtype=bool)
        self._extension = np.zeros_like(self.lengths)

    def set_imperfections(self, index, gain: np.ndarray, offset: np.ndarray, leak_rate: np.ndarray) -> None:
        """Per-leg gains [1], offsets [m] and leak rates [m/s] of the arms ``index`` (take effect at
        their next :meth:`reset`)."""
        rows = _rows(index, self.lengths.shape[0])
        shape = (rows.size, self.lengths.shape[1])
        values = [np.broadcast_to(np.asarray(v, dtype=float), shape) for v in (gain, offset, leak_rate)]
        if not all(np.all(np.isfinite(v)) for v in values) or np.any(values[0] <= 0) or np.any(values[2] < 0):
            raise InvalidParameterError("leg gains must be > 0, leak rates >= 0 [m/s], all finite")
        self.gain[rows], self.offset[rows], self.leak_rate[rows] = values
        self.perfect[rows] = (np.all(values[0] == 1.0, axis=1) & ~np.any(values[1], axis=1)
                              & ~np.any(values[2], axis=1))

    def set_delay(self, index, delay) -> None:
        """Command delay [s] of the arms ``index`` (pending commands dropped; reset them next)."""
        self.command_delay.set_delay(index, delay)

    @property
    def delay(self) -> np.ndarray:
        return self.command_delay.delay

    @property
    def extension(self) -> np.ndarray:
        """The imperfect legs' extension beyond ``rest_length + offset`` ``(B, 3N)`` [m] (their true
        rest lengths; advanced in place by the compiled periods, :mod:`soft_envs.sim.period_kernels`)."""
        return self._extension

    @property
    def actual_lengths(self) -> np.ndarray:
        """The legs' true rest lengths ``(B, 3N)`` [m]."""
        return np.where(self.perfect[:, None], self.lengths, self.rest_length + self.offset + self._extension)

    @property
    def inflation(self) -> np.ndarray:
        """The legs' true state as inflation times ``(B, 3N)`` [s]."""
        return (self.actual_lengths - self.rest_length) / self.fill_rate

    def length_of(self, t: np.ndarray) -> np.ndarray:
        """Eq. 1: ``l(t) = l₀ + v t`` [m]."""
        return self.rest_length + self.fill_rate * np.asarray(t, dtype=float)

    def reset(self, index, t: np.ndarray) -> None:
        """The arms' legs at rest at the lengths of inflation times ``t`` [s]; no pending command."""
        rows = _rows(index, self.lengths.shape[0])
        self.lengths[rows] = self.length_of(np.broadcast_to(t, (rows.size, self.lengths.shape[1])))
        self.command_delay.reset(rows, self.lengths[rows])
        self._extension[rows] = self.gain[rows] * (self.lengths[rows] - self.rest_length)

    def command(self, t: np.ndarray, now: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Command inflation times ``t`` ``(B, 3N)`` [s] at times ``now`` ``(B,)`` [s]."""
        self.command_delay.give(self.length_of(t), now, mask)

    def advance(self, dt: float, now: np.ndarray) -> np.ndarray:
        """Rest lengths ``(B, 3N)`` [m] at ``now + dt`` (the target acting at ``now``: fill at
        ``fill_rate``, vent at ``vent_rate``)."""
        target = self.command_delay.at(now)
        if self.instant:
            change = target - self.lengths
            self.lengths = target.copy()
        else:
            change = np.clip(target - self.lengths, (-self.vent_rate * dt)[:, None], self.fill_rate * dt)
            self.lengths = self.lengths + change
        if not self.perfect.all():
            self._extension = np.maximum(self._extension + self.gain * change - self.leak_rate * dt, 0.0)
        return self.actual_lengths


class BatchedPressureRegulator:
    """Chamber pressures ``(B, n)`` [Pa] of ``B`` arms (module docstring): bounded set-points through a
    first-order lag ``time_constant`` ``(B,)`` [s] after a dead time ``delay`` ``(B,)`` [s].
    :attr:`saturated` ``(B,)``: the last set-point was clipped."""

    def __init__(self, n_arms: int, n: int, *, max_pressure: float, time_constant: float | np.ndarray = 0.01,
                 delay: float | np.ndarray = 0.0) -> None:
        B = int(n_arms)
        if not np.isfinite(max_pressure) or max_pressure <= 0:
            raise InvalidParameterError(f"max_pressure must be > 0 Pa; got {max_pressure!r}")
        self.max_pressure = float(max_pressure)
        self.time_constant = _per_arm(time_constant, B, "time_constant")
        self.pressures = np.zeros((B, int(n)))
        self.saturated = np.zeros(B, dtype=bool)
        self.setpoint = BatchedDeadTime(delay, self.pressures)

    def set_delay(self, index, delay) -> None:
        """Dead time [s] of the arms ``index`` (pending set-points dropped; reset them next)."""
        self.setpoint.set_delay(index, delay)

    @property
    def delay(self) -> np.ndarray:
        """Each arm's dead time ``(B,)`` [s]."""
        return self.setpoint.delay

    def reset(self, index, pressures: np.ndarray) -> None:
        """The arms' pressures at ``pressures`` [Pa] (clipped), held; no pending set-point."""
        rows = _rows(index, self.pressures.shape[0])
        p = np.clip(np.broadcast_to(np.asarray(pressures, dtype=float), (rows.size, self.pressures.shape[1])),
                    -self.max_pressure, self.max_pressure)
        self.pressures[rows] = p
        self.setpoint.reset(rows, p)

    def command(self, setpoint: np.ndarray, now: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Set-points ``(B, n)`` [Pa] given at ``now`` ``(B,)`` [s] to the arms in ``mask``, clipped."""
        setpoint = np.asarray(setpoint, dtype=float)
        clipped = np.clip(setpoint, -self.max_pressure, self.max_pressure)
        mask = np.ones(setpoint.shape[0], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        self.saturated = np.where(mask, np.any(clipped != setpoint, axis=1), self.saturated)
        self.setpoint.give(clipped, now, mask)

    def acting(self, now: np.ndarray) -> np.ndarray:
        """Pressures ``(B, n)`` [Pa] at the start of the step from ``now`` ``(B,)`` [s]: :attr:`pressures`,
        or for arms with no lag the set-point acting at ``now`` (the dead time's)."""
        lagged = self.time_constant > 0.0
        if lagged.all():
            return self.pressures
        return np.where(lagged[:, None], self.pressures, self.setpoint.at(now))

    def advance(self, dt: float, now: np.ndarray) -> np.ndarray:
        """Pressures ``(B, n)`` [Pa] at ``now + dt`` (exact response to the set-points acting at ``now``)."""
        target = self.setpoint.at(now)
        lagged = self.time_constant > 0.0
        decay = np.exp(-dt / np.where(lagged, self.time_constant, 1.0))[:, None]
        self.pressures = np.where(lagged[:, None], target + (self.pressures - target) * decay, target)
        return self.pressures


#: The delayed feedback's worst-case negative damping of the arm's first mode, as a fraction of the arm's own
#: (:func:`delay_robust_gains`).
DELAY_DAMPING_MARGIN = 0.5


def delay_robust_gains(mass: np.ndarray, stiffness: np.ndarray, beta: float, kp: float, kv: float,
                       margin: float = DELAY_DAMPING_MARGIN) -> tuple[float, float, float]:
    """The PD + feed-forward law's gains ``(kp, kv)`` scaled for actuation behind a dead time of *any*
    length, and the arm's first mode ``ω₁`` [rad/s] (``mass`` ``M``, ``stiffness`` the one the mode is
    taken on — ``K``, or the linearised ``K + ∂G/∂u`` —, Rayleigh ``D = β K``).

    The law's feedback ``M (−kv q̇ − kp Δq)`` acts on every mode of unit modal mass as ``−kv ẋ − kp x``;
    arriving a dead time ``τ`` late it adds ``(kv cos ωτ − kp sin(ωτ)/ω) ẋ`` of damping to a mode ``ω``
    (first order), as little as ``−(kv + kp/ω)``: at the chambers' 0.1-0.15 s and the hanging
    three-segment arm's first bending mode (15.7 rad/s, ``ωτ ≈ 2``) the paper's gains give −4.5 +
    (−1.5) against the arm's own ``β ω₁² = 1.2`` — the mode grows (linearised: +1.6/s at 0.125 s).
    The damping a dead time cannot pass is not the law's to cancel (``compensate_damping`` off), and
    ``(kp, kv)`` are scaled by one factor (at most 1) so that ``kv + kp/ω₁ ≤ margin · β ω₁²``: the
    delayed feedback then takes at most ``margin`` of the arm's own damping of its first mode whatever
    the delay (higher modes: ``β ω²`` grows as ``ω²``). The feed-forward ``K(q_d) + G(q_d)`` holds the
    set-point; the feedback only corrects the model's errors, against a stiffness (``K + ∂G/∂u``, ``ω₁²``
    per unit modal mass) far above ``kp`` on the soft arm."""
    w2 = np.linalg.eigvals(np.linalg.solve(mass, stiffness)).real
    w1 = float(np.sqrt(max(w2.min(), 1e-12)))
    need = kv + kp / w1
    scale = 1.0 if need <= 0.0 else min(1.0, margin * beta * w1 * w1 / need)
    return kp * scale, kv * scale, w1


class BatchedPDFeedforward:
    """The paper's PD + feed-forward law for ``B`` PCC arms (:class:`~soft_envs.sim.pcc_body.PDFeedforward`
    batched; the same arguments, shared by the batch). The body's per-arm payload minus
    ``known_payload`` is the unknown tip mass the law's model leaves out."""

    def __init__(self, model: PCCArm, kp: float = 80.0, kv: float = 3.0, *, compensate_damping: bool = True,
                 stiffness_error: float = 0.0, known_payload: float = 0.0) -> None:
        from soft_envs.sim.pcc_body import PDFeedforward

        self._single = PDFeedforward(model, kp, kv, compensate_damping=compensate_damping,
                                     stiffness_error=stiffness_error, known_payload=known_payload)
        self.model = model
        self.kp, self.kv = self._single.kp, self._single.kv
        self.compensate_damping = self._single.compensate_damping
        self.stiffness_error, self.known_payload = self._single.stiffness_error, self._single.known_payload

    def _segments(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = np.asarray(u, dtype=float).reshape(-1, self.model.n_segments, self.model.per_segment)
        return s, self.model.segment_lengths + s[..., 0]

    def state(self, u: np.ndarray) -> np.ndarray:
        """``q = h(u)`` ``(B, n)``: ``(ΔL/L, a/ℓ, b/ℓ)`` per segment."""
        s, ell = self._segments(u)
        q = s / ell[..., None]
        q[..., 0] = s[..., 0] / self.model.segment_lengths
        return q.reshape(s.shape[0], -1)

    def state_rate(self, u: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``q̇ = H u̇`` ``(B, n)``."""
        s, ell = self._segments(u)
        v = np.asarray(w, dtype=float).reshape(s.shape)
        rate = (v - s * (v[..., :1] / ell[..., None])) / ell[..., None]
        rate[..., 0] = v[..., 0] / self.model.segment_lengths
        return rate.reshape(s.shape[0], -1)

    def smooth_acceleration(self, u: np.ndarray, w: np.ndarray, q_acc: np.ndarray) -> np.ndarray:
        """``ü = H⁻¹ (q̈ − Ḣ u̇)`` ``(B, n)``."""
        s, ell = self._segments(u)
        v = np.asarray(w, dtype=float).reshape(s.shape)
        qa = np.asarray(q_acc, dtype=float).reshape(s.shape)
        ldot = v[..., :1]
        hdot_w = (-2.0 * v * ldot + 2.0 * s * ldot**2 / ell[..., None]) / ell[..., None] ** 2
        out = np.empty_like(s)
        out[..., 0] = self.model.segment_lengths * qa[..., 0]
        out[..., 1:] = ell[..., None] * (qa[..., 1:] - hdot_w[..., 1:]) + s[..., 1:] * (out[..., :1] / ell[..., None])
        return out.reshape(s.shape[0], -1)

    def torque_smooth(self, body, u_d: np.ndarray, *, include_damping: bool = False) -> np.ndarray:
        """Generalised actuation ``τ`` ``(B, n)`` for the set-points ``u_d`` ``(B, n)`` (smooth coordinates)
        of a :class:`~soft_envs.sim.batched_bodies.BatchedPCCBody` (:meth:`PDFeedforward.torque_smooth`)."""
        u, w = body.state.u, body.state.w
        q_acc = -self.kv * self.state_rate(u, w) - self.kp * (self.state(u) - self.state(u_d))
        u_acc = self.smooth_acceleration(u, w, q_acc)
        M, G_d = body.mass_matrix(), body.gravity_torque(u_d)
        unknown = body.payload - self.known_payload
        if np.any(unknown):
            params = getattr(body, "params", None)  # (PyBullet's upright reference arm has none)
            gravity = params.gravity if params is not None else np.tile([0.0, 0.0, -body.gravity], (u.shape[0], 1))
            M, G_d = self._without_payload(unknown, u, u_d, M, G_d, gravity)
        tau = np.einsum("bij,bj->bi", M, u_acc) + body.coriolis() + (1 + self.stiffness_error) * \
            body.elastic_torque(u_d) + G_d
        if include_damping and self.compensate_damping:
            tau = tau + body.damping_torque()
        return tau

    def _without_payload(self, mass: np.ndarray, u: np.ndarray, u_d: np.ndarray, M: np.ndarray, G_d: np.ndarray,
                         gravity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``M`` and ``G(u_d)`` without tip point masses ``mass`` ``(B,)`` (``m JᵀJ``, ``−m Jᵀ g``; ``gravity``
        ``(B, 3)`` each arm's gravity vector in its base frame [m/s²]: a hanging arm's too)."""
        rows = np.flatnonzero(mass)
        J = self._tip_jacobian(u[rows])
        J_d = self._tip_jacobian(u_d[rows])
        M, G_d = M.copy(), G_d.copy()
        m = mass[rows]
        M[rows] -= m[:, None, None] * np.einsum("bki,bkj->bij", J, J)
        G_d[rows] += m[:, None] * np.einsum("bki,bk->bi", J_d, gravity[rows])
        return M, G_d

    def _tip_jacobian(self, u: np.ndarray) -> np.ndarray:
        """``d tip / d u`` ``(k, 3, n)`` of the arm's kinematics (:meth:`PCCArm.smooth_kinematics`; up to
        :data:`ROW_BY_ROW` arms one at a time, its fused single path: 20× faster for one arm, equal to
        1e-15, slower above ~40)."""
        model = self.model
        if u.shape[0] <= ROW_BY_ROW:
            return np.stack([model.smooth_kinematics(row)[1] for row in u])
        s = u.reshape(u.shape[0], model.n_segments, model.per_segment)
        if model.planar:
            s = np.concatenate((s, np.zeros(s.shape[:-1] + (1,))), axis=-1)
        _, jac, _ = model._kinematics.series(s, with_jacobian=True)
        assert jac is not None
        if model.planar:
            keep = np.sort(np.concatenate((np.arange(model.n_segments) * 3, np.arange(model.n_segments) * 3 + 1)))
            jac = jac[..., keep]
        return jac
