"""Our own vocabulary, which no text a user reads may contain: the words of our work process, internal case ids
and the repository's own paths (another project's paths, e.g. in a model's provenance, are public sources)."""
from __future__ import annotations

import re

INTERNAL = re.compile(r"\bseeds'|\bthe seeds?\b|\bissues? \d|\bthis issue\b|shared/|HELD_OUT|DESIGN\.md|VLLM_MEMORY|"
                      r"\bcase [CV]\d|(?<![\w/-])(calculators|benchmarks|scripts)/|"
                      r"(?<![\w/-])tests/(fixtures|app|e2e|perf|vllm)/|(?<![\w/-])app/(views|ui)/", re.IGNORECASE)
