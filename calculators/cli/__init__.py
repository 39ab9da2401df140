"""``llmcap``, the command line: one module per command, each with a ``register(sub)``.

``capacity``, ``perf`` and ``knee``, ``plan``, ``simulate``, ``profile import|calibrate``, ``gpus`` and
``models``, ``app``; the flags they share are in :mod:`~calculators.cli.flags`, the entry point is
:func:`calculators.cli.main.main`. Bad input exits 2 with one line naming the field.
"""
