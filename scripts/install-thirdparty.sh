#!/usr/bin/env bash
# Install torchvision, timm and transformers for the third-party fidelity tests
# (tests/thirdparty), and segmentation-models-pytorch for the library benchmark
# (benchmarks/fidelity/pt2_library_coverage.py), without ever replacing the installed CPU torch.
#
#  * torchvision: the release whose metadata pins the installed torch (torch==X.Y.Z), found by
#    downloading candidate wheels with `pip download --no-deps` and reading their metadata.
#  * torchvision, timm, transformers and segmentation-models-pytorch are installed with --no-deps; their pure-Python
#    dependencies are installed by name, under a constraint that pins torch to the installed one.
#  * Idempotent: when everything is already there at the right versions it only checks.
#  * A venv made by uv (as scripts/test-torch-matrix.sh makes them) gets the same packages from
#    `uv pip`, which picks the torchvision that fits its torch itself (newer torchvision releases
#    ask for `torch>=X.Y.0`, not one pin) and links files from uv's one cache.
#  * Last, the three libraries are imported. PyPI's torchvision is built against PyPI's (CUDA)
#    torch; beside a CPU build of the same release (the local torch 2.13.0 file) its compiled
#    operators do not load and a plain `import torchvision` fails. That is said in one line; the
#    third-party test workspace defines the operators' schemas itself (tpmodels/_shim.py).
#
# Usage: scripts/install-thirdparty.sh   (env: PYTHON=python3, TIMM_VERSION, TRANSFORMERS_VERSION)
set -euo pipefail

PY="${PYTHON:-python3}"
TIMM_SPEC="timm${TIMM_VERSION:+==$TIMM_VERSION}"
TRANSFORMERS_SPEC="transformers${TRANSFORMERS_VERSION:+==$TRANSFORMERS_VERSION}"
# The release the library benchmark measures; it imports timm, huggingface_hub and safetensors.
SMP_SPEC="segmentation-models-pytorch==0.6.0"
# Pure-Python (no torch) dependencies of timm and transformers, pillow for torchvision, and
# einops (its layers are the usual third-party layer FX cannot trace through).
DEPS=(
  "numpy" "pillow!=8.3.*,>=5.3.0"
  "pyyaml>=5.1" "huggingface_hub>=1.31.0,<3.0" "safetensors>=0.8.0"
  "tokenizers>=0.23.1,<0.24.0" "regex>=2025.10.22" "tqdm>=4.60" "typer"
  "packaging>=20.0" "filelock" "fsspec" "requests" "einops"
)

# pip, without the noise of this machine's extra (absent) local indexes and the root warning.
pipq() {
  PIP_ROOT_USER_ACTION=ignore "$PY" -m pip "$@" 2> >(grep -v "^WARNING: Location 'file:" >&2)
}

torch_version() {
  "$PY" - <<'PY'
import importlib.metadata as m
print(m.version("torch"))
PY
}

TORCH_FULL="$(torch_version)"           # e.g. 2.13.0+cpu
TORCH_BASE="${TORCH_FULL%%+*}"          # e.g. 2.13.0
echo "torch installed: $TORCH_FULL"
CONSTRAINTS="$(mktemp)"
trap 'rm -f "$CONSTRAINTS"' EXIT
echo "torch==$TORCH_FULL" >"$CONSTRAINTS"

# Can the three libraries be imported beside this torch? Prints the first error's last line.
import_check() {
  "$PY" - <<'PY'
import sys
try:
    import torchvision, timm, transformers  # noqa: F401
except Exception as error:  # a broken build raises RuntimeError/OSError, not ImportError
    print(f"{type(error).__name__}: {error}".splitlines()[0])
    sys.exit(3)
PY
}
finish() {
  local error
  if ! error="$(import_check)"; then
    echo "note: a plain 'import torchvision' fails beside torch $TORCH_FULL ($error):" \
         "its compiled operators need PyPI's build of that torch; tests/thirdparty's workspace" \
         "defines their schemas itself (tpmodels/_shim.py)"
  fi
  echo "ok: $("$PY" -c 'import importlib.metadata as m; print(", ".join(f"{d} {m.version(d)}" for d in ("torch", "torchvision", "timm", "transformers")))')"
}

made_by_uv() {
  "$PY" -c 'import sys, pathlib; sys.exit("uv =" not in (pathlib.Path(sys.prefix) / "pyvenv.cfg").read_text() if (pathlib.Path(sys.prefix) / "pyvenv.cfg").exists() else 1)'
}
if made_by_uv; then
  UV=(uv)
  command -v uv >/dev/null || UV=(python3 -m uv)
  "${UV[@]}" pip install --quiet --python "$PY" --constraint "$CONSTRAINTS" torchvision "${DEPS[@]}"
  "${UV[@]}" pip install --quiet --python "$PY" --no-deps "$TIMM_SPEC" "$TRANSFORMERS_SPEC" "$SMP_SPEC"
  finish
  exit 0
fi
# The checks below read requirement specifiers with `packaging`.
"$PY" -c "import packaging.requirements" 2>/dev/null || pipq install -q -c "$CONSTRAINTS" packaging

# Does the installed distribution $1 exist (prints version or nothing)?
installed_version() {
  "$PY" - "$1" <<'PY'
import importlib.metadata as m, sys
try:
    print(m.version(sys.argv[1]))
except m.PackageNotFoundError:
    pass
PY
}

# Does the installed torchvision require exactly torch==$TORCH_BASE?
installed_tv_matches() {
  "$PY" - "$TORCH_BASE" <<'PY'
import importlib.metadata as m, re, sys
try:
    reqs = m.requires("torchvision") or []
except m.PackageNotFoundError:
    sys.exit(1)
for r in reqs:
    if re.match(r"^torch\s*\(?\s*==\s*" + re.escape(sys.argv[1]) + r"\s*\)?\s*$", r.split(";")[0].strip()):
        sys.exit(0)
sys.exit(1)
PY
}

# Read the torch pin out of a wheel's METADATA.
wheel_torch_pin() {
  "$PY" - "$1" <<'PY'
import re, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    for line in z.read(name).decode().splitlines():
        m = re.match(r"Requires-Dist:\s*torch\s*\(?\s*([^;)]*)", line)
        if m:
            print(m.group(1).strip().replace(" ", ""))
            break
PY
}

if installed_tv_matches; then
  echo "torchvision $(installed_version torchvision) already installed and pins torch==$TORCH_BASE"
else
  echo "looking for the torchvision release that pins torch==$TORCH_BASE ..."
  versions="$("$PY" -m pip index versions torchvision 2>/dev/null | sed -n 's/^Available versions: //p' | tr -d ',')"
  [ -n "$versions" ] || { echo "cannot list torchvision versions" >&2; exit 1; }
  dl="$(mktemp -d)"
  found=""
  for v in $versions; do
    rm -f "$dl"/*.whl
    pipq download -q --no-deps --only-binary=:all: -d "$dl" "torchvision==$v" 2>/dev/null || continue
    whl="$(ls "$dl"/*.whl | head -1)"
    pin="$(wheel_torch_pin "$whl")"
    echo "  torchvision $v requires torch $pin"
    if [ "$pin" = "==$TORCH_BASE" ]; then found="$whl"; break; fi
    # Releases are pinned to one torch each; once we are below our torch there is no match.
    case "$pin" in ==*) older="$("$PY" -c "from packaging.version import Version as V; import sys; print(V(sys.argv[1]) < V(sys.argv[2]))" "${pin#==}" "$TORCH_BASE")"
                       [ "$older" = True ] && break ;; esac
  done
  [ -n "$found" ] || { echo "no torchvision release pins torch==$TORCH_BASE" >&2; exit 1; }
  pipq install -q --no-deps "$found"
  rm -rf "$dl"
fi

# Pure-Python dependencies (never torch: the constraint pins it to the installed build).
if "$PY" - "${DEPS[@]}" <<'PY'
import importlib.metadata as m, sys
from packaging.requirements import Requirement
for spec in sys.argv[1:]:
    r = Requirement(spec)
    try:
        v = m.version(r.name)
    except m.PackageNotFoundError:
        sys.exit(1)
    if not r.specifier.contains(v, prereleases=True):
        sys.exit(1)
PY
then
  echo "dependencies already satisfied"
else
  pipq install -q -c "$CONSTRAINTS" "${DEPS[@]}"
fi

for spec in "$TIMM_SPEC" "$TRANSFORMERS_SPEC" "$SMP_SPEC"; do
  name="${spec%%==*}"
  have="$(installed_version "$name")"
  want="${spec#*==}"; [ "$want" = "$spec" ] && want=""
  if [ -n "$have" ] && { [ -z "$want" ] || [ "$have" = "$want" ]; }; then
    echo "$name $have already installed"
  else
    pipq install -q --no-deps "$spec"
  fi
done

after="$(torch_version)"
if [ "$after" != "$TORCH_FULL" ]; then
  echo "ERROR: torch changed from $TORCH_FULL to $after" >&2
  exit 1
fi
# pip check, restricted to what we installed: every requirement of these distributions holds.
"$PY" - <<'PY'
import importlib.metadata as m, sys
from packaging.requirements import Requirement
bad = []
for dist in ("torchvision", "timm", "transformers", "huggingface_hub", "safetensors", "tokenizers"):
    for req in m.requires(dist) or []:
        r = Requirement(req)
        if r.marker and not r.marker.evaluate({"extra": ""}):
            continue
        try:
            v = m.version(r.name)
        except m.PackageNotFoundError:
            bad.append(f"{dist}: missing {req}")
            continue
        if not r.specifier.contains(v, prereleases=True):
            bad.append(f"{dist}: {r.name} {v} does not satisfy {req}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
finish
