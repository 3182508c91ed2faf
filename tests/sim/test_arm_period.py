"""A compiled period with contact (:func:`soft_envs.sim.arm_period.run_period` with a scene): each block's
tally after every physics step, and a block whose arms all stopped early measured as the batch loop leaves
a stopped arm (no force) while the other block's arms go on touching."""

from __future__ import annotations

import numpy as np

from soft_envs.bench.contact_checks import sphere_row
from soft_envs.envs.contact_tally import ContactTally
from soft_envs.robots import Peter
from soft_envs.sim.arm_period import PeriodArrays, run_period
from soft_envs.sim.batched_bodies import BatchedSoftPeter

ARMS, STOP_AT = 64, 2  # two blocks of 32 arms; the first block's arms all stop at physics step STOP_AT


class _StopFirstBlock:
    """Zero actuation; the arms of rows 0-31 leave the model (code 1) at physics step STOP_AT."""

    def __init__(self, rows: slice) -> None:
        self.rows, self.k = rows, 0

    def before(self, k: int, state) -> None:
        self.k = k

    def check(self, state, active: np.ndarray) -> np.ndarray:
        stop = self.rows.start < 32 and self.k == STOP_AT
        return np.where(active & stop, 1, 0).astype(np.int64)

    def idle(self, k: int, state) -> None:
        pass


def test_a_stopped_block_reads_no_force_while_the_other_block_touches_on():
    body = BatchedSoftPeter(Peter(2), ARMS, num_threads=2)
    body.reset_inflation(None, np.array([0.0, 2.0, 2.0, 0.0, 2.0, 2.0]))
    body.reset(None, body.state.u.copy(), rest=body.state.u.copy())  # at rest where it is
    tip = body.tip_state()[0][0]
    scene = body.add_scene(2)
    scene.set_shapes(None, np.stack([sphere_row(tip + np.array(offset), 0.012) for offset in
                                     ((0.0, 0.04, 0.0), (0.0, -0.04, 0.0))]))  # 3.5 mm into the body
    tally = ContactTally(ARMS, 2)
    forces = []

    def record(rows: slice) -> None:
        tally.record(scene, rows=rows)
        if rows.start == 0:
            forces.append(tally.contact_force[:32].copy())

    arrays = PeriodArrays.zeros(ARMS, body.n_dof, moving_rest=False)
    active = np.ones(ARMS, dtype=bool)
    result = run_period(body, 6, 1.0 / 120.0, active, arrays, _StopFirstBlock, scene=scene, record=record)
    assert result.steps == 6 and np.all(result.codes[:32] == 1) and not result.codes[32:].any()
    assert np.all(forces[STOP_AT] > 0.0)  # the first block touched at the step it stopped
    assert not tally.contact_force[:32].any()  # then measured as stopped arms: no force
    assert np.all(tally.contact_force[32:] > 0.0) and np.all(tally.penetration > 0.0)
    assert np.all(tally.touching)  # a stopped arm's touches are kept, not counted again
    assert np.all(tally.collisions == 2)
