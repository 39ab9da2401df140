"""The datasheet roofline the performance tests compute by hand against: every efficiency 1 and no costs, so a
step is exactly its bytes over the datasheet bandwidth and its FLOPs over the datasheet peak."""
from __future__ import annotations

import math

from calculators.perf.roofline import Efficiencies

IDEAL = Efficiencies(compute=1.0, memory=1.0, step_overhead_s=0.0, allreduce_latency_s=0.0,
                     pcie_allreduce_latency_s=0.0, pcie_link_efficiency=1.0, layer_overhead_s=0.0,
                     sequence_overhead_s=0.0, attention_halving_context_tokens=math.inf, prefill_layer_overhead_s=0.0,
                     prefill_moe_layer_overhead_s=0.0, moe_small_batch_penalty=0.0,
                     moe_layer_overhead_s=0.0, moe_expert_efficiency=1.0, mla_attention=1.0,
                     request_overhead_s=0.0, moe_compute_share=1.0, attention_compute_share=1.0)
