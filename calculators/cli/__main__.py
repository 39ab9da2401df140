"""``python -m calculators.cli``: the same as the ``llmcap`` command."""
from calculators.cli.main import main

raise SystemExit(main())
