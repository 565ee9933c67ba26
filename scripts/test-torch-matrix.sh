#!/usr/bin/env bash
# The torch matrix: fx-lsp's version-sensitive tests (pytest -m matrix: FX against plain
# torch.fx, export and compile against real torch on CPU, the server over stdio) under each
# supported torch series, each in a virtual environment of its own.
#
#   scripts/test-torch-matrix.sh [SERIES...]     e.g. 2.10 2.15; default: every supported
#                                                series but the one python3 has
#
# PyPI's torch builds other than the local 2.13.0 CPU file are CUDA builds (~3 GB with their
# nvidia packages; they run on the CPU): uv installs them from one cache, hard-linked into
# each venv rather than copied. Venvs and cache live in $FX_LSP_MATRIX_DIR (default
# ~/.cache/fx-lsp-matrix) and are reused while their torch is the newest patch of the series.
# Each series: install, check that `fx-lsp check` starts with neither a refusal nor an
# "untested" line, run the tests; one line of figures per series, then a summary line.
#
# What runs where (CI's time budget: the whole of scripts/test.sh in 30 minutes on 2 cores):
# every matrix test runs on the main series (python3's, whose fast and slow tiers run them
# all) and on one edge (the oldest or the newest supported series, where what changes between
# releases in the torch internals fx-lsp hooks shows first): the two edges share every matrix
# test, one shard of two each. The series between them leave out the heavy tests, marked
# `matrix_sweep` (the sweeps, e.g. tests/test_everyday_blocks.py, the onnx corpus,
# tests/test_onnx_corpus.py, and the tests that run whole checks under a recorder or a loader
# log), and share the rest in one shard each (three series: shards of three). A shard is
# FX_LSP_MATRIX_SHARD=K/N (tests/conftest.py: by a hash of each test's id, so each file's tests
# are spread over the shards); every shard also runs, whole, the test whose failure is silent
# in use (the capture warm-ups: tests/conftest.py's EVERY_SERIES_MODULES). So every series is
# checked for start-up and warm-ups; every matrix test runs on the main series, one edge and,
# but for the sweeps, one series between.
# FX_LSP_FULL_SWEEP=1 runs every matrix test on every series.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

SUPPORTED=(2.10 2.11 2.12 2.13 2.14 2.15)
matrix_dir="${FX_LSP_MATRIX_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fx-lsp-matrix}"
export UV_CACHE_DIR="$matrix_dir/uv-cache"
export UV_LINK_MODE=hardlink
mkdir -p "$matrix_dir/venvs"

python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
uv() { python3 -m uv "$@"; }

# The series python3 has: its own tiers run every matrix test.
main_series=$(python3 -c 'import importlib.metadata as m, re; print(re.match(r"\d+\.\d+", m.version("torch"))[0])' 2>/dev/null)
if [ $# -gt 0 ]; then
    series=("$@")
else
    series=()
    for s in "${SUPPORTED[@]}"; do [ "$s" = "$main_series" ] || series+=("$s"); done
fi

# The newest patch release of each series on the package index, e.g. 2.12 -> 2.12.1.
available=$(python3 -m pip index versions torch 2>/dev/null | sed -n 's/^Available versions: //p' | tr -d ',')
newest_patch() {
    local s=$1 v
    for v in $available; do
        case "$v" in "$s".*) [[ "$v" == *+* ]] || { echo "$v"; return; } ;; esac
    done
    echo "$s.0"
}

# The edges, the oldest and the newest supported series, share every matrix test.
edges=("${SUPPORTED[0]}" "${SUPPORTED[${#SUPPORTED[@]} - 1]}")
# The series between them that share the rest out: all but the main one, in order.
sharing=()
for s in "${SUPPORTED[@]:1:${#SUPPORTED[@]}-2}"; do [ "$s" = "$main_series" ] || sharing+=("$s"); done
is_edge() {  # is_edge SERIES: whether that series is the oldest or the newest
    [ "$1" = "${edges[0]}" ] || [ "$1" = "${edges[1]}" ]
}
tests_of() {  # tests_of SERIES: the marker expression of that series' tests
    if [ "${FX_LSP_FULL_SWEEP:-}" = 1 ] || is_edge "$1"; then echo "matrix"; else echo "matrix and not matrix_sweep"; fi
}
shard_of() {  # shard_of SERIES: K/N, its shard of its group's tests; nothing for a full sweep
    local i group
    [ "${FX_LSP_FULL_SWEEP:-}" = 1 ] && return
    if is_edge "$1"; then group=("${edges[@]}"); else group=("${sharing[@]}"); fi
    for i in "${!group[@]}"; do
        [ "${group[$i]}" = "$1" ] && echo "$((i + 1))/${#group[@]}"
    done
}

passed=0
failed=0
started=$SECONDS
for s in "${series[@]}"; do
    t0=$SECONDS
    version=$(newest_patch "$s")
    venv="$matrix_dir/venvs/$s"
    python="$venv/bin/python"
    if ! "$python" -c "import importlib.metadata as m, sys; sys.exit(m.version('torch').split('+')[0] != '$version')" 2>/dev/null; then
        rm -rf "$venv"
        uv venv --quiet --python "$(command -v python3)" "$venv" || { echo "torch $s: cannot make $venv"; failed=$((failed + 1)); continue; }
        uv pip install --quiet --python "$python" "torch==$version" \
            || { echo "torch $s: cannot install torch==$version"; failed=$((failed + 1)); continue; }
    fi
    # fx-lsp with its test and onnx extras beside that torch, which the constraint keeps as it
    # is, and onnxruntime, which the onnx corpus test loads the real export in: the onnx mode
    # runs on every series (onnxscript 0.7's torchlib fits 2.10 to 2.15, whose exporters have
    # the private pieces the mode uses; where one does not, its tests skip saying why).
    uv pip install --quiet --python "$python" --constraint <(echo "torch==$version") \
        -e "$repo[test,onnx]" onnxruntime numpy einops \
        || { echo "torch $s: cannot install fx-lsp beside torch $version"; failed=$((failed + 1)); continue; }
    t_install=$((SECONDS - t0))

    # Those lines come before any job: a file with no class (never imported) shows them
    # without the seconds a trace of examples/ took in every series (the tests trace).
    start_lines=$(cd "$repo" && "$python" -m fx_lsp check --no-cache --output-format concise \
        examples/models/__init__.py 2>&1 >/dev/null)
    if grep -qE "fx-lsp needs torch|is tested with torch" <<<"$start_lines"; then
        echo "torch $s ($version): fx-lsp refused it or called it untested: $start_lines"
        failed=$((failed + 1))
        continue
    fi

    log="$matrix_dir/pytest-$s.log"
    selected=$(tests_of "$s")
    shard=$(shard_of "$s")
    (cd "$repo" && FX_LSP_MATRIX_SHARD=$shard "$python" -m pytest -m "$selected" -n 2 -q -rs \
        -p no:cacheprovider -p no:benchmark) >"$log" 2>&1
    status=$?
    summary=$(tail -n 1 "$log")
    line="torch $s ($version, -m \"$selected\"${shard:+, shard $shard}): install ${t_install}s, tests $((SECONDS - t0 - t_install))s: $summary"
    echo "$line"
    # FX_LSP_MATRIX_SUMMARY: a file that gets each series' line too (scripts/test.sh prints it last).
    [ -z "${FX_LSP_MATRIX_SUMMARY:-}" ] || echo "$line" >>"$FX_LSP_MATRIX_SUMMARY"
    if [ $status -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        grep -E "^(FAILED|ERROR) " "$log" | head -n 20
    fi
done
echo "torch matrix: $((SECONDS - started))s for ${#series[@]} series"
echo "matrix: $passed passed, $failed failed"
[ $failed -eq 0 ]
