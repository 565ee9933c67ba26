"""What fx-lsp's quick fix does for a graph break, by PyTorch's ``GBnnnn`` code, added to the
code's page after torch's own hints (``compile``): the rewrites ``fxcore.fixing.value_plan``
plans, each the smallest edit that keeps the outputs, and the config option as the unsafe
fallback."""

from __future__ import annotations


def _option(option: str, effect: str) -> str:
    return (
        f"the unsafe fix sets `torch._dynamo.config.{option}` for the class's compiled calls "
        "only: `@torch.compiler.disable(recursive=False)` over "
        f"`@torch._dynamo.config.patch({option}=True)` on its `forward` ({effect}; torch.export "
        "then refuses the class, and a parent compiled whole breaks at its call). Where the "
        "class has no `forward` of its own, or the torch has no non-recursive "
        f"`torch.compiler.disable`, the last resort sets `{option} = True` after the file's "
        "imports, which affects every model in the process once the file is imported.")


_SCALAR_OPTION = _option("capture_scalar_outputs", "the number becomes symbolic in the "
                         "compiled graph, a branch or a size on it then needs `torch._check`")

_UNDONE = (" `--fix` takes a fix back out where the check after it finds the class meeting a "
           "code more often than before, or no fewer graph breaks (the break moved, FX501, or "
           "the compile failing, FX502).")

#: Code -> the paragraph its page gives fx-lsp's quick fixes.
QUICK_FIXES: dict[str, str] = {
    "GB0124": (
        "An `.item()` that is an operand of `+`, `-`, `*` or `/` beside a tensor, or the "
        "condition of `a if t.item() else b`, stays a tensor: `x * t.item()` becomes `x * t` "
        "(the same values: a 0-d tensor takes no part in type promotion; unsafe, since beside "
        "a Python number the result is a 0-d tensor). A number that only feeds `math` "
        "functions torch also has (`exp`, `log`, `sqrt`, `tanh`, ...), each combined with a "
        "tensor by arithmetic, stays a 0-d tensor: `s = t.item()` becomes "
        "`s = t.detach().reshape(())` and `math.exp(s)` becomes `torch.exp(s)` (unsafe: "
        "computed in the tensor's dtype, the last bits may differ). A number that reaches a "
        "`math` function and more gets no fix: the option would move the break into `math`. "
        "Elsewhere, " + _SCALAR_OPTION + _UNDONE),
    "GB0033": "A number read from tensor data (`.tolist()` as `torch.split` sizes): "
              + _SCALAR_OPTION + _UNDONE,
    "GB0036": (
        "A sum or mean of `x[x > 0]` (or `x[torch.nonzero(x > 0, as_tuple=True)]`) becomes "
        "a masked reduction of static shape: "
        "`torch.where(x > 0, x, 0).sum()`, and for `.mean()` that sum over `(x > 0).sum()` "
        "(the same elements; unsafe, since a float sum's last bits may differ with the order). "
        "Elsewhere (`nonzero`, `unique`), "
        + _option("capture_dynamic_output_shape_ops", "sizes read from data become symbolic, "
                  "which some backends and later operations cannot compile") + _UNDONE),
    "GB0206": (
        "`x.requires_grad = <value>` in `forward` runs only outside torch.compile, under `if "
        "not torch.compiler.is_compiling():` (unsafe: the values are the same, but compiled "
        "code leaves the tensor unmarked, which reentrant gradient checkpointing of it "
        "needs)."),
    "GB0170": (
        "An `if` of the shapes FX401 lists becomes `torch.cond`, its condition also `not`, "
        "`and`, `or` over names, attributes and comparisons (`if not skip or synced:`, as "
        "`torch.logical_*` of `torch.as_tensor` of each operand); a conditional expression "
        "`a if <comparison> else b` becomes `torch.where(<comparison>, a, b)` (unsafe: both "
        "branches are computed, and the values are the same where both have one shape). A "
        "`while` loop on a comparison or `.any()`/`.all()` whose body only assigns names "
        "becomes `torch.while_loop` over the names it assigns that are bound before it (unsafe: "
        "the loop runs as torch's operator); where torch has none, 64 steps masked by "
        "`torch.where` (unsafe: nothing shows they are enough)."),
    "GB0007": (
        "A call dynamo skips whose value depends on shapes only "
        "(`zlib.crc32(str(x.shape).encode())`: `x.shape`, `x.size()`, `x.ndim`, literals, plain "
        "builtins and the file's imports) is computed by a module-level helper under "
        "`@torch.compiler.assume_constant_result`, called with the shapes (unsafe: the same "
        "values, once per shape; where a size is dynamic the call still breaks the graph). "
        "Inside a module-level helper, `@torch._dynamo.nonstrict_trace` on it where torch has "
        "it, else `@torch.compiler.disable` (the call still breaks the graph)."),
    "GB0109": (
        "A `.tolist()` of a boolean test whose flags filter rows in a comprehension "
        "(`[r for r, k in zip(x, keep) if k]`) stacked or concatenated along dimension 0 keeps "
        "the mask a tensor: `x[keep]`, and " + _option(
            "capture_dynamic_output_shape_ops", "the selection's size read from data becomes "
            "symbolic") + " (unsafe: the same values where the test gives one flag per row "
        "and keeps some)." + _UNDONE),
    "GB7000": (
        "At an `if` on tensor data of the shapes GB0170's `torch.cond` takes, that rewrite. "
        "At `if <condition>: break` opening a `for _ in range(N)` loop whose other statements "
        "only assign names bound before it, the loop's steps are masked instead: "
        "`stop = <condition>`, then `y = torch.where(stop, y, <expression>)` (the values the "
        "early stop left; unsafe, since every step of the range runs)."),
}
