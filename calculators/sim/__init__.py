"""One replica simulated step by step, as vLLM's scheduler runs it, on any performance model.

- :mod:`~calculators.sim.workload` — arrivals (``Poisson``, ``Gamma``, ``Constant``, ``ClosedLoop``), lengths
  (``Fixed``, ``LogNormal``, ``bimodal``, ``length_distribution``), ``make_workload``, traces.
- :mod:`~calculators.sim.policies` — ``ContinuousBatching``, ``StaticBatching``, ``SLO``, ``kv_blocks``.
- :mod:`~calculators.sim.engine` — ``simulate`` → ``SimulationResult``; ``simulate_split`` for two pools.
- :mod:`~calculators.sim.continuous`, :mod:`~calculators.sim.static` — the runs, as small named steps.
- :mod:`~calculators.sim.results` — ``SimulationResult``, ``RunRecord``, ``summarize``.
- :mod:`~calculators.sim.sweeps` — ``sweep_max_num_seqs``, ``sweep_request_rate``, ``continuous_vs_static``.
- :mod:`~calculators.sim.analysis` — Little's law, closed-form queues, time line and CDFs of a run.

Method: docs/queueing.md §9–§10.
"""
