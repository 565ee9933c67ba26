"""``python -m fx_lsp``: the same commands as the ``fx-lsp`` script."""

import os
import sys

# ``-m`` puts the working folder first on sys.path, and editors start servers in the
# workspace: a workspace file named like a module imported from here on (``json``, ``pygls``,
# ``tomlkit``...) would run in this process. Drop that entry unless it is where this package
# itself comes from (a source checkout). Modules imported before this line, ``fx_lsp``
# included, are out of reach here: start with PYTHONSAFEPATH=1 (or ``-P``) and a neutral
# working folder, as the VS Code extension does.
_package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if (
    not getattr(sys.flags, "safe_path", False)
    and sys.path
    and os.path.abspath(sys.path[0] or os.curdir) == os.getcwd()
    and os.getcwd() != _package_parent
):
    del sys.path[0]

from fx_lsp.launch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
