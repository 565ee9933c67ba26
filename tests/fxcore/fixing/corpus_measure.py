"""One corpus file measured by real torch on the CPU: for each class of its ``INPUTS``, built
with seeded weights and called on seeded inputs, the eager output, the output of
``torch.compile`` (a recording backend that runs the captured graphs as they are) and the graph
breaks dynamo logged (``compile_ground_truth.parse_break``: its own registry's codes).

A file in a package is imported as the package's module, its top folder on ``sys.path``.
Run in a process of its own, so that the file before and after its fixes import apart:
``python corpus_measure.py FILE OUT.pt [BACKEND]`` (a backend torch names, ``aot_eager``,
instead of the recording one); prints ``{class: {"breaks": [[line, code], ...], "graphs": n,
"error": str|null, "options": {option: value}}}`` as JSON, ``options`` the config options a fix
may set as they are once the compiled call has returned, and saves the outputs to ``OUT.pt``.
"""

from __future__ import annotations

import importlib
import json
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "thirdparty"))

from compile_ground_truth import _break_logger, _BreakLog, parse_break

#: The seeds of the weights and of the inputs (the corpus convention's) and of each call.
WEIGHTS_SEED, INPUTS_SEED, CALL_SEED = 0, 1, 2


def _tensor(spec: str) -> Any:
    """A tensor of ``spec`` as the corpus convention draws it (``break_corpus/__init__.py``):
    floating point ``randn``, integers ``randint(0, 4)``, booleans ``rand > 0.5``."""
    import torch

    dtype, _, shape = spec.partition("[")
    sizes = [int(size) for size in shape.rstrip("]").split(",") if size.strip()]
    if dtype == "bool":
        return torch.rand(sizes) > 0.5
    if dtype.startswith(("int", "uint")):
        return torch.randint(0, 4, sizes, dtype=getattr(torch, dtype))
    return torch.randn(sizes, dtype=getattr(torch, dtype))


def _seed(seed: int) -> None:
    """Seed every generator a model may draw from: torch's, Python's and numpy's (Wav2Vec2's
    time masks are drawn with numpy)."""
    import random

    import torch

    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(seed)


def _importable(path: Path) -> str:
    """The dotted name of the file ``path`` (a package's module when its folder is one), its
    top folder put on ``sys.path``."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    sys.path.insert(0, str(folder))
    return ".".join(parts)


#: The ``torch._dynamo.config`` options the value fixes set, read after each compiled call.
OPTIONS = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops")


def measure(path: str, named_backend: str | None = None
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    import torch

    if named_backend == "inductor":
        # Eager's random numbers, not inductor's own generator's: the outputs of a class that
        # draws (a layer drop) compare with its eager ones.
        import torch._inductor.config

        torch._inductor.config.fallback_random = True
    module = importlib.import_module(_importable(Path(path).resolve()))
    found: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    logger = _break_logger()
    for name, specs in module.INPUTS.items():
        _seed(WEIGHTS_SEED)
        model = getattr(module, name)()
        # Eval mode, but for the classes a file lists in ``TRAINING`` (random layer drop).
        model.train(name in getattr(module, "TRAINING", ()))
        _seed(INPUTS_SEED)
        inputs = {argument: _tensor(shape) for argument, shape in specs.items()}
        _seed(CALL_SEED)  # each call draws the same random numbers
        with torch.no_grad():
            eager = model(**{k: v.clone() for k, v in inputs.items()})
        log, graphs, error, compiled = _BreakLog(), [], None, None

        def backend(graph_module: Any, inputs: Any, graphs: list = graphs) -> Any:
            graphs.append(graph_module)
            if named_backend is not None:
                return torch._dynamo.lookup_backend(named_backend)(graph_module, inputs)
            return graph_module.forward

        torch._dynamo.reset()
        logger.addHandler(log)
        _seed(CALL_SEED)
        try:
            with torch.no_grad():
                compiled = torch.compile(model, backend=backend)(
                    **{k: v.clone() for k, v in inputs.items()})
        except Exception as exc:  # a compile error is a finding: reported, compared
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        finally:
            logger.removeHandler(log)
        breaks = sorted({(parsed["line"], parsed["code"]) for message in log.messages
                         if (parsed := parse_break(message)) is not None})
        found[name] = {"breaks": breaks, "graphs": len(graphs), "error": error,
                       "options": {option: getattr(torch._dynamo.config, option)
                                   for option in OPTIONS}}
        outputs[name] = {"eager": eager, "compiled": compiled}
    return found, outputs


def main(argv: list[str]) -> int:
    import torch

    warnings.filterwarnings("ignore")
    found, outputs = measure(argv[0], argv[2] if len(argv) > 2 else None)
    torch.save(outputs, argv[1])
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
