"""FX506 at a cache keyed by a size (``if n not in self.tables: self.tables[n] = ...``): the
dict-membership guard on ``n`` makes torch.compile compile again for every new size. The fix
computes the value on every call, without a Python-level key, where that gives what the cache
gave: the value depends on the key alone (the key's names, module globals, and attributes of
``self`` set in ``__init__`` and never changed, not parameters), draws no random numbers, and
nothing but the cache's own lookup reads the dict. Otherwise the cache holds what the first
call with each key computed, and recomputing it would change outputs: ``NoFix`` says why.

    if length not in self.tables:                 table = torch.arange(length)
        self.tables[length] = torch.arange(length)   ->
    return x + self.tables[length]                return x + table
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from fxcore.fixing.method_rewrites import (
    Method,
    NoFix,
    Rewritten,
    assigned_names,
    becomes,
    code,
    edited,
    method_at,
    nodes_of,
    reads,
    self_attribute,
)

#: Calls whose result differs between calls with the same arguments: a cache of one keeps
#: its first draw.
RANDOM_CALLS = frozenset({"rand", "randn", "randint", "randperm", "rand_like", "randn_like",
                          "randint_like", "normal", "normal_", "uniform_", "bernoulli",
                          "multinomial", "dropout", "empty", "empty_like", "random"})
#: Constructor calls whose attribute training changes.
PARAMETER_CALLS = frozenset({"Parameter", "nn.Parameter", "torch.nn.Parameter"})


@dataclass(frozen=True)
class SizeCache:
    """``if <key> not in self.<attribute>:`` then statements that assign names (``prelude``)
    and ``self.<attribute>[<key>] = <value>``."""

    statement: cst.If
    attribute: str
    key: cst.BaseExpression
    prelude: tuple[cst.SimpleStatementLine, ...]
    filled: cst.Assign

    @property
    def value(self) -> cst.BaseExpression:
        return self.filled.value

    def is_lookup(self, node: cst.CSTNode) -> bool:
        """``self.<attribute>[<key>]``, with the same key."""
        if not isinstance(node, cst.Subscript) or self_attribute(node.value) != self.attribute \
                or len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return False
        return code(node.slice[0].slice.value) == code(self.key)


def _assigns_names(statement: cst.BaseStatement) -> bool:
    """A line of one assignment to plain names (``t = ...``, ``cos, sin = ...``)."""
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and \
        isinstance(assign := statement.body[0], cst.Assign) and all(
            isinstance(target.target, (cst.Name, cst.Tuple)) for target in assign.targets)


def _cache_at(method: Method, line: int) -> SizeCache | None:
    for statement in nodes_of(method.function, cst.If):
        assert isinstance(statement, cst.If)
        if method.line_of(statement) != line or statement.orelse is not None:
            continue
        test = statement.test
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, cst.NotIn)):
            continue
        attribute = self_attribute(test.comparisons[0].comparator)
        body = statement.body
        if attribute is None or not isinstance(body, cst.IndentedBlock) or not body.body:
            continue
        *prelude, filled = body.body
        if not (all(_assigns_names(each) for each in prelude)
                and isinstance(filled, cst.SimpleStatementLine) and len(filled.body) == 1
                and isinstance(assign := filled.body[0], cst.Assign)
                and len(assign.targets) == 1):
            continue
        cache = SizeCache(statement, attribute, test.left,
                          tuple(each for each in prelude
                                if isinstance(each, cst.SimpleStatementLine)), assign)
        if cache.is_lookup(assign.targets[0].target):
            return cache
    return None


def _init_value(method: Method, attribute: str) -> cst.BaseExpression | None:
    """What ``__init__`` sets ``self.<attribute>`` to (an assignment, or the tensor of
    ``self.register_buffer("<attribute>", ...)``), if it does."""
    for init in method.methods():
        if init.name.value != "__init__":
            continue
        for node in nodes_of(init, cst.BaseSmallStatement):
            if isinstance(node, cst.Assign) and any(
                    self_attribute(target.target) == attribute for target in node.targets):
                return node.value
            if isinstance(node, cst.AnnAssign) and node.value is not None and \
                    self_attribute(node.target) == attribute:
                return node.value
        for call in nodes_of(init, cst.Call):
            assert isinstance(call, cst.Call)
            if code(call.func) == "self.register_buffer" and len(call.args) >= 2 and \
                    code(call.args[0].value) in (f'"{attribute}"', f"'{attribute}'"):
                return call.args[1].value
    return None


def _changed_outside_init(method: Method, attribute: str) -> bool:
    """Whether a method but ``__init__`` assigns ``self.<attribute>`` or changes it in place
    (``self.<attribute>.add_(...)``, ``self.<attribute>[i] = ...``)."""
    for other in method.methods():
        if other.name.value == "__init__":
            continue
        for node in nodes_of(other, cst.AssignTarget):
            assert isinstance(node, cst.AssignTarget)
            target = node.target
            if isinstance(target, cst.Subscript):
                target = target.value
            if self_attribute(target) == attribute:
                return True
        for call in nodes_of(other, cst.Call):
            assert isinstance(call, cst.Call)
            if isinstance(call.func, cst.Attribute) and \
                    self_attribute(call.func.value) == attribute and \
                    call.func.attr.value.endswith("_"):
                return True
    return False


def _why_not(method: Method, cache: SizeCache) -> str | None:
    """Why computing the value on every call would not give what the cache gives, if so."""
    described = f"self.{cache.attribute}[{code(cache.key)}]"
    computed = [*cache.prelude, cache.filled]
    for call in (call for part in computed for call in nodes_of(part, cst.Call)):
        assert isinstance(call, cst.Call)
        name = code(call.func)
        if name.rsplit(".", 1)[-1] in RANDOM_CALLS:
            return (f"{described} draws random numbers ({name}): the cache keeps the first "
                    "draw of each key, and computing it on every call would change outputs")
    # A key of a plain name: the value may read it (a key ``x.shape[1]`` reads ``x``, whose
    # data the key does not determine).
    key_names = {cache.key.value} if isinstance(cache.key, cst.Name) else set()
    own = {name for part in cache.prelude for name in assigned_names(part)}
    local_names = assigned_names(method.function) - own
    value_reads = [reads(part.body[0].value if part is not cache.filled else part.value,
                         devices_apart=True) for part in computed]  # type: ignore[attr-defined]
    for name in (name for found in value_reads for name in found.names):
        if name in local_names and name not in key_names:
            return (f"{described} reads `{name}`, which the key does not determine: the cache "
                    f"keeps what the first call with each key computed, and computing it on "
                    "every call would change outputs")
    for attribute in (name for found in value_reads for name in found.self_attributes):
        init_value = _init_value(method, attribute)
        is_parameter = isinstance(init_value, cst.Call) and \
            code(init_value.func) in PARAMETER_CALLS
        if init_value is None or is_parameter or _changed_outside_init(method, attribute):
            return (f"{described} reads `self.{attribute}`, which can change between calls "
                    f"({'a parameter' if is_parameter else 'not set once in __init__'}): the "
                    "cache keeps what it was at the first call with each key, and computing "
                    "it on every call would change outputs")
    return _other_reads(method, cache, key_names, own)


def _other_reads(method: Method, cache: SizeCache, key_names: set[str], own: set[str]
                 ) -> str | None:
    """Why the rest of the class needs the dict filled, the key changes after the check, or
    the method reads a name the cache's statements assign (which they would then always
    assign)."""
    allowed = {id(cache.statement.test.comparisons[0].comparator)}  # type: ignore[attr-defined]
    statement = cache.statement
    allowed.add(id(cache.filled.targets[0].target.value))  # type: ignore[attr-defined]
    after = False
    for node in nodes_of(method.function, cst.Subscript):
        if cache.is_lookup(node):
            allowed.add(id(node.value))  # type: ignore[attr-defined]
    for other in method.methods():
        for node in nodes_of(other, cst.Attribute):
            if self_attribute(node) != cache.attribute or id(node) in allowed:  # type: ignore[arg-type]
                continue
            if other.name.value == "__init__":
                continue
            return (f"`self.{cache.attribute}` is read at line {method.line_of(node)} beyond the "
                    "cache's own lookup: computing the value on every call leaves the dict "
                    "empty, and that read would change")
    for node in nodes_of(method.function, cst.AssignTarget):
        if method.positions[node].start.line > method.line_of(statement):
            after = True
        names = assigned_names(node)
        if after and names & key_names:
            return (f"the key `{code(cache.key)}` is assigned again at line "
                    f"{method.line_of(node)}, after the cache's lookup")
    inside = {id(node) for node in nodes_of(statement, cst.Name)}
    for node in nodes_of(method.function, cst.Name):
        if isinstance(node, cst.Name) and node.value in own and id(node) not in inside:
            return (f"`{node.value}`, which the cache's statements assign, is also used at "
                    f"line {method.line_of(node)}: computing the value on every call would "
                    "change it there")
    return None


def _entry_name(method: Method, attribute: str) -> str:
    singular = attribute[:-1] if attribute.endswith("s") and len(attribute) > 3 else \
        f"{attribute}_entry"
    return method.fresh_local_name(singular.lstrip("_") or "entry")


def compute_without_key(source: str, line: int) -> Rewritten:
    """``source`` with the size-keyed cache whose ``if`` is at ``line`` computed on every call
    into a local (each lookup reads it); ``NoFix`` when that would change outputs; None when
    no such cache is at the line."""
    method = method_at(source, line)
    cache = _cache_at(method, line) if method is not None else None
    if method is None or cache is None:
        return None
    why = _why_not(method, cache)
    if why is not None:
        return NoFix(why)
    name = _entry_name(method, cache.attribute)
    computed = cst.parse_statement(f"{name} = {code(cache.value)}\n").with_changes(
        trailing_whitespace=cache.statement.body.header)  # the comment after the ``if``'s colon
    statements = [*cache.prelude, computed]
    statements[0] = statements[0].with_changes(leading_lines=cache.statement.leading_lines)
    edits = {id(cache.statement): becomes(cst.FlattenSentinel(statements))}
    for node in nodes_of(method.function, cst.Subscript):
        if cache.is_lookup(node) and \
                method.positions[node].start.line > method.positions[cache.statement].end.line:
            edits[id(node)] = becomes(cst.Name(name))
    return edited(method.module, edits)
