"""Failures of tracing itself: where a traced value met Python that needs a real one
(FX001-FX007, fx mode), a library that cannot run on one (FX008: einops, einx), and any other
error that ended the capture (FX199)."""

from fxcore.rules.rule import Rule, fx_rule

FX001 = fx_rule("FX001", "control-flow", "error", docs="""\
**Control flow on a traced value.**

```python
if x.sum() > 0:        # FX001 on `x.sum() > 0`
    x = x + 1
y = max(x.sum(), 1)    # FX001 on `max(x.sum(), 1)`
```

Fix: express it with tensor operations (`torch.where(cond, a, b)`, `clamp`), move the branch into
a function marked with `torch.fx.wrap`, or, if the condition is a plain flag argument, make it
constant with `concrete-args`.
""", message=(
    'Control flow depends on a traced value: {detail}. FX records operations, not Python '
    'branches, so it cannot know which branch to take. Move the branch into a function '
    'marked with torch.fx.wrap, make the value a constant with concrete_args, or express '
    'it with tensor operations such as torch.where.'
))


FX002 = fx_rule("FX002", "len", "error", docs="""\
**`len()` on a traced value.**

```python
n = len(x)             # FX002 on `len(x)`
```

Fix: `x.size(0)` or `x.shape[0]` for a tensor. Or call `torch.fx.wrap("len")` at module scope,
which records `len` as a graph node.
""", message=(
    'len() is called on a traced value. FX cannot know the length while tracing. Use '
    "x.size(0) or x.shape[0] for a tensor, or call torch.fx.wrap('len') at module scope "
    'to record len() as a graph node.'
))


FX003 = fx_rule("FX003", "iteration", "error", docs="""\
**Iteration over a traced value.**

```python
for row in x:          # FX003 on `x`
    ...
```

Fix: use tensor operations (`torch.unbind`, `torch.split`, batched math), index with a fixed
range, or wrap the loop in a `torch.fx.wrap` function.
""", message=(
    'A traced value is iterated over{detail}. FX cannot know how many elements it has. '
    'Index it with a fixed range, use tensor operations (torch.unbind, torch.split) or '
    'move the loop into a function marked with torch.fx.wrap.'
))


FX004 = fx_rule("FX004", "conversion", "error", docs="""\
**A traced value converted to a Python number:** `int()`, `float()`, `range()`, a `math`
function imported in another module, or list indexing.

```python
steps = int(x.shape[1] / 2)   # FX004 on `int(x.shape[1] / 2)`
```

Fix: keep it a tensor or use `//` on the size, or move the computation into a wrapped function.
""", message=(
    '{detail} is applied to a traced value, which needs a concrete number during tracing.'
    ' Keep the value a tensor (tensor methods, torch.* functions), or move the '
    'computation into a function marked with torch.fx.wrap.'
))


FX005 = fx_rule("FX005", "mutation", "error", docs="""\
**Item assignment into a traced value.**

```python
x[0] = 1               # FX005 on `x[0]`
```

Fix: build a new tensor: `torch.where`, `masked_fill`, `index_put`, `torch.cat`.
""", message=(
    'Item assignment into a traced value ({detail}). FX Proxies do not support in-place '
    'item assignment. Build a new tensor instead (torch.where, torch.cat, index_put / '
    'masked_fill), or move it into a function marked with torch.fx.wrap.'
))


FX006 = fx_rule("FX006", "contains", "error", docs="""\
**`in` on a traced value.**

```python
if 3 in x: ...         # FX006 on `3 in x`
```

Fix: test membership before tracing, pass the container through `concrete-args`, or wrap the
test.
""", message=(
    'The `in` operator is used on a traced value. FX cannot test membership of a value it'
    ' does not know. Check membership before tracing, pass the container through '
    'concrete_args, or move the test into a function marked with torch.fx.wrap.'
))


FX007 = fx_rule("FX007", "unpacking", "error", docs="""\
**`*` / `**` unpacking of a traced value.**

```python
torch.cat(*parts)      # FX007 on the call
```

Fix: pass the elements explicitly or index them. Use `concrete-args` for `**kwargs` that are
really constants.
""", message=(
    'A traced value is unpacked with {detail}. FX cannot know how many elements it holds.'
    ' Pass the elements explicitly, index them, or fix the arguments with concrete_args.'
))


FX008 = fx_rule("FX008", "einops", "error", docs="""\
**einops (or einx) on a traced value.** einops looks at a tensor's type and shape in Python,
which a traced value does not have: plain torch.fx stops with `Tensor type unknown to einops`
for a function and with a `KeyError` inside a layer. Reported at your line that calls it,
whatever error einops raised.

```python
x = rearrange(x, "b c h w -> b (h w) c")         # FX008 on the call
x = einops.rearrange(x, "b c h w -> b (h w) c")  # FX008 on the call
x = self.to_tokens(x)   # FX008: to_tokens = Rearrange("b c h w -> b (h w) c")
```

Fix: record the einops call as one graph node; it still runs as before on real tensors.
- `rearrange`, `reduce`, `repeat` or `einsum` imported by name (`from einops import
  rearrange`): `torch.fx.wrap("rearrange")` at module scope of the file that calls it.
- called as `einops.rearrange(...)`: `autowrap-modules = ["einops"]` under `[tool.fx-lsp]`;
  a tracer of your own needs the same, `torch.fx.Tracer(autowrap_modules=(math, einops))`.
- the layers `Rearrange` and `Reduce` of `einops.layers.torch` (also inside an `EinMix`):
  make the layer a leaf module, `leaf-modules = ["einops.layers.torch:Rearrange"]`.

Quick fixes make each of these changes (they are safe). einx is recognised the same way, but
offered no quick fix: its functions were not checked with torch.fx.
""", message=(
    "{detail}. It looks at the tensor's type and shape in Python, which a traced value does "
    "not have, so torch.fx cannot trace into it: record the call as one graph node instead."
))


FX199 = Rule(
    code="FX199",
    kinds=("error",),
    severity="error",
    docs="""\
**Any other error ended the trace.** The exception is reported at the place it was raised, for
example an operation torch.fx does not support, or an error in your code that only shows up
on symbolic values.

Fix: read the message. If the code is correct but untraceable, mark the function with
`torch.fx.wrap` or the submodule as a leaf module.
""",
)


RULES = (FX001, FX002, FX003, FX004, FX005, FX006, FX007, FX008, FX199)
