"""The soft arms' default stiffness-proportional (Rayleigh) damping ``β`` [s] of ``D = α M + β K``,
shared by the single PyBullet bodies and the batched core (which must import without PyBullet).

Both are assumptions: their reasoning is in :mod:`soft_envs.sim.peter_soft` (PETER's legs) and
:mod:`soft_envs.sim.pcc_body` (the PCC arm's segments).
"""

PETER_RAYLEIGH_STIFFNESS = 0.02  # s (assumption, see soft_envs.sim.peter_soft)
PCC_RAYLEIGH_STIFFNESS = 5e-3  # s (assumption, see soft_envs.sim.pcc_body)
