"""A corpus of classes with graph breaks, one file per kind of break, each fixed by
``fx-lsp check --mode compile --fix --unsafe-fixes`` and compared with real torch.compile
before and after (``test_fix_all_corpus``, with ``corpus_measure`` as the runner).

The convention every file of this folder keeps, so that a runner needs nothing but the file:

- every class to check is a module-level ``nn.Module`` subclass whose constructor takes no
  arguments; its weights are drawn after ``torch.manual_seed(0)`` (the runner seeds before
  building each instance, so before and after the fix they are the same);
- a module-level ``INPUTS: dict[str, dict[str, str]]`` maps each such class's name to its
  ``forward`` arguments, by name, each a tensor spelled as fx-lsp's ``inputs`` setting spells
  it (``"float32[4, 8]"``, ``"int64[6]"``, ``"bool[4]"``); the runner writes the same specs
  into the workspace's ``[tool.fx-lsp.modules."<module>:<Class>"] inputs`` so fx-lsp and real
  torch run the same shapes. The values are drawn after ``torch.manual_seed(1)``: floating
  point with ``torch.randn``, integers with ``torch.randint(0, 4, ...)``, booleans with
  ``torch.rand(...) > 0.5``, in the order of the dict;
- a class not in ``INPUTS`` is a helper (a submodule), not checked on its own;
- every class in ``INPUTS`` meets at least one graph break under real torch.compile before the
  fix; a file imports ``torch`` and nothing outside torch and the standard library.
"""
