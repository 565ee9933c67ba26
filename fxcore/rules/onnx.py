"""Failures of the ONNX export (onnx mode, FX601-FX699): what ``torch.onnx.export(...,
dynamo=True)`` refuses after torch.export succeeded. fx-lsp takes the export mode's exported
program (fake tensors, no weights), decomposes it as the exporter does for the configured
opset (``onnx-opset``), looks up every remaining operator in the exporter's registry
(onnxscript's torchlib and the exporter's own translations) and translates the graph without
data. An operator is reported at the user's line it came from (the node's stack trace)."""

from fxcore.rules.rule import Rule, not_checkable_rule, raises_everywhere_rule


def _onnx_error(code: str, kind: str, docs: str) -> Rule:
    return Rule(code=code, kinds=(kind,), severity="error", mode="onnx", docs=docs)


FX601 = _onnx_error(
    "FX601",
    "onnx-no-translation",
    """\
**An operator without an ONNX translation.** After torch.export and the exporter's
decompositions, an operator is left that the ONNX exporter's registry has no function for
(onnxscript's torchlib, for the opset configured and every later one): `torch.onnx.export(...,
dynamo=True)` stops with `DispatchError: No ONNX function found for ...`. A custom operator
(`torch.library.custom_op`) is one until it is given a translation.

```python
y = torch.special.bessel_j0(x)       # FX601: prims.bessel_j0.default has no ONNX translation
y = my_lib.fused_op(x)               # FX601: a custom op without a translation
```

Fix: compute it with operators that have one, or give the exporter a translation of your
own: `torch.onnx.export(model, args, dynamo=True, custom_translation_table={
torch.ops.my_lib.fused_op.default: fused_op_onnx})`, where `fused_op_onnx` is an onnxscript
function. The message carries a skeleton of that entry.
""",
)

FX602 = _onnx_error(
    "FX602",
    "onnx-needs-newer-opset",
    """\
**An operator whose ONNX translation needs a newer opset.** The exporter's registry has a
translation of the operator only from a later ONNX opset than the one configured
(`onnx-opset` under `[tool.fx-lsp]`, else the exporter's default): at this opset
`torch.onnx.export` finds none. The message names the first opset that has one.

```python
y = my_op(x)    # FX602: translated from opset 23 on (onnx-opset is 20)
```

Fix: export with `opset_version=` that opset (a quick fix sets `onnx-opset` to it, so that
fx-lsp checks what that export does), or avoid the operator.
""",
)

FX603 = _onnx_error(
    "FX603",
    "onnx-specialized-dimension",
    """\
**A dynamic dimension the ONNX export makes static.** A dimension configured dynamic
(`dynamic = {x = {0 = "batch"}}` in the class's table) becomes a fixed size in the ONNX
model, two ways:

- torch.export refuses it (the export mode's FX403): `torch.onnx.export(..., dynamo=True)`
  then applies the fix torch suggests (`refine_dynamic_shapes_from_suggested_fixes`) and
  exports again, without an error: the model takes that one size. Reported at the line whose
  guard did it; the rest of the class's translation is not checked (fx-lsp does not export
  the refined shapes);
- the exporter's decompositions guard a dimension torch.export kept symbolic: reported at
  the class.

```python
def forward(self, x):               # dynamic = {x = {0 = "batch"}}
    return self.fc(x.reshape(1, 16))  # FX603: the ONNX model takes batch = 4 only
```

Fix: make the code work for every size (`x.reshape(x.shape[0], -1)`), or export with that
size.
""",
)

FX604 = _onnx_error(
    "FX604",
    "onnx-translation-error",
    """\
**An ONNX translation that fails.** The exporter has a function for the operator, but
calling it on this node's arguments raised (a dtype, a rank or an argument the translation
does not handle): `torch.onnx.export` stops with `ConversionError: Error when translating
node`. The message gives the translation's error. Only the first such node is found: the
exporter stops there.

Fix: change the call (a dtype or argument the translation supports), or give a translation
of your own in `custom_translation_table`.
""",
)

FX605 = not_checkable_rule("FX605", "onnx", """\
**Information: a line the ONNX export cannot be checked at without real data.** The
exporter's decomposition or translation of this operator needs a tensor's values, which the
fake tensors fx-lsp exports on do not have (a constant folded from a weight, a size read from
data). The ONNX verdict stops there: the class is "not checked" in the onnx mode, which is
not a failure.

Fix: none needed in the code; run `torch.onnx.export(..., dynamo=True)` on real weights to
check the class.
""")

FX606 = raises_everywhere_rule("FX606", "onnx",
                               "FX408 under torch.export and FX509 under torch.compile")


RULES = (FX601, FX602, FX603, FX604, FX605, FX606)
