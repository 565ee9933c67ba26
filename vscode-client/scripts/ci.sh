#!/usr/bin/env bash
# Builds and tests the VS Code extension from a fresh machine: system packages, npm packages,
# code-server, bundle, unit tests, fx-lsp.vsix (with the fx-lsp wheel it installs, checked as
# the Marketplace and Open VSX would), then the end-to-end test in a real VS Code.
# Expects the Python project installed first (pip install torch==2.13.0; pip install -e .[test]):
# the e2e test runs the server with FX_LSP_PYTHON (default: python3's own executable), and keeps
# a venv with only torch under FX_LSP_E2E_TOOLS for the step that installs the server.
set -euo pipefail
cd "$(dirname "$0")/.."
client_dir=$(pwd)
started=$SECONDS
step() { printf '\n== %s (%ss)\n' "$*" $((SECONDS - started)); }

CODE_SERVER_VERSION=4.100.3
export FX_LSP_E2E_TOOLS="${FX_LSP_E2E_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/fx-lsp-e2e}"
code_server_prefix="$FX_LSP_E2E_TOOLS/code-server-$CODE_SERVER_VERSION"
export CODE_SERVER="$code_server_prefix/node_modules/.bin/code-server"

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" != 20 ]; then
    # code-server 4.100.3 is the last release that runs on Node 20 and refuses any other.
    echo "ci.sh: Node 20 is needed for code-server $CODE_SERVER_VERSION, found $(node --version)" >&2
    exit 1
fi

step "system packages"
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
command -v rg >/dev/null || missing+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

step "npm ci"
npm ci --no-audit --no-fund

step "code-server $CODE_SERVER_VERSION"
if "$CODE_SERVER" --version >/dev/null 2>&1; then
    echo "already installed in $code_server_prefix"
else
    scratch=$(mktemp -d)
    # @vscode/ripgrep's postinstall downloads a binary unless its cache holds the tarball: seed it
    # with Debian's rg (13.0.0, the version it asks for), as a top-level file `rg`.
    export TMPDIR="$scratch/tmp"
    rg_cache="$TMPDIR/vscode-ripgrep-cache-1.15.11"
    mkdir -p "$rg_cache" "$scratch/rg"
    cp "$(command -v rg)" "$scratch/rg/rg"
    tar -czf "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$scratch/rg" rg
    # unsafe_perm: its postinstall refuses to run as root otherwise. yes: node-pty's postinstall
    # calls `npx node-gyp`, which this machine's `yes=false` would cancel. allow-all-scripts: npm 11
    # skips dependencies' install scripts by default, and code-server is built by them (its own
    # postinstall and the nested installs of VS Code's native modules).
    npm_config_unsafe_perm=true npm_config_yes=true npm_config_dangerously_allow_all_scripts=true \
        npm install --prefix "$scratch/install" --no-audit --no-fund "code-server@$CODE_SERVER_VERSION"
    # Moved into place only once complete, so that an interrupted install is not taken for one.
    rm -rf "$code_server_prefix"
    mkdir -p "$(dirname "$code_server_prefix")"
    mv "$scratch/install" "$code_server_prefix"
    unset TMPDIR
    rm -rf "$scratch"
    "$CODE_SERVER" --version
fi

step "graph view bundle: the Python package's copy is current"
node scripts/bundle.mjs --check

step "type check and unit tests"
npm run typecheck
npm run test:unit

# scripts/package.mjs fails on any vsce warning; scripts/check-vsix.mjs checks the vsix against
# the Marketplace's and Open VSX's rules and its size budget.
step "package fx-lsp.vsix and check it"
npm run package
ls -l fx-lsp.vsix
wheel="extension/bundled/fx_lsp-$(node -p 'require("./package.json").version')-py3-none-any.whl"
if ! python3 -m zipfile -l fx-lsp.vsix | grep -q "^$wheel "; then
    echo "ci.sh: fx-lsp.vsix does not carry $wheel" >&2
    exit 1
fi

step "end-to-end test in code-server"
export FX_LSP_PYTHON="${FX_LSP_PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}"
if ! "$FX_LSP_PYTHON" -c 'import fx_lsp' 2>/dev/null; then
    echo "ci.sh: $FX_LSP_PYTHON cannot import fx_lsp: install the project first (pip install -e .)" >&2
    exit 1
fi
export ARTIFACTS_DIR="${ARTIFACTS_DIR:-$client_dir/../test-artifacts/vscode}"
npm run test:e2e
echo "screenshots in $ARTIFACTS_DIR"
step "done"
