"""The environment workspace code runs with: an allowlist, not the caller's whole environment.

An editor or a CI job holds tokens and credentials in its environment (``GITHUB_TOKEN``,
``AWS_SECRET_ACCESS_KEY``...), and workspace code can write whatever it reads into the
workspace, a report or the cache, for a later step to carry out. So the zygote, whose forked
children run that code, starts with only what Python, torch and the usual numeric and ML
libraries read (``ALLOWED_NAMES``, ``ALLOWED_PREFIXES``), less anything that names a secret
(``SECRET_PARTS``); a workspace adds names of its own under ``[tool.fx-lsp] pass-env`` (an
exact name, or a prefix ending in ``*``), sent with each of its jobs (``TraceJob.environment``)
and set in the child before the user's file is imported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: Exact names passed on: the interpreter, the user's home and locale, temporary folders.
ALLOWED_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "NO_COLOR",
    "TMPDIR", "TEMP", "TMP", "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONHASHSEED",
    "PYTHONWARNINGS", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONDONTWRITEBYTECODE",
    "PYTHONPYCACHEPREFIX", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "VIRTUAL_ENV", "CONDA_PREFIX",
    "LD_LIBRARY_PATH", "SOURCE_DATE_EPOCH",
    # The dynamic loader's own log (which object loaded which library): read at a process's
    # start, so only the zygote's environment gives it to the workers.
    "LD_DEBUG", "LD_DEBUG_OUTPUT",
})
#: Prefixes of names passed on: locale, torch, CUDA and the numeric libraries' threads,
#: caches (XDG, Hugging Face's cache folders, offline switches), fx-lsp's own switches.
ALLOWED_PREFIXES = (
    "LC_", "TORCH", "PYTORCH_", "CUDA_", "CUDNN_", "CUBLAS_", "NVIDIA_", "NCCL_", "TRITON_",
    "OMP_", "MKL_", "KMP_", "OPENBLAS_", "NUMEXPR_", "GOTO_", "XDG_", "HF_", "FX_LSP_",
)
#: Parts of a name that mark a secret, never passed on by a prefix (``HF_TOKEN``) unless a
#: workspace names it exactly.
SECRET_PARTS = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|(^|_)(API_)?KEY($|_)|AUTH")
#: Set in the zygote and in every worker whatever the caller's environment holds: no CUDA or
#: ROCm device visible, and torch's availability check through NVML, which counts devices
#: without initialising the driver. fx-lsp's processes never use the user's accelerators
#: (``fxcore.worker.devices.accelerator_guard``); code written for one is judged on fake
#: tensors of that device.
HIDDEN_DEVICES = {
    "CUDA_VISIBLE_DEVICES": "",
    "HIP_VISIBLE_DEVICES": "",
    "ROCR_VISIBLE_DEVICES": "",
    "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
}


def _allowed(name: str) -> bool:
    if name in ALLOWED_NAMES:
        return True
    return name.startswith(ALLOWED_PREFIXES) and SECRET_PARTS.search(name) is None


def zygote_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` the zygote (and so every worker) starts with, accelerators
    hidden."""
    return {**{name: value for name, value in environ.items() if _allowed(name)},
            **HIDDEN_DEVICES}


def passed_variables(entries: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` a workspace's ``pass-env`` entries name: exact names, and
    every name starting with an entry's prefix (``WANDB_*``) that does not name a secret. A
    secret is passed only when named in full: a committed ``pass-env = ["G*"]`` would
    otherwise hand workspace code the CI job's ``GITHUB_TOKEN``."""
    exact = {entry for entry in entries if not entry.endswith("*")}
    prefixes = tuple(entry[:-1] for entry in entries if entry.endswith("*"))
    return {name: value for name, value in environ.items()
            if name in exact or (prefixes and name.startswith(prefixes)
                                 and SECRET_PARTS.search(name) is None)}
