"""A control period of a batched soft-arm body: its physics steps, block of arms by block of arms in the
core's threads, with the env's actuation and validity checks between the steps (the vector step).

:func:`run_period` is what ``PeterArms.simulate`` did in numpy around
:meth:`BatchedSoftArm.step`, physics step after physics step for the whole batch, done per block of
arms (:func:`soft_envs.sim.threads.blocks`, the core's split): each block's thread runs every
physics step of the period — the env's compiled actuation (``Block.before``), the core's
:func:`~soft_envs.sim.batched_integrator.batch_step`, the validity check (``Block.check``) and
:func:`~soft_envs.sim.period_kernels.settle` — and reads its arms' tips at the end. So the env
logic of a step runs in parallel with the physics instead of between its calls, and the Python
of a period is a few calls per physics step and block. (The PCC arm's period is one kernel,
arm by arm: :mod:`soft_envs.sim.pcc_period`.)

Semantics are the batch loop's: an arm whose state leaves its model goes back to its state at the
step's start, at rest, and stays there (its code); the loop ends when no arm of the batch is active
(a block whose arms all stopped ends earlier, and ``Block.idle`` runs its remaining steps of the
batch: what still moves there, PETER's legs). Every arm reads and writes only its rows, so the
results are the same for any number of threads. The state goes through two new buffers (the body's
state at the start is read, never written); the body's state is the last one, a new
:class:`~soft_envs.sim.batched_types.ArmState`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from soft_envs.sim import threads
from soft_envs.sim.batched_arm import BatchedSoftArm
from soft_envs.sim.batched_integrator import batch_step
from soft_envs.sim.batched_kernels import batch_point_state
from soft_envs.sim.batched_types import ArmState
from soft_envs.sim.contact import batch_step_contact
from soft_envs.sim.period_kernels import settle
from soft_envs.sim.scene import ArmScene

#: A block's state arrays, in :class:`ArmState`'s order ``(u, w, a, c, rest, time, fresh)``.
StateViews = tuple[np.ndarray, ...]


class Block(Protocol):
    """What an env does for one block of arms (rows ``rows`` of the batch) in a period."""

    def before(self, k: int, state: StateViews) -> None:
        """Physics step ``k``'s actuation from ``state``: the block's rows of the period's torques
        (``PeriodArrays.torque_start``, ``torque_end``) and rest (``rest_end``)."""

    def check(self, state: StateViews, active: np.ndarray) -> np.ndarray:
        """Validity codes ``(len(rows),)`` int64 of the ``active`` arms of the stepped ``state`` (0: valid)."""

    def idle(self, k: int, state: StateViews) -> None:
        """Physics step ``k`` of the batch for a block whose arms all stopped (``state``: their held state)."""


@dataclass
class PeriodArrays:
    """The period's per-arm arrays ``(B, …)`` the env's blocks fill and the steps read: torques at each
    step's start and end [N, N m] and the rest configuration at its end (``moving_rest``)."""

    torque_start: np.ndarray
    torque_end: np.ndarray
    rest_end: np.ndarray
    moving_rest: bool

    @classmethod
    def zeros(cls, n_arms: int, n: int, *, moving_rest: bool) -> PeriodArrays:
        """Zero torques and rest of ``n_arms`` arms of ``n`` coordinates."""
        return cls(np.zeros((n_arms, n)), np.zeros((n_arms, n)), np.zeros((n_arms, n) if moving_rest else (1, n)),
                   moving_rest)


@dataclass
class PeriodResult:
    """What a period did: each arm's validity code ``(B,)`` (0: still running, or stopped before the period;
    else the code it stopped with in it), its post-step ``u`` ``(B, n)`` when it stopped (``violation``:
    what its reason describes), the tips at the end ``(B, 6)`` (position [m], velocity [m/s], base frame)
    and the physics steps the batch ran."""

    codes: np.ndarray
    violation: np.ndarray
    tips: np.ndarray
    steps: int


def run_period(body: BatchedSoftArm, n_steps: int, dt: float, active: np.ndarray, arrays: PeriodArrays,
               make_block: Callable[[slice], Block], counts: np.ndarray | None = None,
               scene: ArmScene | None = None, record: Callable[[slice], None] | None = None) -> PeriodResult:
    """Up to ``n_steps`` physics steps of ``dt`` [s] of ``body``'s ``active`` arms (``(B,)`` bool, updated:
    an arm that stops leaves it), block by block in ``body.num_threads`` threads (module docstring);
    ``make_block(rows)`` gives the env's :class:`Block` of the rows; ``counts`` ``(B,)`` int64 (optional)
    counts the physics steps of each arm. ``body.state`` becomes the state at the period's end.

    With a ``scene`` (static shapes: nothing moves them during the period) the steps are
    :func:`~soft_envs.sim.contact.batch_step_contact`'s, which measure each step's contact into it, and
    ``record(rows)`` reads those measurements after every physics step of a block (an env's tally). A
    block whose arms all stopped before the batch's last step is recorded once more with its
    measurements zeroed, as the batch loop's further steps leave a stopped arm's."""
    start = body.state
    B, n = start.u.shape
    moving = arrays.moving_rest

    def buffers() -> ArmState:
        return ArmState(np.empty((B, n)), np.empty((B, n)), np.empty((B, n)), np.empty_like(start.c),
                        np.empty((B, n)) if moving else start.rest, np.empty(B), np.empty(B, dtype=np.bool_))

    sets = [start, buffers(), buffers()]
    codes = np.zeros(B, dtype=np.int64)
    violation = np.zeros((B, n))
    tips = np.empty((B, 6))
    steps = np.zeros(B, dtype=np.int64) if counts is None else counts
    cancel = np.zeros(B, dtype=np.bool_)
    topology = body.topology.arrays
    p = body.params
    coefficients = (float(dt), *body.alpha_parameters)
    passes = int(body.corrector_passes)
    ran: dict[int, int] = {}
    contact = scene is not None and scene.has_shapes()
    if scene is not None and not contact:
        scene.clear_measurements()

    def run_block(rows: slice) -> None:
        views = [tuple(getattr(s, f)[rows] for f in ("u", "w", "a", "c", "rest", "time", "fresh")) for s in sets]
        params = (p.mass[rows], p.inertia[rows], p.gravity[rows], p.stiffness[rows], p.rayleigh[rows])
        act = active[rows]
        rest_end = arrays.rest_end[rows] if moving else arrays.rest_end
        torques = (arrays.torque_start[rows], arrays.torque_end[rows])
        terms = (np.empty((rows.stop - rows.start, n, n)), np.empty((rows.stop - rows.start, n)),
                 np.empty((rows.stop - rows.start, n)))  # (the step's start terms, computed there)
        records = (codes[rows], steps[rows], violation[rows])
        no_cancel = cancel[rows]
        block = make_block(rows)
        if contact:
            assert scene is not None
            shapes = (scene.shapes[rows], scene.velocity[rows], scene.cp[rows], scene.radius, scene.points)
            measured = (scene.diagnostics[rows], scene.touched[rows], scene.wrench[rows])
            max_substeps = scene.max_substeps
        left, k = int(np.count_nonzero(act)), 0
        while k < n_steps and left:
            before, after = views[0 if k == 0 else 1 + (k - 1) % 2], views[1 + k % 2]
            block.before(k, before)
            fresh = before[6] if passes > 0 else no_cancel  # (the step's consistent start: fresh arms)
            if contact:
                batch_step_contact(*topology, *params, *before[:5], rest_end if moving else before[4], *torques,
                                   no_cancel, fresh, act, *coefficients, passes, *shapes, *terms, *after[:4],
                                   *measured, max_substeps)
            else:
                batch_step(*topology, *params, *before[:5], rest_end if moving else before[4], *torques, no_cancel,
                           fresh, act, *coefficients, passes, False, *terms, *after[:4])
            if record is not None:
                record(rows)
            check = block.check(after, act)
            left = settle(before, after, rest_end, moving, act, coefficients[0], check, records[1], records[2],
                          records[0])
            k += 1
        last = views[0 if k == 0 else 1 + (k - 1) % 2]
        if last is not views[1]:
            for source, target in zip(last, views[1], strict=True):
                if source is not target:
                    target[...] = source
        ran[rows.start] = k
        batch_point_state(*topology, views[1][0], views[1][1], views[1][3], tips[rows])

    parts = threads.blocks(B, body.num_threads)
    threads.run_blocks(run_block, B, body.num_threads)
    total = max(ran.values(), default=0)
    for rows in parts:  # blocks whose arms all stopped early: the batch's remaining steps
        if ran[rows.start] < total:
            block = make_block(rows)
            held = tuple(getattr(sets[1], f)[rows] for f in ("u", "w", "a", "c", "rest", "time", "fresh"))
            for k in range(ran[rows.start], total):
                block.idle(k, held)
            if contact and record is not None:
                assert scene is not None
                scene.diagnostics[rows] = 0.0
                record(rows)
    body.state = sets[1]  # (a new state: the body's terms of the old one are not reused)
    return PeriodResult(codes, violation, tips, total)
