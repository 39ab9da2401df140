"""What vLLM does at start-up and what it prints: the KV-cache budget, blocks, concurrency and advice.

- :mod:`~calculators.vllm.capacity` — ``vllm_capacity`` → ``CapacityResult``: budget, weights, estimated
  overheads, blocks and the lines vLLM prints, per release; ``request_blocks``.
- :mod:`~calculators.vllm.concurrency` — ``batch_limit``, ``concurrency``, ``concurrency_curve``: how many
  requests the pool holds.
- :mod:`~calculators.vllm.overheads` — ``activation_peak``, ``non_torch``, ``cudagraph``: the measured terms,
  estimated with a range.
- :mod:`~calculators.vllm.versions` — ``parse_vllm_version``, ``DEFAULT_VLLM_VERSION``: what changed by release.
- :mod:`~calculators.vllm.startup_log` — ``parse_vllm_log``: read a pasted start-up log.
- :mod:`~calculators.vllm.advice` — ``max_num_seqs_advice``, ``vllm_serve_command``.

Method: docs/vllm-memory.md.
"""
