"""Real torch's answers for the export and compile corpora (tests/corpus/{export,compile}),
computed in this test run on the installed torch, never recorded from one release: the
scripts that compute them (scripts/{export,compile}_ground_truth.py) are called here, for one
class at a time, once per run (one pytest-xdist process computes, the others read its file),
the first time a test needs that class's answer. The keys (``file.py:Class``) are read without
computing anything, so tests can be parametrized over them. Export answers are computed in a
child process (``forked_answer``): real torch may crash, and a corpus file it executes again
must not redefine the custom operators the test process's copy of the file uses. Compile
answers stay in this process: forked children of a process that has compiled hung at no CPU
under load (a fork copies locks its threads hold); the risk left is needs_real_data.py's custom
operator, redefined by a second execution, as the export corpus's was when it crashed."""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from forked_answer import forked_answer
from once_per_run import once_per_run
from source_modules import load_module

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@functools.cache
def _script(name: str) -> ModuleType:
    # Under a name of its own: tests/thirdparty has modules of the scripts' names, which
    # the benchmarks import, and a script registered under its own name would stand in.
    return load_module(SCRIPTS / f"{name}.py", f"scripts_{name}")


class Answers(Mapping[str, dict[str, Any]]):
    """``file.py:Class`` -> real torch's answer, computed for that class on first use: a
    test run that compares some classes (a torch series' shard of the matrix) pays for
    those alone."""

    def __init__(self, name: str, keys: list[str],
                 compute: Callable[[str], dict[str, dict[str, Any]]]):
        self._name = name
        self._keys = keys
        self._compute = compute
        self._known: dict[str, dict[str, Any]] = {}

    def __getitem__(self, key: str) -> dict[str, Any]:
        if key not in self._keys:
            raise KeyError(key)
        if key not in self._known:
            self._known[key] = once_per_run(
                f"real-torch-{self._name}-{key.replace(':', '-')}",
                lambda: self._compute(key)[key])
        return self._known[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def _quietly(compute: Callable[[], Any]) -> Any:
    # Not logging.disable: the compile answers are read from dynamo's graph_breaks log.
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")  # the corpora print and warn, on purpose
        return compute()


@functools.cache
def _export_warmed_up() -> None:
    """torch.export's first runs in this process, on a class of no corpus: what it imports and
    caches on first use is then the children's from the fork, where each child paid it again
    (8 export answers took 56 s forked against 10 s in this process)."""
    import torch

    class Tiny(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.relu() + 1

    def warm_up() -> None:
        x = torch.ones(2, 3)
        for strict in (False, True):
            torch.export.export(Tiny(), (x,), strict=strict)
        torch.export.export(Tiny(), (x,), dynamic_shapes={"x": {0: torch.export.Dim.AUTO}})
        torch.export.draft_export(Tiny(), (x,))

    _quietly(warm_up)


def export_in_child(compute: Callable[[], dict[str, dict[str, Any]]], what: str
                    ) -> dict[str, dict[str, Any]]:
    """``compute()``, real torch.export's answers, in a child process (``forked_answer``),
    without the prints and warnings of the code it runs."""
    _export_warmed_up()
    return forked_answer(lambda: _quietly(compute), what)


def ground_truth_script(corpus: str) -> ModuleType:
    """scripts/{corpus}_ground_truth.py (``export``, ``compile``), loaded once."""
    return _script(f"{corpus}_ground_truth")


def compile_answers() -> Answers:
    script = _script("compile_ground_truth")
    keys = [f"{path.name}:{name}" for path in sorted(script.CORPUS.glob("*.py"))
            for name in script.corpus_classes(path)]
    return Answers("compile", keys,
                   lambda key: _quietly(lambda: script.ground_truth(only={key})))


def export_answers() -> Answers:
    script = _script("export_ground_truth")
    keys = [f"{path.name}:{name}" for path in sorted(script.CORPUS.glob("*.py"))
            for name in script.load(path).EXAMPLE_INPUTS]
    return Answers("export", keys,
                   lambda key: export_in_child(lambda: script.ground_truth(only={key}),
                                               f"the answer for {key}"))


def dynamic_export_keys() -> list[str]:
    """The export corpus's classes spelled with ``dynamic`` shapes (its ``DYNAMIC_SHAPES``)."""
    script = _script("export_ground_truth")
    return [f"{path.name}:{name}" for path in sorted(script.CORPUS.glob("*.py"))
            for name in getattr(script.load(path), "DYNAMIC_SHAPES", {})]


def export_errors(path: Path, inputs: dict[str, dict[str, str]]
                  ) -> dict[str, dict[str, str | None]]:
    """For a workspace file that is not the corpus: class -> ``{"non-strict": ..., "strict":
    ...}``, what real ``torch.export.export(model, (), inputs, strict=...)`` raises on the CPU
    for a fresh instance with real weights and real tensors of ``inputs`` (the message of
    its error, as export_ground_truth.py makes them), None where it exports."""
    import torch

    script = _script("export_ground_truth")

    def errors() -> dict[str, dict[str, str | None]]:
        module = script.load(path)  # in the child, as the answers are computed

        def error(name: str, strict: bool) -> str | None:
            torch.manual_seed(0)
            try:
                torch.export.export(getattr(module, name)(), (),
                                    script.real_inputs(inputs[name]), strict=strict)
            except Exception as raised:  # the answer: whatever real export raises
                return f"{type(raised).__name__}: {raised}"
            return None

        return {name: {"non-strict": error(name, False), "strict": error(name, True)}
                for name in inputs}

    return export_in_child(errors, f"the export errors of {path.name}")


def compile_answers_of(path: Path) -> dict[str, dict[str, Any]]:
    """For a workspace file that is not the corpus: class -> real ``torch.compile``'s answer
    on the CPU for a fresh instance on real float32[2, 8] tensors, as
    compile_ground_truth.py gives it for the corpus: ``{"breaks": [[line, GB code], ...],
    "graphs": n}``, lines in ``path``."""
    script = _script("compile_ground_truth")
    path = path.resolve()
    return _quietly(lambda: {name: script.compile_on_cpu(cls, path)
                             for name, cls in script.corpus_classes(path).items()})
