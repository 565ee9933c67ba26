#!/usr/bin/env bash
# Import-time dependencies of the libraries benchmarks/repo_coverage.py checks (kornia,
# torch_geometric, fair-esm), each with --no-deps so that nothing resolves a plain `torch`.
# Run after scripts/install-thirdparty.sh (which brings huggingface_hub, safetensors, numpy,
# pillow, requests, ...). The libraries themselves are not installed: the benchmark unpacks
# their source distributions as a user's checkout.
set -euo pipefail
PY="${PYTHON:-python3}"
PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --quiet --no-deps \
    "kornia_rs==0.2.0" "xxhash==4.1.0" "psutil" "jinja2" "markupsafe" "pyparsing" \
    2> >(grep -v "^WARNING: Location 'file:" >&2)
echo "corpus dependencies installed"
