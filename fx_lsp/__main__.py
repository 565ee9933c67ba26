"""``python -m fx_lsp``: the same commands as the ``fx-lsp`` script."""

import sys

from fx_lsp.cli import main

if __name__ == "__main__":
    sys.exit(main())
