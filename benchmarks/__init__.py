"""fx-lsp's benchmarks, grouped into suites by what they measure (see ``suites.py``).

Run from the repository root: ``python3 -m benchmarks list`` and
``python3 -m benchmarks run SUITE [NAME...]``. The shared helpers live at this level; each
suite is a sub-package.
"""
