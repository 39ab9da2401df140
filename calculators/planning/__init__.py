"""How many GPUs a load needs: queueing, fleet layouts and cost, mixed pools, disaggregated prefill/decode.

- :mod:`~calculators.planning.queueing` — M/M/1, M/D/1, M/G/1, Erlang C (M/M/c) and the batched server.
- :mod:`~calculators.planning.fleet` — ``Workload``, ``plan_fleet``, ``plan_layout``, ``pareto_front``,
  ``cost_vs_tpot_target``, ``fleet_summary``: layouts per GPU type sized for a rate under an SLO.
- :mod:`~calculators.planning.pools` — ``PoolSpec``, ``plan_pools``: a latency pool and a throughput pool.
- :mod:`~calculators.planning.disagg` — ``plan_disaggregated``: prefill and decode pools and the KV hand-off.

Method: docs/queueing.md.
"""
