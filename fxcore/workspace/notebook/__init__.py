"""Jupyter notebooks as fx-lsp checks them: ``cells`` (the cells and the module of them, with
the maps between module lines and cell places), ``module_builder`` (which code of the cells
makes the module: definitions only, nothing that trains, loads data or runs a shell), and
``json_edits`` (an edit of the module written back into the cells)."""
