"""A ``sitecustomize`` that makes numpy unimportable for every process that has it on
PYTHONPATH (the zygote and its workers inherit it): the Quick start environment, torch without
numpy, where torch warns "Failed to initialize NumPy" on import. Shared by the CLI's tests of the
terminal (tests/fx_lsp/cli/test_quiet_output.py) and the server's of its log
(tests/fx_lsp/server/test_worker_log.py)."""

NO_NUMPY = """
import sys
from importlib.machinery import PathFinder


class NoNumpy(PathFinder):
    \"\"\"The finder of installed modules, blind to numpy: for imports and for
    importlib.util.find_spec (which torch asks), numpy is not installed.\"\"\"

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            return None
        return super().find_spec(name, path, target)


sys.meta_path[:] = [NoNumpy if finder is PathFinder else finder for finder in sys.meta_path]
"""
