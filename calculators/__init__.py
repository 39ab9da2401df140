"""Pure, vectorised calculators of the LLM serving capacity planner (no streamlit, no plotly).

One sub-package per domain; each ``__init__`` lists its modules and public names:

- :mod:`calculators.specs` — GPUs and models: specs, the catalog, Hugging Face config import;
- :mod:`calculators.memory` — KV-cache bytes per token, weight bytes;
- :mod:`calculators.vllm` — vLLM's start-up accounting, concurrency, versions, logs, advice;
- :mod:`calculators.perf` — the performance model (roofline, calibrated, measured), curves, knee, budget;
- :mod:`calculators.planning` — queueing, fleet layouts and cost, pools, disaggregation;
- :mod:`calculators.sim` — the step-by-step serving simulator;
- :mod:`calculators.profiles` — importers of measured benchmark runs, and what a run says on its own;
- :mod:`calculators.report` — the JSON documents, "show the math" texts and the quote;
- :mod:`calculators.cli` — the ``llmcap`` command;
- ``errors``, ``units``, ``validation``, ``scenario`` — the shared basics and the scenario's URL form.

Quick start::

    from calculators.specs.catalog import get_model, get_gpu
    from calculators.vllm.capacity import vllm_capacity
    r = vllm_capacity(get_model("meta-llama/Llama-3.1-70B-Instruct"), gpu=get_gpu("H100"), tensor_parallel_size=4)
    print(r.vllm_lines)
"""
