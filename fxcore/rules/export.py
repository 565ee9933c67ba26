"""Failures of torch.export (export mode, FX401-FX499): where non-strict
``torch.export.export`` on fake inputs needs real data (a data-dependent guard, a tensor
turned into Python data), a configured dynamic dimension the code specialises (or, without
configuration, a batch or sequence dimension: FX407, a warning), what fails
only under strict export (with ``export-strict = true``), and any other error that ended the
export; and where fx-lsp's export on the meta device could not go on although real torch
would (FX404, information: no verdict)."""

from fxcore.rules.rule import Rule, not_checkable_rule, not_fitting_rule, raises_everywhere_rule


def _export_error(code: str, kind: str, docs: str) -> Rule:
    """An export failure: an error of one kind (all of this family's codes)."""
    return Rule(code=code, kinds=(kind,), severity="error", mode="export", docs=docs)


FX401 = _export_error(
    "FX401",
    "export-data-dependent",
    """\
**Control flow on tensor data under torch.export.** A condition that depends on the values of
a tensor (a data-dependent guard) cannot be decided while exporting: torch.export raises
`GuardOnDataDependentSymNode` and stops. The message names the expression torch could not
decide (`Eq(u0, 1)` is "this boolean tensor is True"; `u0 > 3` compares a data-dependent size).

```python
if x.sum() > 0:                    # FX401 on `x.sum() > 0`
    x = x + 1
while x.max() > 1:                 # FX401 on `x.max() > 1`
    x = x / 2
```

fx-lsp assumes the condition True the first time it meets a line and False after that (so a
`while` ends), and goes on, so one check finds every such place; a later finding says which
assumptions came before it. Where the code itself decides a condition on Python numbers taken
from tensors (`n = t.item(); if n > 2:`, `assert n > 2`, `if y.shape[0] > 3:` after
`y = x[mask]`), the message says so and, as torch's own data-dependent errors do, gives the
`torch._check` lines that state it in the code's names: the one fx-lsp assumed first, then its
negation (`torch._check(n > 2)` or `torch._check(n <= 2)`). Only symbols that are local
variables of that frame (`n`, `y.shape[0]`) are named; otherwise no line is given.

Fix: `torch.cond(pred, true_fn, false_fn, (x,))` for a real branch, `torch.where` for a
choice between values, or `torch._check(...)` to tell torch what holds. Quick fixes, all
unsafe:

- `torch._check(<the guard>)` on a line of its own before the statement (an `if`, not an
  `elif` or a loop's header; an `assert`; a plain statement that always evaluates the guard),
  the guard fx-lsp assumed first (in the editor, its negation too, but for an `assert`):
  torch.export then knows it holds there, and the code raises `RuntimeError` where it does not;
- an `if` on tensor data whose branches each only assign the same names (`y = ...`), or each
  only `return` a value, becomes `y = torch.cond(pred, lambda: ..., lambda: ...)`: both
  branches are then in the graph (a value a branch leaves unchanged is cloned, as torch.cond
  refuses outputs that alias inputs). Branches that return may be an `if`/`elif`/`else` chain
  (nested `torch.cond` calls) or an early return, `if pred: return a` followed in its block by
  `return b` (or by another such `if`): `return torch.cond(pred, lambda: a, lambda: b)`.
  Offered only where each condition is one comparison or an `.all()`/`.any()`, no branch has
  an effect of its own (`print`, an in-place `add_`, `:=`), nothing else stands between an
  early return and its fall-through, and a name one branch leaves alone was bound before the
  `if`; torch.cond also needs every branch to give tensors of one shape and dtype, which
  fx-lsp's check after the edit shows. On a guard on Python numbers, the `torch._check` comes
  first: a branch that reads such a number does not export inside torch.cond;
- an `assert` on a tensor becomes `torch._assert_async(cond, "message")`, a check the
  exported program keeps (it raises `RuntimeError` instead of `AssertionError`, and
  `python -O` keeps it); an `assert` on Python numbers gets `torch._check` instead, as
  `torch._assert_async` takes a tensor.
""",
)


FX402 = _export_error(
    "FX402",
    "export-python-data",
    """\
**A tensor turned into Python data under torch.export.** `int(t)`, `float(t)`, `t.item()`
used as a Python number, or `t.numpy()`: the value is known only with real data.

```python
n = int(x.sum().item())            # FX402 on `int(x.sum().item())`
a = x.numpy()                      # FX402 (ends the export)
```

fx-lsp assumes the number is 1 to check the rest of `forward`.

Fix: keep the value a tensor, or take the number with `torch.sym_int(t.item())` or
`torch.sym_float(t.item())` instead of `int()` or `float()`: the same number when run, a
symbol torch.export can keep (a quick fix does it). `torch._check(n >= 0)` and the like
tell torch the bounds it needs; where the code then branches on such a number
(`if n > 2:`), the FX401 there names the `torch._check` line, and a quick fix
inserts it.
""",
)


FX403 = _export_error(
    "FX403",
    "export-dynamic-constraint",
    """\
**A dynamic dimension the code does not keep dynamic.** With `dynamic` dimensions configured
for the class (`[tool.fx-lsp.modules."pkg.mod:Net"] dynamic = {x = {0 = "batch"}}`, or with
bounds `{x = {0 = {name = "batch", min = 2, max = 64}}}`), fx-lsp exports with
`dynamic_shapes` of `torch.export.Dim`s, and torch.export refuses a dimension that the code
specialises to a constant or allows only in a narrower range. Reported at the line whose
guard did it, with the fix torch suggests.

```python
if x.shape[0] == 4:                # FX403: batch specialised to 4
    ...
assert x.shape[0] <= 16            # FX403: torch suggests Dim('batch', max=16)
```

Fix: make the code work for every size in the range, or narrow the range (or make the
dimension static) as torch suggests; a quick fix makes torch's suggestion in `dynamic`
(unsafe: the export is then checked for that range, or that size, only).
""",
)


FX407 = Rule(
    code="FX407",
    kinds=("export-batch-specialised",),
    severity="warning",
    mode="export",
    docs="""\
**A batch or sequence dimension the code specialises.** Without any `dynamic` configuration, a
class that exports whole is exported once more with the batch dimension of each tensor input
dynamic (of size 2 or more), as `torch.export.export(..., dynamic_shapes={"x": {0: Dim.AUTO}})`
exports it, and its sequence dimension too where the input's source says which that is: token
ids to an `nn.Embedding` (batch, sequence), the input of an `nn.LSTM`, `nn.GRU`,
`nn.MultiheadAttention` or `nn.TransformerEncoderLayer` (by its `batch_first`), a shape
`forward` documents or annotates (`Float[Tensor, "batch seq dim"]`), or configured inputs
(`inputs = {ids = "int64[batch=4, seq=16]"}`) naming `seq`, `seq_len`, `time`, `timesteps`,
`length` or `tokens`. Where the code fixes one of them to its example size, `Dim.AUTO` does so
silently and the exported program takes only that batch size or length: FX407 is at the line
whose guard did it, naming the dimension, with torch's suggested fix and the `dynamic_shapes`
it makes.

```python
if x.shape[0] == 4:                # FX407: the batch of x specialised to 4
    ...
return x.view(4, 8)                # FX407: a [4, 8] view of x[4, 8]
h = self.embed(ids) + self.positions[:, :16]  # FX407: the sequence of ids specialised to 16
```

A range torch narrows (`assert x.shape[0] <= 16`) or inputs whose batches must be equal are no
specialisation: `Dim.AUTO` exports them with the batch dynamic. torch's own `nn.LSTM` and
`nn.GRU` are exported step by step on the CPU (torch 2.13), which fixes the sequence length:
FX407 at their call. With `dynamic` configured for the class, its dimensions are checked as
configured instead (FX403); `dynamic = {}` says the shapes are meant static, and
turns FX407 off for the class.

Fix: make the code work for any batch size or length (`x.shape[0]` or `x.shape[1]` where a
number was written, `-1` in `view`/`reshape`, a positional table sliced to `ids.shape[1]`),
or, where the size is meant to be fixed, export with `Dim.STATIC` or the size as torch
suggests.
""",
)


FX405 = Rule(
    code="FX405",
    kinds=("export-strict-only",),
    severity="error",
    mode="export",
    message="Fails only under strict export: torch.export.export(..., strict=True) traces "
            "forward with dynamo, which cannot follow this line, while non-strict export runs "
            "it as Python. {detail}",
    docs="""\
**Fails only under strict export.** With `export-strict = true` under `[tool.fx-lsp]` (or the
editor setting `fxLsp.exportStrict`), the export mode also exports each class with
`torch.export.export(model, (), inputs, strict=True)`, as ExecuTorch and older export flows
do. Strict export does not run `forward` as Python: dynamo traces its bytecode, and stops at
what it cannot follow (a C function or builtin it does not know, a context manager, some
third-party calls), where non-strict export goes through. FX405 is the first such line, with
dynamo's explanation and, for a graph break, PyTorch's code (`fx-lsp explain GB0007`).

```python
started = time.perf_counter()      # FX405: dynamo cannot trace the builtin
with self.lock:                    # FX405: a context manager dynamo does not support
    ...
```

Strict export stops at its first failure; a line that non-strict export already reports
(FX401, FX499, ...) is not reported again, and what fails only under strict export after it
shows once that line is fixed.

Fix: keep such code out of `forward` (compute it in `__init__`, or outside the model), use
torch operations instead, wrap a third-party call into a custom operator
(`torch.library.custom_op`), or export with `strict=False` (torch.export's default).
""",
)


FX404 = not_checkable_rule("FX404", "export", """\
**Information: not checkable without real data (export).** fx-lsp builds the class on the
meta device, without weights, and exports it on tensors without data. At this line torch
needs what only real tensors have, where torch.export on the CPU with real weights and inputs
goes on: an operator without a meta kernel (`torch.geqrf`, `torch.histogram`, `to_sparse` on
a tensor fx-lsp could not fake), a meta tensor's value (`int(t)`, `t.cpu()`), or a meta
tensor beside CPU ones (one held in a list rather than as a parameter, buffer or tensor
attribute). This is no verdict: the class is "not checked" under export, and nothing after
this line was checked. The editor shows FX404 at this line as information, and the class's
verdict (hover, code lens) says why; `fx-lsp check` notes the class as not traced, naming this
line (in JSON: the class's `status`, `reason` and `failures`), and reports FX404 itself only
when `select` names it in full (`select = ["FX", "FX404"]`): it never fails a run.

```python
self.tables = [torch.eye(4)]            # in __init__: a list, so it stays on meta
q = torch.geqrf(self.tables[0])[0]      # FX404: aten::geqrf has no meta kernel
```

An operator that real torch.export rejects too stays FX499: a `torch.library.custom_op`
without `register_fake`, or one whose output shape or value depends on the data
(`torch.equal`, `torch.linalg.lstsq`).

Fix: nothing is wrong with the code. A tensor held as a buffer
(`self.register_buffer("table", t, persistent=False)`) rather than in a list or dict is one
fx-lsp fakes, which lets it check on; otherwise run torch.export on real inputs to check the
rest.
""")


FX499 = Rule(
    code="FX499",
    # "export-untraced-constant": a tensor export did not trace, which real inputs make it
    # reject although the fake inputs fx-lsp exports with do not; an error of export alone,
    # never of fx-lsp's own choices for the class (``fxcore.worker.inputs.eager_runs.own_choices``).
    kinds=("export-error", "export-untraced-constant"),
    severity="error",
    mode="export",
    docs="""\
**Any other error ended torch.export.** The exception is reported at the innermost line of
your code it was raised from, for example an operation torch.export does not support, or an
error in your code that shows up only on symbolic shapes.

It is also reported at the first line that uses a tensor torch.export did not trace (one read
through `.data`, also in an `autograd.Function`'s forward, `out.set_(weight.data)`): the exported
program would hold it as a constant without data, and torch.export on real inputs raises
`RuntimeError: We found a fake tensor in the exported program constant's list`. fx-lsp exports
on fake inputs, where torch lets such a constant through, so it makes that check itself.

```python
return y + self.proj.bias.data     # FX499: use self.proj.bias, or .detach()
```

Fix: read the message; torch.export's troubleshooting guide
(https://pytorch.org/docs/stable/export.html) lists the common causes. For a tensor torch.export
did not trace, use the tensor itself, or `.detach()`, instead of `.data`.
""",
)


FX406 = not_fitting_rule("FX406", "export", "FX499",
                         "FX105 under torch.fx and FX504 under torch.compile")


FX408 = raises_everywhere_rule("FX408", "export",
                               "FX509 under torch.compile and FX606 under torch.onnx")


RULES = (FX401, FX402, FX403, FX404, FX405, FX406, FX407, FX408, FX499)
