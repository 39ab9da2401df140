"""The spec catalog's data files (``gpus.toml``, ``models.toml``), shipped inside the package.

Read with :func:`importlib.resources.files` so an installed wheel finds them; every number carries its
source and date (see docs/data-policy.md).
"""
