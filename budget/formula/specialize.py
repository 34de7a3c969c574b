"""Specialised compilation (`Specializer`): the same items evaluated many times over a few changing
inputs, with the parts that read only fixed inputs computed once per `bind`."""

from __future__ import annotations

import re
from typing import Callable, Iterable, Mapping

from .rows import At, PerRow, UpTo
from .runtime import _RUNTIME
from .tree import _COMPARE_FN, Bin, Blanks, Call, Expr, Lookup, Num, Ref, Text

# The layout search evaluates the layout-dependent items for ~1,500 layouts per GPU count. Most
# of each formula reads inputs that do not change between those calls: `Specializer` computes
# such parts once per set of fixed values (`bind`), keeps only the branch of an IF whose
# condition is fixed, and remembers the items that depend on a few of the changing inputs
# (those of the recomputation mode alone, say) under their values. The Python expressions are
# those `Expr.python` writes, parts of them replaced by names holding the values they had: the
# numbers are the same. Whatever raises is evaluated as it is written: where a part raises at
# `bind` it stays in the function, and a caller that sees any exception runs the plain function
# (`compile_items`) instead, which raises what it always did.

_FAILED = type("_Failed", (), {"__repr__": lambda self: "FAILED"})()  # i18n: not text
_SPECIALIZED: dict[str, Callable] = {}
_MAX_SPECIALIZATIONS = 256     # per Specializer: distinct sets of fixed conditions seen
# Items whose Python text is shorter than this (a few products) compute about as fast as
# their remembered values are looked up (measured on the sweep scenarios' searches).
_WORTH_REMEMBERING = 150
# A remembered group's key takes at most this many earlier items in place of args (Specializer._key)
_KEY_CARRIERS = 2


# a > b follows from _gt(a, b), a < b from _lt(a, b), and _le(a, b) from a <= b, _ge(a, b) from
# a >= b, whatever the operands (a blank or text beside a number raises in Python: the caller
# then runs the plain function). So "a > b and _gt(a, b)" is _gt(a, b), "a <= b or _le(a, b)"
# is _le(a, b), each calling only where Python's comparison does not decide. Names and numbers only.
_DECIDED_BY = {">": "and", "<": "and", "<=": "or", ">=": "or"}
_SIMPLE = re.compile(r"[nh][0-9]+|-?[0-9][0-9.e+-]*")


class _Unsupported(Exception):
    """An expression node the specialising renderer does not know: use the plain function."""


class _Render:
    """Python source for the items, as `Expr.python` writes it, with parts fixed by `outcome`
    (one entry per probe: _FAILED, a condition's truth, or None for a value held in H[i]).
    Without an outcome it collects the probes: the fixed parts, in a traversal order that does
    not depend on the outcome (branches not taken are still walked, `dead`)."""

    def __init__(self, spec: "Specializer", outcome: tuple | None):
        self.spec, self.outcome = spec, outcome
        self.probes: list[tuple[str, bool]] = []
        self.count = 0
        self.dead = 0           # inside a branch that is never taken: nothing is used
        self.plain = 0          # inside a part that failed to be fixed: written as it is
        self.names: dict[str, str] = {}
        self.used: dict[str, None] = {}      # names read by live code, in first-use order
        self.hoisted: dict[int, None] = {}   # probes read by live code
        self.refs: set[str] = set()          # names read by the current item's live code

    def ident(self, name: str) -> str:
        found = self.names.get(name)
        if found is None:
            found = self.names[name] = f"n{len(self.names)}"
        return found

    def ref(self, name: str) -> str:
        if not self.dead:
            self.used[name] = None
            self.refs.add(name)
        return self.ident(name)

    def probe(self, e: Expr | str, test: bool):
        """The outcome (_FAILED while collecting) of a fixed part (an expression, or its Python
        text), and its index."""
        i = self.count
        self.count += 1
        if self.outcome is None:
            self.probes.append((e if isinstance(e, str) else e.python(), test))
            return _FAILED, i
        return self.outcome[i], i

    def inline(self, e: Expr) -> str:
        self.plain += 1
        try:
            return self.r(e, True)
        finally:
            self.plain -= 1

    def walk_dead(self, e: Expr, sub: bool = True) -> None:
        self.dead += 1
        try:
            self.r(e, sub)
        finally:
            self.dead -= 1

    def fixed(self, e: Expr) -> bool:
        return not self.plain and self.spec.invariant(e)

    def r(self, e: Expr, sub: bool) -> str:
        kind = type(e)
        if kind is Num or kind is Text:
            return e.python()
        if kind is Ref:
            return self.ref(e.name)
        if sub and self.fixed(e):
            state, i = self.probe(e, False)
            if state is _FAILED:
                return self.inline(e)
            if not self.dead:
                self.hoisted[i] = None
            return f"h{i}"
        if kind is Bin:
            return self.binary(e, sub)
        if kind is Call:
            if e.fn == "IF":
                return self.condition(e)
            if e.fn in ("AND", "OR"):
                return self.logical(e)
            return f"_{e.fn.lower()}(" + ", ".join(self.r(a, True) for a in e.args) + ")"
        if kind is Lookup:
            return f"_lookup(T, {e.table!r}, {e.column!r}, {self.r(e.key, True)})"  # i18n: not text
        if kind is Blanks:
            return f"_blanks({self.r(e.range, True)})"
        if kind is At:
            return f"_at({self.ref(e.name)}, _k)"
        if kind is UpTo:
            return f"{self.ref(e.name)}[:_k + 1]"
        if kind is PerRow:
            if not self.plain and e.rows not in self.spec.varying:
                state, _i = self.probe(f"len(v[{e.rows!r}])", True)
                if state is False:      # no rows: the empty tuple, the rows' formula never runs
                    self.walk_dead(e.expr)
                    return "()"
            return f"tuple(({self.r(e.expr, True)}) for _k in range(len({self.ref(e.rows)})))"  # i18n: not text
        raise _Unsupported(kind.__name__)

    def binary(self, e: Bin, sub: bool) -> str:
        if e.op in _COMPARE_FN:
            left, right = self.r(e.left, True), self.r(e.right, True)
            call = f"{_COMPARE_FN[e.op]}({left}, {right})"
            if e.op in _DECIDED_BY and _SIMPLE.fullmatch(left) and _SIMPLE.fullmatch(right):
                # Python's comparison decides the common case without the call (see _DECIDED_BY)
                return f"({left} {e.op} {right} {_DECIDED_BY[e.op]} {call})"
            return call
        if e.op == "&":
            return f"_cat({self.r(e.left, True)}, {self.r(e.right, True)})"
        # Which children are whole Python subexpressions of the text `Bin.python` writes: a
        # parenthesised one, one that binds tighter, and a left one of equal precedence where
        # the parent is one (Python reads a + b - c as (a + b) - c, so the Expr a + (b - c),
        # written without parentheses, has no node b - c).
        p = e.precedence
        left_wrapped, right_wrapped = e._parenthesised(e.left, False), e._parenthesised(e.right, True)
        left = self.r(e.left, left_wrapped or e.left.precedence > p or sub)
        right = self.r(e.right, right_wrapped or e.right.precedence > p)
        op = "**" if e.op == "^" else e.op
        return f"{f'({left})' if left_wrapped else left} {op} {f'({right})' if right_wrapped else right}"

    def condition(self, e: Call) -> str:
        test, yes, no = e.args
        if self.fixed(test):
            state, _i = self.probe(test, True)
            if state is not _FAILED:        # keep the branch taken; walk the other one dead
                if state:
                    text = self.r(yes, True)
                    self.walk_dead(no)
                else:
                    self.walk_dead(yes)
                    text = self.r(no, True)
                return f"({text})"
            test_text = self.inline(test)
        else:
            test_text = self.r(test, True)
        return f"({self.r(yes, True)} if {test_text} else {self.r(no, True)})"  # i18n: not text

    def logical(self, e: Call) -> str:
        """AND / OR: fixed operands that do not decide are left out, one that decides ends it
        (the operands before it still run: they may raise)."""
        decides = e.fn == "OR"      # AND stops at a False operand, OR at a True one
        parts, decided = [], False
        for a in e.args:
            if decided:
                self.walk_dead(a)
                continue
            if self.fixed(a):
                state, _i = self.probe(a, True)
                if state is _FAILED:
                    parts.append(f"bool({self.inline(a)})")
                elif state == decides:
                    parts.append(repr(decides))
                    decided = True
                continue
            parts.append(f"bool({self.r(a, True)})")
        if not parts:
            parts.append(repr(not decides))
        return "(" + f" {e.fn.lower()} ".join(parts) + ")"


class Specializer:
    """`items` ((name, expr) in dependency order) compiled for many calls in which only `args`
    change. `bind(values, tables)` returns run(*args) -> the `outputs` as a tuple, computed
    over `values` (every other name's value) and those args, or None where it cannot (then
    use `compile_items`). `steady` args change seldom (a GPU count held through a search): an
    item that depends on every other arg is not remembered. Args must not be -0.0 or NaN
    (they are remembered by value, and -0.0 == 0.0)."""

    def __init__(self, items: Iterable[tuple[str, Expr]], args: Iterable[str], outputs: Iterable[str],
                 steady: Iterable[str] = ()):
        self.items = list(items)
        self.args, self.outputs, self.steady = tuple(args), tuple(outputs), frozenset(steady)
        self.varying = set(self.args) | {name for name, _ in self.items}
        self._invariant: dict[int, bool] = {}
        self._made: dict[tuple, Callable | None] = {}
        try:
            render = _Render(self, None)
            for _name, expr in self.items:
                render.r(expr, True)
        except _Unsupported:
            self._probe = None
            return
        self.tests = tuple(test for _text, test in render.probes)
        self._probe = _compile_cached(_probe_source(render.probes), "_probe")

    def invariant(self, e: Expr) -> bool:
        """No changing name inside and no row index: the same value at every call of a bind."""
        key = id(e)
        found = self._invariant.get(key)
        if found is None:
            kind = type(e)
            if kind is Num or kind is Text:
                found = True
            elif kind is Ref:
                found = e.name not in self.varying
            elif kind is Bin:
                found = self.invariant(e.left) and self.invariant(e.right)
            elif kind is Call:
                found = all(self.invariant(a) for a in e.args)
            elif kind is Lookup:
                found = self.invariant(e.key)
            elif kind is Blanks:
                found = self.invariant(e.range)
            else:                   # At, UpTo, PerRow: the row index changes
                found = False
            self._invariant[key] = found
        return found

    def bind(self, values: Mapping, tables: Mapping) -> Callable | None:
        if self._probe is None:
            return None
        held = self._probe(values, tables)
        try:
            outcome = tuple(_FAILED if x is _FAILED else (bool(x) if test else None)
                            for x, test in zip(held, self.tests))
        except Exception:
            return None
        if outcome not in self._made:
            if len(self._made) >= _MAX_SPECIALIZATIONS:
                self._made.clear()
            try:
                self._made[outcome] = _compile_cached(self._source(outcome), "_make")
            except _Unsupported:
                self._made[outcome] = None
        make = self._made[outcome]
        if make is None:
            return None
        try:
            return make(values, tables, held)
        except Exception:   # a missing name, an item that raises whatever the args: the plain way
            return None

    def _source(self, outcome: tuple) -> str:
        render = _Render(self, outcome)
        for name in self.args:
            render.ident(name)
        texts, deps, reads = [], {}, {}
        for name, expr in self.items:
            render.refs = set()
            texts.append(render.r(expr, True))
            reads[name] = render.refs
            deps[name] = frozenset().union(*({n} if n in self.args else deps.get(n, ()) for n in render.refs))
        outputs = [render.ref(name) for name in self.outputs]
        every = set(self.args)
        groups: dict[frozenset, list[int]] = {}
        for i, (name, _expr) in enumerate(self.items):
            groups.setdefault(deps[name], []).append(i)
        # a group's items read only groups of fewer args (or their own, earlier): fewer first
        order = sorted(groups.items(), key=lambda g: (len(g[0]), g[1][0]))
        made = [name for name in render.used if name not in self.varying]
        lines = ["def _make(v, T, H):"]  # i18n: not text
        lines += [f"    {render.ident(name)} = v[{name!r}]" for name in made]
        lines += [f"    h{i} = H[{i}]" for i in sorted(render.hoisted)]
        body = []
        kept_groups = {group for group, members in order if group and not group | self.steady >= every
                       and sum(len(texts[i]) + 3 + len(render.ident(self.items[i][0])) for i in members)
                       >= _WORTH_REMEMBERING}
        order = [(group, members) for group, members in self._moved(order, kept_groups, reads)]
        for n, (group, members) in enumerate(order):
            assign = [f"{render.ident(self.items[i][0])} = {texts[i]}" for i in members]
            if not group:                   # the same at every call: computed once, here
                lines += ["    " + a for a in assign]
            elif group not in kept_groups:
                body += ["        " + a for a in assign]
            else:
                lines.append(f"    C{n} = {{}}")
                # a group remembers the items read outside it (by other groups, as outputs)
                inside = {self.items[i][0] for i in members}
                outside = set(self.outputs).union(*(reads[name] for name, _e in self.items if name not in inside))
                kept = [render.ident(self.items[i][0]) for i in members if self.items[i][0] in outside]
                names = ", ".join(kept) + "," if kept else ""
                keys = self._key(group, [self.items[i][0] for i in members], deps, reads)
                key = ", ".join(render.ident(a) for a in keys)
                # one name is its own key (a tuple of one compares and hashes as it does)
                body += [f"        k = {key}" if len(keys) == 1 else f"        k = ({key})",  # i18n: not text
                         f"        c = C{n}.get(k)", "        if c is None:"]
                body += ["            " + a for a in assign]
                body += [f"            C{n}[k] = ({names})", "        else:",  # i18n: not text
                         f"            {names} = c" if kept else "            pass"]  # i18n: not text
        lines.append(f"    def _run({', '.join(render.ident(a) for a in self.args)}):")  # i18n: not text
        lines += body
        lines.append(f"        return ({', '.join(outputs)},)")  # i18n: not text
        lines.append("    return _run")  # i18n: not text
        return "\n".join(lines)


    def _moved(self, order: list, kept: set, reads: dict) -> list:
        """`order` with each item computed at every call that only one remembered group reads
        (and no output) moved into that group, computed when the group is: read nowhere else,
        it is needed only there (its own args are among the group's)."""
        names = [name for name, _expr in self.items]
        group_of = {i: group for group, members in order for i in members}
        readers: dict[str, set[int]] = {}
        for j, name in enumerate(names):
            for r in reads[name]:
                readers.setdefault(r, set()).add(j)
        outputs = set(self.outputs)
        for i in reversed(range(len(names))):
            group = group_of[i]
            if not group or group in kept or names[i] in outputs or not readers.get(names[i]):
                continue
            targets = {group_of[j] for j in readers[names[i]]}
            if len(targets) == 1 and next(iter(targets)) in kept:
                group_of[i] = next(iter(targets))
        return [(group, [i for i in range(len(names)) if group_of[i] == group]) for group, _m in order]

    def _key(self, group: frozenset, members: list[str], deps: dict, reads: dict) -> list[str]:
        """The names a remembered group's values are remembered under: its args, but an arg its
        items do not read is replaced by the few earlier items they read that depend on it (the
        search's time items read the ZeRO stage only as "above 2?", through two earlier items:
        stages 0, 1 and 2 share their values). Items are pure functions of what they read."""
        own = set(members)
        read = set().union(*(reads[name] for name in members)) - own
        names = [name for name, _expr in self.items]
        carriers = [n for n in names if n in read and deps.get(n)]
        dropped, added = set(), set()
        for arg in self.args:
            if arg in group and arg not in read and arg not in self.steady:
                via = {n for n in carriers if arg in deps[n]}
                if 0 < len(via) <= _KEY_CARRIERS and len(added | via) <= _KEY_CARRIERS:
                    dropped.add(arg)
                    added |= via
        return [a for a in self.args if a in group and a not in dropped] + [n for n in names if n in added]


def _probe_source(probes: list[tuple[str, bool]]) -> str:
    lines = ["def _probe(v, T):", "    out = []"]  # i18n: not text
    for text, _test in probes:
        lines += ["    try:", f"        out.append({text})",  # i18n: not text
                  "    except Exception:", "        out.append(_FAILED)"]
    lines.append("    return out")  # i18n: not text
    return "\n".join(lines)


def _compile_cached(source: str, name: str) -> Callable:
    compiled = _SPECIALIZED.get(source)
    if compiled is None:
        namespace = dict(_RUNTIME, _FAILED=_FAILED)
        exec(compile(source, "<trainbudget specialised>", "exec"), namespace)  # i18n: not text
        if len(_SPECIALIZED) >= 1024:
            _SPECIALIZED.clear()
        compiled = _SPECIALIZED[source] = namespace[name]
    return compiled
