"""What the hardware and the models are: validated specs, the catalog, and Hugging Face config import.

- :mod:`~calculators.specs.schema` — ``GPUSpec``, ``ModelSpec``: frozen pydantic specs in SI units.
- :mod:`~calculators.specs.catalog` — ``get_gpu``, ``get_model``, ``load_gpus``, ``load_models``, ``CatalogError``:
  the catalog of ``calculators/data/*.toml``, looked up by id, alias or driver name.
- :mod:`~calculators.specs.hf_config` — ``model_from_config``, ``load_config_file``: any ``config.json``, with the
  defaults ``transformers`` assumes for fields it omits named in ``ModelSpec.defaults_assumed``.
- :mod:`~calculators.specs.hf_hub` — a model's ``config.json`` by Hugging Face id (cached; ``HF_TOKEN``,
  ``HF_HUB_OFFLINE``, ``HF_ENDPOINT`` honoured).

Where the numbers come from: docs/data-policy.md.
"""
