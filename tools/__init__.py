"""The project's own tooling for its tests and docs, kept out of the installed package: a headless-Chromium client
(:mod:`.browser`) and the PNG snapshots the docs' figures are made with (:mod:`.snapshots`), the rewrite of executed
notebooks into offline HTML pages (:mod:`.offline_html`), and the hostile model outputs the fuzz tests and
``benchmarks/fuzz_domains.py`` feed every domain (:mod:`.hostile`). Run from the repository's root, e.g.
``python -m tools.snapshots --help``."""
