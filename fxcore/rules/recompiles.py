"""Recompilations of ``torch.compile`` across calls (compile mode): what the loop of calls
(``fxcore.worker.capture.compile.recompile_loop``) finds beyond automatic dynamic shapes, at the
user's line, in PyTorch's words (the guard that failed, as ``TORCH_LOGS=recompiles`` prints it,
and torch's own hint where it gives one)."""

from fxcore.rules.rule import Rule

FX505 = Rule(
    code="FX505",
    kinds=("recompiles-every-call",),
    severity="warning", mode="compile",
    message="torch.compile recompiles on every call: {detail}",
    docs="""\
**`torch.compile` compiles the frame again on every call, reaches `recompile_limit` (8) and
then runs it eagerly, without warning beyond one log line.** fx-lsp calls the compiled module
again with the same inputs, as a training or serving loop does, and each call failed a guard
that the previous call's code changed: the diagnostic is at the line where the guarded value
comes from, with the guard as PyTorch prints it (`TORCH_LOGS=recompiles`) and its hint.

```python
def forward(self, x):
    self.step += 1          # FX505: self.step == 7 (an integer attribute is static)
    return self.lin(x) * (0.5 if self.step % 2 else 1.0)
```

Fix: as PyTorch's hint says: make integer attributes dynamic
(`torch._dynamo.config.allow_unspec_int_on_nn_module = True`, before the model compiles). Where
the hint names that option, the quick fix (and `fx-lsp check --fix --unsafe-fixes`) sets it
after the file's imports; unsafe, since it holds for every `torch.compile` in the process. On
the corpus, real torch then compiles `StepCounter` 3 frames in 12 calls, where it reached the
limit (8) before. The hint's other way, a counter kept in a tensor buffer
(`self.register_buffer("step", torch.zeros((), dtype=torch.long))`), is no quick fix: a counter
read as a Python number then breaks the graph (a branch on it) or leaves no graph at all (a
slice bound).
""",
)

FX506 = Rule(
    code="FX506",
    kinds=("recompiles-every-size",),
    severity="warning", mode="compile",
    message="torch.compile recompiles for every new size of {detail}",
    docs="""\
**`torch.compile` compiles again for every new size of an input's dimension.** A new batch
size or sequence length normally costs one recompilation, after which the dimension is dynamic
(automatic dynamic shapes). Here fx-lsp called the compiled module with two new sizes of the
dimension and both compiled again: the code specialises the size, at this line (a loop
`range(x.shape[1])`, `torch.tensor(list(range(n)))`, a size used as a dict key, `int()` or
`.tolist()` of a size fed back into shapes). Once the limit (8) is reached, the frame runs
eagerly for new sizes.

Fix: compute with the size as a tensor operation (`torch.arange(x.shape[0])` rather than
`torch.tensor(list(range(...)))`), vectorise the loop, or pad inputs to a few fixed sizes;
`torch._dynamo.mark_dynamic(x, dim)` before the call makes torch report where it specialises.
The quick fix (unsafe) makes the first of these: `torch.tensor(list(range(...)), dtype=...)`
in the statement becomes `torch.arange(..., dtype=...)` (the same values; of an empty range
without `dtype`, int64 rather than float32); on the corpus, real torch then compiles
`TensorOfRange` 2 frames for 12 batch sizes, where it reached the limit (8) before. A cache
keyed by the size (`if n not in self.tables: self.tables[n] = ...`) gets the value computed on
every call instead, and a loop over a tensor's steps that stacks one result per step gets that
result computed on the whole tensor once, each only where it gives the same outputs (else the
`help:` line says why). No other: `torch.compile(..., dynamic=True)` compiles as many frames
(the code specialises the size again), and a dimension marked dynamic raises
`ConstraintViolationError`.
""",
)

FX507 = Rule(
    code="FX507",
    kinds=("recompiles-every-number",),
    severity="warning", mode="compile",
    message="torch.compile recompiles for every value of {detail}",
    docs="""\
**`torch.compile` compiles again for every value of a Python number argument of `forward`.**
A number that changes between calls normally costs one recompilation, after which it is
dynamic; here two new values both compiled again, because the code passes it where torch
specialises on the value (`F.interpolate(scale_factor=s)`, `F.dropout(p=p)`, `range(n)`). The
diagnostic is at that line, with the guard PyTorch prints.

Fix: pass the number as a tensor where the operation takes one, or keep it constant between
calls. No quick fix: `torch.compile(..., dynamic=True)` compiles as many frames, since the
operation specialises the value again.
""",
)

FX508 = Rule(
    code="FX508",
    kinds=("recompiles-every-length",),
    severity="warning", mode="compile",
    message="torch.compile recompiles for every new length of {detail}",
    docs="""\
**`torch.compile` compiles again for every new length of a list, tuple or dict of tensors that
`forward` takes.** Dynamo guards such an argument's length (`len(xs) == 3`) and, unlike a
tensor's dimension, never makes it dynamic: each number of items compiles the frame again,
until the limit (8), after which the frame runs eagerly for new lengths. fx-lsp called the
compiled module with the container one, two and three items longer, where `forward` takes it
whole (iterates it, slices it, asks its length or passes it on: not where it only reads fixed
places such as `xs[0]`); the diagnostic is at the line whose guard failed.

```python
def forward(self, chunks):            # a list of tensors, its length varies between calls
    out = chunks[0]                   # FX508: len(chunks) == 2
    for chunk in chunks[1:]:
        out = out + chunk
    return out
```

Fix: pass one tensor (`torch.stack` or `torch.cat` of the items, padded to one size where
they differ, with a mask or lengths tensor), or a few fixed lengths (pad the list).
""",
)

FX510 = Rule(
    code="FX510",
    kinds=("recompiles-swapped-module",),
    severity="warning", mode="compile",
    message="torch.compile compiles again for each module assigned to {detail}",
    docs="""\
**`torch.compile` compiles the frame again each time a submodule attribute names another
module.** Dynamo guards the type and identity of each submodule `forward` calls
(`___check_type_id(self._modules['head'], ...)`): a head swapped between calls
(`self.head = self.head_b if ... else self.head_a` inside `forward`, or set between calls by a
loop alternating two heads) fails that guard, and every variant costs its own graphs, for each
size automatic dynamic shapes compile too, towards the limit (8). fx-lsp calls the compiled
module again as a loop does, keeping its state, and the diagnostic is at the line whose guard
failed (the assignment, where torch names it). Variants of one type (two `Sequential`s of
different depth, two instances of your own class) fail the guard of the identity test instead
(`self._modules['head'] is self._modules['head_a']`), a submodule's own attribute the guard of
its path (`self._modules['block']._modules['head']`). Torch 2.10 to 2.15 were seen to lose
that identity guard once a new input size made the frame dynamic, and to run the graph
compiled for one variant when the other is chosen: wrong outputs, with no recompilation.

```python
def forward(self, x):
    self.head = self.head_b if self.head is self.head_a else self.head_a  # FX510
    return self.head(x)
```

Fix: call both heads and select with a tensor flag (`torch.where(flag, head_a(x), head_b(x))`),
or keep the selection out of the graph (`torch.compiler.disable` on the method that picks the
head); keep the attribute fixed between calls. The quick fix (unsafe) makes both, for a swap
in `forward` between two heads built from stateless layers of the same features: the swap
under `torch.compiler.disable`, returning the flag as a tensor, and `torch.where` on both heads'
outputs; elsewhere its `help:` line says why there is none.
""",
)

RULES = (FX505, FX506, FX507, FX508, FX510)
