#!/usr/bin/env bash
# The torch matrix: fx-lsp's version-sensitive tests (pytest -m matrix: FX against plain
# torch.fx, export and compile against real torch on CPU, the server over stdio) under each
# supported torch series, each in a virtual environment of its own.
#
#   scripts/test-torch-matrix.sh [SERIES...]     e.g. 2.10 2.15: every matrix test on each;
#                                                default: every supported series but the
#                                                one python3 has, sharing the tests (below),
#                                                then python3's release on PyPI's CUDA build
#                                                against python3's CPU-only one (-m builds)
#
# PyPI's torch builds other than the local 2.13.0 CPU file are CUDA builds (~3 GB with their
# nvidia packages; they run on the CPU): uv installs them from one cache, hard-linked into
# each venv rather than copied. Venvs and cache live in $FX_LSP_MATRIX_DIR (default
# ~/.cache/fx-lsp-matrix) and are reused while their torch is the newest patch of the series.
# Each series: install, check that `fx-lsp check` starts with neither a refusal nor an
# "untested" line, run the tests; one line of figures per series, then a summary line.
#
# What runs where (CI's time budget: the whole of scripts/test.sh in 30 minutes on 2 cores,
# which the main series' own tiers mostly fill): every matrix test runs on the main series
# (python3's, whose fast and slow tiers run them all) and on one other series. The series but
# the main one share the matrix tests, one shard each (five series: shards of five), but for
# the heavy ones, marked `matrix_sweep` (the sweeps, e.g.
# tests/fxcore/worker/inputs/test_everyday_blocks.py, the onnx corpus,
# tests/fxcore/worker/capture/onnx/test_onnx_corpus.py, and the tests that run whole checks under a
# recorder or a loader log), which the two edges share (shards of two): the oldest and the newest
# supported series, where what changes between releases in the torch internals fx-lsp hooks
# shows first. A shard is FX_LSP_MATRIX_SHARD=K/N, the sweeps' FX_LSP_MATRIX_SWEEP_SHARD=K/N
# (tests/conftest.py: by a hash of each test's id, so each file's tests are spread over the
# shards); every shard also runs, whole, the test whose failure is silent in use (the capture
# warm-ups: tests/conftest.py's EVERY_SERIES_MODULES). So every series is checked for start-up
# and warm-ups and runs a fifth of the capture, export, compile, onnx and server tests.
# FX_LSP_FULL_SWEEP=1, or series named on the command line, run every matrix test on each.
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
full=${FX_LSP_FULL_SWEEP:-}
named=$#
if [ $# -gt 0 ]; then
    series=("$@")
    full=1
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

# The edges, the oldest and the newest supported series, share the sweeps.
edges=("${SUPPORTED[0]}" "${SUPPORTED[${#SUPPORTED[@]} - 1]}")
# Every series but the main one shares the other matrix tests, in order.
sharing=()
for s in "${SUPPORTED[@]}"; do [ "$s" = "$main_series" ] || sharing+=("$s"); done
tests_of() {  # tests_of SERIES: the marker expression of that series' tests
    if [ "$full" = 1 ] || [ -n "$(shard_in "$1" "${edges[@]}")" ]; then
        echo "matrix"
    else
        echo "matrix and not matrix_sweep"
    fi
}
shard_in() {  # shard_in SERIES GROUP...: K/N where SERIES is the K-th of the N in GROUP
    local series=$1 i
    shift
    for ((i = 1; i <= $#; i++)); do
        [ "${!i}" = "$series" ] && echo "$i/$#"
    done
    return 0
}

# The test files that can hold a matrix test: each marks its tests with pytest.mark.matrix
# (in its pytestmark or on a test), so every one names the marker. Given to pytest, each of a
# series' processes collects these 38-odd files, not the suite's 370-odd, 3 of its 9 CPU
# seconds of collection; the same tests are selected (-m "$selected" still picks them).
mapfile -t matrix_files < <(cd "$repo" && grep -rlE --include='test_*.py' 'mark\.matrix\b' tests | sort)

passed=0
failed=0
started=$SECONDS
reported() {  # reported STATUS LOG LINE: a step's line, counted; its failures from its log
    echo "$3"
    # FX_LSP_MATRIX_SUMMARY: a file that gets each step's line too (scripts/test.sh prints it last).
    [ -z "${FX_LSP_MATRIX_SUMMARY:-}" ] || echo "$3" >>"$FX_LSP_MATRIX_SUMMARY"
    if [ "$1" -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        # Why, in the summary too: CI shows the end of the run's output, not this step's log.
        grep -E "^(FAILED|ERROR|E ) " "$2" | head -n 20 | cut -c 1-600 \
            | tee -a "${FX_LSP_MATRIX_SUMMARY:-/dev/null}"
    fi
}
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
    # setuptools: torch 2.10's inductor imports it to build CPU code (later series install it
    # with torch), and the fix tests prove each fix compiled with inductor where it builds.
    uv pip install --quiet --python "$python" --constraint <(echo "torch==$version") \
        -e "$repo[test,onnx]" onnxruntime numpy einops setuptools \
        || { echo "torch $s: cannot install fx-lsp beside torch $version"; failed=$((failed + 1)); continue; }
    # uv installs without bytecode, and these machines set PYTHONDONTWRITEBYTECODE: every
    # process would compile torch's modules again. Compiled here once (the venvs are kept, so
    # later runs find them compiled); the tests keep the variable (scripts/test.sh says why).
    env -u PYTHONDONTWRITEBYTECODE "$python" -m compileall -q -j 0 "$venv/lib" >/dev/null 2>&1
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
    shard="" sweep_shard=""
    if [ "$full" != 1 ]; then
        shard=$(shard_in "$s" "${sharing[@]}")
        sweep_shard=$(shard_in "$s" "${edges[@]}")
    fi
    # The slow tier's time-out, not pyproject's 300 s: the sweeps (matrix_sweep) are slow-marked
    # tests, and one (the everyday blocks, 3 minutes alone) ran past 300 s on CI's two loaded
    # cores under torch 2.10. -rfEs: a failure's line names its test here and in the summary
    # (`reported` greps it), where -rs alone left only the count. FX_LSP_PROOF_INDUCTOR=0: the
    # fixes are proven compiled with aot_eager here, with inductor too on the main series
    # (tests/support/compiled_proof.py), whose CPU builds would take the matrix past CI's time.
    (cd "$repo" && FX_LSP_MATRIX_SHARD=$shard FX_LSP_MATRIX_SWEEP_SHARD=$sweep_shard \
        FX_LSP_PROOF_INDUCTOR=0 \
        "$python" -m pytest -m "$selected" -n 2 -q -rfEs --timeout 1200 \
        -p no:cacheprovider -p no:benchmark "${matrix_files[@]}") >"$log" 2>&1
    status=$?
    summary=$(tail -n 1 "$log")
    reported $status "$log" "torch $s ($version, -m \"$selected\"${shard:+, shard $shard}${sweep_shard:+, sweeps $sweep_shard}): install ${t_install}s, tests $((SECONDS - t0 - t_install))s: $summary"
done
# The GPU view on two builds of python3's release: PyPI's CUDA build of it beside
# python3's CPU-only one, neither with a GPU; tests/fxcore/worker/devices/test_build_agreement.py
# compares their verdicts judged for a GPU. Only in the default run (CI's), not for series
# named.
if [ "$named" = 0 ] && [ -n "$main_series" ]; then
    t0=$SECONDS
    release=$(python3 -c 'import torch; print(torch.__version__.split("+")[0])')
    venv="$matrix_dir/venvs/${main_series}cu"
    python="$venv/bin/python"
    log="$matrix_dir/pytest-${main_series}cu.log"
    if ! "$python" -c "import importlib.metadata as m, sys, torch; sys.exit(m.version('torch').split('+')[0] != '$release' or torch.version.cuda is None)" 2>/dev/null; then
        rm -rf "$venv"
        uv venv --quiet --python "$(command -v python3)" "$venv" \
            && uv pip install --quiet --python "$python" "torch==$release"
    fi
    if uv pip install --quiet --python "$python" --constraint <(echo "torch==$release") \
            -e "$repo" numpy einops >"$log" 2>&1; then
        (cd "$repo" && FX_LSP_OTHER_BUILD=$python python3 -m pytest -m builds -n 0 -q -rfEs \
            -p no:cacheprovider -p no:benchmark \
            tests/fxcore/worker/devices/test_build_agreement.py) >"$log" 2>&1
        status=$?
    else
        echo "cannot install fx-lsp beside PyPI's torch==$release" >>"$log"
        status=1
    fi
    reported $status "$log" \
        "torch $release, CPU-only and CUDA builds (-m builds): $((SECONDS - t0))s: $(tail -n 1 "$log")"
fi
echo "torch matrix: $((SECONDS - started))s for ${#series[@]} series"
echo "matrix: $passed passed, $failed failed"
[ $failed -eq 0 ]
