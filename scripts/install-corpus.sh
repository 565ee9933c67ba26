#!/usr/bin/env bash
# Import-time dependencies of the libraries benchmarks/fidelity/repo_coverage.py checks (kornia,
# torch_geometric, fair-esm; for inferred input sizes pytorchcv, vector-quantize-pytorch,
# pytorch-forecasting, x-transformers), each with --no-deps so that nothing resolves a plain
# `torch` (torch-einops-utils, lightning and torchmetrics declare torch; the installed CPU torch
# is what they get). Run after scripts/install-thirdparty.sh (which brings huggingface_hub,
# safetensors, numpy, pillow, requests, einops, ...). The libraries themselves are not
# installed: the benchmark unpacks their source distributions as a user's checkout.
# pytorchcv needs only numpy and requests. lightning declares pytorch-lightning, which it does
# not import (it ships its own copy as lightning.pytorch): not installed.
# For export and compile coverage (benchmarks/fidelity/pt2_library_coverage.py): vit-pytorch needs
# einops >= 0.8.2 (and torchvision, which its package imports and the benchmark shims);
# efficientnet-pytorch needs torch alone.
set -euo pipefail
PY="${PYTHON:-python3}"
PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --quiet --no-deps \
    "kornia_rs==0.2.0" "xxhash==4.1.0" "psutil" "jinja2" "markupsafe" "pyparsing" \
    "einx==0.4.3" "frozendict==2.5.1" "sympy" "loguru==0.7.3" "torch-einops-utils==0.2.0" \
    "lightning==2.6.6" "lightning-utilities==0.15.3" "torchmetrics==1.9.0" \
    "typing-extensions" "pyyaml" "fsspec" "tqdm" "packaging" \
    "pandas==3.0.6" "python-dateutil" "pytz" "tzdata" \
    "scikit-learn==1.9.1" "scipy" "joblib==1.6.0" "threadpoolctl==3.8.0" "narwhals==2.29.0" \
    "scikit-base==1.0.2" "einops>=0.8.2" \
    2> >(grep -v "^WARNING: Location 'file:" >&2)
echo "corpus dependencies installed"
