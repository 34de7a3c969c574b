"""Items compiled to one Python function (`compile_items`), each source once per process."""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from .runtime import _RUNTIME
from .tree import Expr


def compile_items(items: Iterable[tuple[str, Expr]]) -> Callable[[dict, Mapping], dict]:
    """Compile (name, expr) pairs, in dependency order, into one Python function.

    The function takes a dict of input values and the lookup tables, adds every item's value
    to the dict and returns it. Compiling once keeps the layout search fast.
    """
    lines = ["def _model(v, T):"]  # i18n: not text
    for name, expr in items:
        lines.append(f"    v[{name!r}] = {expr.python()}")
    lines.append("    return v")  # i18n: not text
    source = "\n".join(lines)
    compiled = _COMPILED.get(source)
    if compiled is None:     # the same expressions compile once per process (issue 14)
        namespace = dict(_RUNTIME)
        exec(compile(source, "<trainbudget model>", "exec"), namespace)  # i18n: not text
        if len(_COMPILED) >= 4096:     # a long run's one-off sentences: start afresh
            _COMPILED.clear()
        compiled = _COMPILED[source] = namespace["_model"]
    return compiled


# source -> its compiled function: the functions are pure (they read their two arguments and
# budget.formula.runtime, and write only into the dict they are given), so one serves every caller
_COMPILED: dict[str, Callable[[dict, Mapping], dict]] = {}
