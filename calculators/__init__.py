"""Pure, vectorised calculators of the LLM serving capacity planner (no streamlit, no plotly).

Quick start::

    from calculators.specs.catalog import get_model, get_gpu
    from calculators.vllm.capacity import vllm_capacity
    r = vllm_capacity(get_model("meta-llama/Llama-3.1-70B-Instruct"), gpu=get_gpu("H100"), tensor_parallel_size=4)
    print(r.vllm_lines)
"""
