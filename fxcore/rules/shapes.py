"""Shapes that do not fit together on the example inputs (FX300)."""

from fxcore.rules.rule import Rule

FX300 = Rule(
    code="FX300",
    kinds=("shape",),
    severity="warning",
    severity_with_configured_inputs="error",
    severity_on_guessed_instance="hint",
    docs="""\
**Shapes do not fit together**: propagating example inputs through the traced graph (on meta
tensors, nothing is computed) fails at an operation, such as a `Linear(8, 4)` given
`float32[2, 16]`. The message names the operation, the shapes that met, torch's words, and the
inputs used. Inferred inputs take the image size the model declares, and sizes the model
leaves free are tried among a few candidates (image sizes 32 to 512, sequence lengths from the
model's own sizes): on inferred inputs FX300 means that no size tried fits, and the message
lists them. With inferred inputs (or ones read from annotations) it is a warning, since the
real inputs may differ in other ways; with configured inputs it is an error.
On an instance built from guessed constructor arguments (its own, or a parent's) it is a
hint whatever the inputs, and the message names that instance: the sizes may be the guess's.
A submodule traced as its parent built it is given the inputs the parent passes it (a block
after a downsampling stage gets the stage's maps, a classifier the pooled features), recorded
by running the parent once on its own example inputs on meta tensors; the verdict says so.
Where that run fails, the submodule's inputs are inferred for it alone and FX300 on them is a
hint, which says why: the parent's own check runs the same code on the real ones.

Fix: make the shapes agree, or give the real inputs under `[tool.fx-lsp.modules."pkg.mod:Net"]`
`inputs = {x = "float32[2, 3, 224, 224]"}`.
""",
)


RULES = (FX300,)
