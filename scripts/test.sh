#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, then runs every tier: the fast
# tier (plain `pytest`), the slow, end-to-end (Neovim) and third-party tiers, the torch matrix
# (the version-sensitive tests under every supported torch series) and the VS Code extension's
# unit and end-to-end tests. `.ci/run` calls this same script. Each tier's time is printed,
# and pytest's slowest tests.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
failed=()
tiers=0
# Each tier's line, printed again at the end: CI shows a run's last lines only.
summary=()
tier() {  # tier NAME COMMAND...: run one tier, say its time, remember a failure
    local name=$1 t0=$SECONDS status=0
    shift
    tiers=$((tiers + 1))
    printf '\n== tier %s\n' "$name"
    "$@" || status=$?
    # pytest exits 5 when a tier selects no test (a filtered run): that is no failure.
    [ "$status" -eq 5 ] && status=0
    printf '== tier %s: %ss, exit %s\n' "$name" $((SECONDS - t0)) "$status"
    summary+=("$(printf '%-22s %5ss  exit %s' "$name" $((SECONDS - t0)) "$status")")
    [ "$status" -eq 0 ] || failed+=("$name")
}

# The VS Code tier runs beside the torch matrix, so that its waits (npm, code-server, a
# browser driving the editor) overlap the matrix's computing; its output is kept apart and
# printed whole when it is waited for.
background_tier() {  # background_tier NAME COMMAND...: start a tier, its output to a file
    local name=$1
    shift
    tiers=$((tiers + 1))
    ( t0=$SECONDS; status=0; "$@" >"$tier_logs/$name.log" 2>&1 || status=$?
      echo "$status $((SECONDS - t0))" >"$tier_logs/$name.status" ) &
    background_pids[$name]=$!
}
wait_tier() {  # wait_tier NAME: wait for a background tier, print its output and time
    local name=$1 status seconds
    wait "${background_pids[$name]}" || true
    read -r status seconds <"$tier_logs/$name.status"
    printf '\n== tier %s (in the background)\n' "$name"
    cat "$tier_logs/$name.log"
    printf '== tier %s: %ss, exit %s\n' "$name" "$seconds" "$status"
    summary+=("$(printf '%-22s %5ss  exit %s (beside the matrix)' "$name" "$seconds" "$status")")
    [ "$status" -eq 0 ] || failed+=("$name")
}
tier_logs=$(mktemp -d)
trap 'rm -rf "$tier_logs"' EXIT
declare -A background_pids=()

# torch first, pinned to the CPU wheel these machines keep locally: a bare `torch`
# requirement on a machine without it would pull gigabytes of CUDA packages.
# Neovim is the second real editor the language-server tests drive.
if ! command -v nvim >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends neovim
fi

python3 -m pip install --quiet torch==2.13.0
# The extras whose tests run here: the MCP server's, the onnx mode's with ONNX Runtime, which
# its tests load the real exports in, and the documentation site's.
python3 -m pip install --quiet -e '.[test,mcp,onnx,docs]' uv onnxruntime
if [ -f scripts/install-thirdparty.sh ]; then
    bash scripts/install-thirdparty.sh
fi
printf '== installs: %ss\n' $((SECONDS - started))
summary+=("$(printf '%-22s %5ss' installs $((SECONDS - started)))")

python3 -m ruff check .

# The documentation site, strict: a broken link or a missing page fails the run (a second or
# two). Its pages of codes, configuration and editor settings, and the command line's tables of
# options, are generated as it builds (mkdocs.yml's hook); its API page by mkdocstrings.
site_dir=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict --quiet --site-dir "$site_dir"
rm -rf "$site_dir"

# Bytecode, compiled once for the whole run: these machines set PYTHONDONTWRITEBYTECODE, so
# every process compiled this checkout's modules again from source: each pytest process (four
# per tier, two per torch series) spent about 9 of its 18 CPU seconds of collection on
# pytest's assertion rewriting and compiling the test modules, and each `fx-lsp check` a
# quarter second on fxcore's. What is compiled here never changes during the run; the tiers
# themselves keep the variable as the machine sets it, since tests write a source and load it
# again within a second (the fix tests, the recall corpus's ground truth), and a .pyc written
# for one text is taken for the next where its size is the same (a .pyc's time stamp is in
# whole seconds). Python and pytest read a .pyc that is there whatever the variable says.
# One collection writes the test modules' rewritten bytecode (pytest's, named for its
# version). A fresh clone's __pycache__ folders are ignored by git.
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 0 fxcore fx_lsp benchmarks >/dev/null
env -u PYTHONDONTWRITEBYTECODE python3 -m pytest -o addopts="" -q -p no:cacheprovider \
    --collect-only "$@" >/dev/null 2>&1 || true

tier fast python3 -m pytest -q -p no:cacheprovider --durations=15 "$@"
tier slow-e2e-thirdparty python3 -m pytest -q -p no:cacheprovider --durations=15 \
    --timeout 1800 -m "slow or e2e or thirdparty" "$@"
if [ -f vscode-client/scripts/ci.sh ]; then
    background_tier vscode bash vscode-client/scripts/ci.sh
fi
FX_LSP_MATRIX_SUMMARY="$tier_logs/matrix-series" tier torch-matrix bash scripts/test-torch-matrix.sh
if [ -f vscode-client/scripts/ci.sh ]; then
    wait_tier vscode
fi

printf '\n== all tiers: %ss\n' $((SECONDS - started))
printf '%s\n' "${summary[@]}"
[ -f "$tier_logs/matrix-series" ] && cat "$tier_logs/matrix-series"
[ ${#failed[@]} -eq 0 ] || echo "failed tiers: ${failed[*]}"
echo "tiers: $((tiers - ${#failed[@]})) passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
