"""Problems before or around a capture: the file cannot be imported (FX100), the constructor
raised (FX101), the worker ran out of time or crashed (FX102)."""

from fxcore.rules.rule import Rule

FX100 = Rule(
    code="FX100",
    kinds=("import",),
    severity="error",
    docs="""\
**The file cannot be imported**: a syntax error (reported where it is), or an exception raised
while importing (reported on the import or statement that raised it). Also a file fx-lsp does
not read or cannot parse, reported on its first line: one that is not a regular file (a
symbolic link to a device such as `/dev/zero`, a named pipe), one over 4 MiB ("too large to
check"), or source too deeply nested or too long for Python's parser (a `RecursionError`).

Fix: make `python -c "import your.module"` work from the workspace root.
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
    kinds=("timeout", "crash"),
    severity="error",
    docs="""\
**Time-out or crash**: the worker took longer than `timeout` seconds for this class, or died
(segfault, `os._exit`).

Fix: raise `timeout` if the model is just large. Otherwise run the constructor and `forward`
in plain Python to see why.
""",
)


RULES = (FX100, FX101, FX102)
