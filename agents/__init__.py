"""What acts in the world: IK solvers, controllers and the neural-network IK.

Installed as ``soft_envs.agents``. A controller follows one protocol: ``Agent(env, ...)``
reads the env's spaces and kinematic model (``env.unwrapped.model``), ``agent.reset(obs,
info)`` starts an episode and ``agent.act(obs)`` returns the action; it acts only through
``env.step``.
"""

from __future__ import annotations
