"""How long a serving step takes, and what follows from it: latency, throughput, curves, knee, budget.

- :mod:`~calculators.perf.model` — ``PerformanceModel``: the one interface every timed figure uses
  (``decode_step_time_s``, ``prefill_time_s``, ``step_time_s``).
- :mod:`~calculators.perf.roofline` — ``Roofline``, ``Efficiencies``, ``crossover_batch_size``: the analytic model.
- :mod:`~calculators.perf.calibration` — ``Calibration``, ``calibrate``, ``calibrated``, ``Measured``: fitted to
  or read from measured runs.
- :mod:`~calculators.perf.serving` — ``serving_metrics``: TTFT, TPOT, tokens/s of one replica at a batch.
- :mod:`~calculators.perf.curves` — ``batch_curve_arrays``, ``knee_batch``, ``slo_batch``.
- :mod:`~calculators.perf.latency_budget` — ``latency_budget``: queue + prefill + decode + network vs a target.
- :mod:`~calculators.perf.sweep` — ``decode_sweep``: models × GPUs × TP × formats × batch × context in one call.
- :mod:`~calculators.perf.measurements` — ``load_measurements``, ``load_sources``: the public measurement corpus.

Method: docs/performance-model.md.
"""
