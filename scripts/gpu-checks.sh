#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one go, for a machine lent for a few minutes:
# real torch's export and compile answers on the GPU for the corpora judged for a GPU, recorded
# (benchmarks/gpu/gpu_answers.py --record), `pytest -m gpu` (no fx-lsp process holds the GPU;
# export and compile verdicts against real torch on CUDA; attention's kernel choices on real
# CUDA tensors), the driver-load and accelerator-guard tests with a GPU visible.
#
#   bash scripts/gpu-checks.sh [OUTPUT_FOLDER]     (default: $OUT, else gpu-checks-out)
#
# fx-lsp's dependencies the GPU machine lacks travel as wheels in .whl (built for its Python:
# `pip download --no-deps --only-binary=:all: --python-version 3.12 ...`); fx-lsp itself runs
# from this checkout. Each step has its own time limit and writes its own log, so a step that
# runs long leaves the others' results.
set -u
out=${1:-${OUT:-gpu-checks-out}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD"
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/fx-lsp-site .whl/*.whl || exit 1
    export PYTHONPATH="$PWD:/tmp/fx-lsp-site"
fi
{ nvidia-smi -L; python3 -c "import sys, torch; print('torch', torch.__version__, 'CUDA',
torch.version.cuda, 'Python', sys.version.split()[0])"; nproc; } > "$out/machine.txt" 2>&1
started=$SECONDS

# Real torch on the GPU for every class of the three corpora, and fx-lsp beside it.
timeout 330 python3 -m benchmarks run gpu gpu_answers -- --record "$out/answers.json" \
    > "$out/answers.log" 2>&1 &
# The GPU tier: fx-lsp watched with nvidia-smi, then real torch on the GPU; attention's
# kernel choices on real CUDA tensors.
timeout 330 python3 -m pytest -o addopts= -m gpu -n 2 -p no:cacheprovider --timeout 320 -rA \
    tests/fxcore/worker/devices/test_gpu_tier.py tests/fxcore/worker/devices/test_gpu_attention.py \
    > "$out/pytest-gpu.log" 2>&1 &
# The loader's log of every process of a check, with a GPU and its driver there.
timeout 330 python3 -m pytest -o addopts= -m "" -n 2 -p no:cacheprovider --timeout 320 -rA \
    tests/fxcore/worker/devices/test_driver_loads.py \
    tests/fxcore/worker/devices/test_accelerator_guard.py > "$out/pytest-driver.log" 2>&1 &
wait
echo "all steps: $((SECONDS - started)) s" >> "$out/machine.txt"
cp docs/benchmarks/gpu.md "$out/benchmarks-gpu.md"
tail -n 3 "$out"/*.log
