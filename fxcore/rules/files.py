"""Problems before or around a capture: the file cannot be imported (FX100), the constructor
raised (FX101), the worker ran out of time or crashed (FX102); and what building a class
leaves worth knowing: it was not traced (FX103), or was traced with guessed arguments (FX104),
which ``fxcore.reporting.class_notes`` finds in its verdict, or the instance fx-lsp built does not
fit
it (FX105, ``fxcore.worker.capture.fx.instance_fit``)."""

from fxcore.rules.rule import Rule

FX100 = Rule(
    code="FX100",
    kinds=("import", "linked-out"),
    severity="error",
    docs="""\
**The file cannot be imported**: a syntax error (reported where it is), or an exception raised
while importing (reported on the import or statement that raised it). Also a file fx-lsp does
not read or cannot parse, reported on its first line: one that is not a regular file (a
symbolic link to a device such as `/dev/zero`, a named pipe), one over 4 MiB ("too large to
check"), source too deeply nested or too long for Python's parser (a `RecursionError`), or a
file that a symbolic link (the file's own, or a linked folder's) takes out of the workspace,
which is neither read nor imported, and which `fx-lsp diff` lists as refused.

In a notebook, also a class that needs a name only code fx-lsp leaves out of the notebook's
checked module defines (a later cell's data loading, a constant computed by a function call),
or that an assignment which raised on import would have defined (a dataset reading a file
that is not there): reported where the name is used, naming the cell that defines it and why
it is missing (see "Notebooks").

Fix: make `python -c "import your.module"` work from the workspace root; in a notebook, define
the name with a literal or a call of a class, or pass it in.
""",
)


FX101 = Rule(
    code="FX101",
    kinds=("constructor",),
    severity="error",
    docs="""\
**The constructor raised.** The message carries the exception, located in your constructor.

Fix: repair the constructor, or give a factory or arguments in `[tool.fx-lsp.modules]`.
""",
)


FX102 = Rule(
    code="FX102",
    kinds=("timeout", "crash", "exited"),
    severity="error",
    docs="""\
**Time-out or crash**: the worker took longer than `timeout` seconds for this class, or died
(segfault, `os._exit`), or the class's code stopped the run: `SystemExit`,
`KeyboardInterrupt` or `GeneratorExit` raised by its constructor, a hook,
`example_input_array`, `dummy_inputs` or `forward`, located where it was raised. The file's
other classes are judged all the same.

Fix: raise `timeout` if the model is just large. Otherwise run the constructor and `forward`
in plain Python to see why.
""",
)


FX103 = Rule(
    code="FX103",
    kinds=("not-traced",),
    severity="hint", information=True,
    docs="""\
**Information: a class that was not traced**, on its name: fx-lsp found no constructor
arguments it could build it with (the message says which error the last guess met), its
line says `# fx-lsp: skip`, or it is a base left for subclasses (abstract methods, a
`forward` that only raises `NotImplementedError`, or one that reads an attribute only
subclasses set), whose subclasses are traced, or its file's `file-timeout` ran out before
it was reached (a file of thousands of classes: those judged first keep their verdicts). The editor
shows it when `showNotTraced` (`show-not-traced`) is on; `fx-lsp check` lists such classes as
notes, and reports the code only when `select` names it in full (`select = ["FX", "FX103"]`).

Fix: give the arguments or a factory under `[tool.fx-lsp.modules."pkg.mod:Net"]`, or let a
traced model that builds the class give it its verdict.
""",
)


FX104 = Rule(
    code="FX104",
    kinds=("guessed-arguments",),
    severity="hint", information=True,
    docs="""\
**Information: a class traced with guessed constructor arguments**, on its name, with the
arguments used: its verdict holds for those, which may not be the real ones. The editor shows
it; `fx-lsp check` reports it only when `select` names it in full (`select = ["FX",
"FX104"]`). Like any code, `ignore`, `per-file-ignores` and `# fx-lsp: ignore[FX104]` on the
class line silence it.

Fix: configure the real arguments under `[tool.fx-lsp.modules."pkg.mod:Net"]` if they differ.
""",
)


FX105 = Rule(
    code="FX105",
    kinds=("does-not-fit",),
    severity="hint",
    mode="fx",
    docs="""\
**Hint: the instance does not fit**: tracing the instance fx-lsp built from the class's
defaults or from guessed arguments stopped with an error that involves no traced value, so
the error comes from that instance, not from torch.fx. Reported where it was raised, with the
arguments used; the class counts as "does not fit" in the summary, neither traceable nor
failed, and was not traced.

```python
class Block(nn.Module):
    def __init__(self, act=None, n_blocks=0):
        ...
    def forward(self, x):
        y = self.act(x)              # FX105: TypeError: 'NoneType' object is not callable
        return torch.cat([b(y) for b in self.blocks], 1)  # FX105 with n_blocks=0: empty list
```

Before giving up, fx-lsp traces the next instance it can build (at most three in all, within
the class's `timeout`): a builder function, a literal call site, then the table's guesses
also for parameters whose default builds nothing (`None`, `0`, empty: `n_blocks=2` for
`n_blocks=0`). The first that fits gives the verdict. An error that involves a traced value
(its message names a `Proxy`, torch.fx raised it, or a traced value is among the failing
operation's operands) stays a failure of tracing (FX001-FX008, FX199), and so does an error of
an operation on globals and constants alone (`-np.abs`, the ufunc itself: raised whatever the
instance, the code's own), and any error on
an instance from configuration, a builder or a call site. An error of the instance met after
the tracer recovered from a failure of tracing is an FX105 too, after that failure: the class
keeps the verdict of the failure met first.

Fix: give the real arguments under `[tool.fx-lsp.modules."pkg.mod:Net"]` (`kwargs`, `call` or
a `factory`), or let a traced model that builds the class give it its verdict.
""",
    message=(
        "The instance does not fit: {detail}, where no traced value is involved: the error "
        "comes from the instance fx-lsp built, not from torch.fx."
    ),
)


RULES = (FX100, FX101, FX102, FX103, FX104, FX105)
