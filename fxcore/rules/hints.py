"""Hints on a complete graph: members ``forward`` never used (FX200), and the mis-traces,
where the graph traced without error but does not mean what the code says (FX201-FX206, fx
mode; FX206 in export mode too)."""

from fxcore.rules.rule import Rule, fx_rule

FX200 = Rule(
    code="FX200",
    kinds=("unused",),
    severity="hint",
    docs="""\
**Hint: a submodule or parameter that `forward` never uses.** It is found from the execution
order recorded during the trace, counting the same object under any of its names (a head
picked by `self.head = self.cls_head`), and sparing members that `forward`, or a method it
calls, names on a path this instance did not take (a head picked by a flag or an argument).
It is shown as unnecessary code, never as an error.

Fix: delete it, or use it. Unused parameters also trouble DDP and FSDP.
""",
)


FX201 = fx_rule("FX201", "none-check", "hint", docs="""\
**Hint: `x is None` on a `forward` argument.** While tracing, the argument is a Proxy, never
`None`, so the graph holds only the case where it is given, whatever is passed later. Plain
torch.fx raises nothing.

Fix: trace the `None` case with `concrete_args={"x": None}`: `concrete-none = ["x"]` for the
class in `pyproject.toml` (the quick fix, unsafe: the graph then holds for `None` only), or
give the argument a tensor default and test something traceable.
""")


FX202 = fx_rule("FX202", "training", "hint", docs="""\
**Hint: `self.training` changed the graph.** Traced in the other mode (`train()` or `eval()`),
the graph differs from the reported line on, as torchvision's feature extraction warns.

Fix: trace the module in the mode it will run in (`model.eval()` before tracing for inference).
""")


FX203 = fx_rule("FX203", "checkpoint", "hint", docs="""\
**Hint: activation checkpointing is gone.** `torch.utils.checkpoint.checkpoint` runs the
function inline while tracing, so the graph keeps every activation the checkpoint was there to
drop.

Fix: re-apply checkpointing to the graph module, or mark the checkpointed submodule as a leaf.
""")


FX204 = fx_rule("FX204", "unused-argument", "hint", docs="""\
**Hint: a `forward` argument the graph never uses.** Callers pass it for nothing, or the code
that used it was not traced.

Fix: remove the argument, or check why the code that used it is not in the graph.
""")


FX205 = fx_rule("FX205", "concrete-args", "hint", docs="""\
**Hint: `concrete-args` specialise the graph.** It holds for those values only; the message
lists the branches they fixed.

Fix: nothing, if those are the values the graph will run with.
""")


FX206 = Rule(code="FX206", kinds=("random-draw",), severity="hint", docs="""\
**Hint: a draw from `random` or `numpy.random` decided the graph.** A draw returns a Python
value, never a Proxy, so `if random.random() > self.p:`, a layer picked with
`random.choice(self.layers)` or a size from `random.randint(...)` is decided once, while
tracing, and the graph keeps that outcome on every run. Plain torch.fx raises nothing, and
neither does non-strict torch.export, which runs forward's Python once: both modes report it
(torch.compile breaks its graph at the draw instead, a GB code). The hint is on each draw that
ran while tracing, in the workspace's code (forward, or a function or submodule it calls).
fx-lsp seeds the generators before each class and capture, so the outcome, and the verdict,
are the same on every run (`fxcore/worker/running/seeding.py`).

```python
if random.random() > self.p:      # FX206: the graph always takes the branch drawn
    return x
return self.layer(x)
```

Fix: draw in the graph, from a traced tensor, and choose with `torch.where`:
`keep = torch.rand_like(x[:, :1]) > self.p`, then `torch.where(keep, x, self.layer(x))`
(`torch.rand(x.shape[0], 1)` is no node: a factory function given a Proxy for a size fails to
trace). Or make the choice on purpose: pass it to `forward` as an argument and trace with
`concrete_args`, or draw and choose in a module-level function marked with `torch.fx.wrap`,
which the graph calls on each run.
""")


RULES = (FX200, FX201, FX202, FX203, FX204, FX205, FX206)
