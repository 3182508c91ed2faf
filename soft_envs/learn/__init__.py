"""Learning from the native vector envs at the simulator's speed (:mod:`soft_envs.learn.parallel`:
rsl_rl's PPO over thousands of parallel envs, policies saved as numpy
:class:`~soft_envs.agents.learned.MLPPolicy` files). Needs the ``learn`` extra."""
