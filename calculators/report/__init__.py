"""What the CLI prints and the app shows: the JSON documents, "show the math" texts and the quote.

Formats results computed elsewhere; computes nothing of its own.

- :mod:`~calculators.report.capacity` — ``capacity_document``/``capacity_text`` (``llmcap capacity``).
- :mod:`~calculators.report.perf` — ``perf_document``, ``knee_document`` (``llmcap perf``, ``llmcap knee``).
- :mod:`~calculators.report.quote` — ``quote_document``, ``quote_html``, ``quote_pdf``, ranked JSON and CSV.
- ``explain_capacity``, ``explain_perf``, ``explain_fleet``, ``explain_profiles``, ``explain_sim`` — each
  builder returns ``{"formula", "substituted", "sources"}`` with the user's numbers written in.
"""
