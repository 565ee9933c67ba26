#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, then runs all of it:
# the Python suite (engine, CLI, language server, third-party fidelity) and the VS Code
# extension's unit and end-to-end tests. `.ci/run` calls this same script.
set -euo pipefail
cd "$(dirname "$0")/.."

# torch first, pinned to the CPU wheel these machines keep locally: a bare `torch`
# requirement on a machine without it would pull gigabytes of CUDA packages.
# Neovim is the second real editor the language-server tests drive.
if ! command -v nvim >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends neovim
fi

python3 -m pip install --quiet torch==2.13.0
python3 -m pip install --quiet -e '.[test]'
if [ -f scripts/install-thirdparty.sh ]; then
    bash scripts/install-thirdparty.sh
fi

python3 -m ruff check .
python3 -m pytest -q -p no:cacheprovider "$@"

if [ -f vscode-client/scripts/ci.sh ]; then
    bash vscode-client/scripts/ci.sh
fi
