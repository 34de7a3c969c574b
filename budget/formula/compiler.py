"""Items compiled to one Python function (`compile_items`), each source once per process, and a
large source's bytecode kept across runs (`_code`)."""

from __future__ import annotations

import types
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
        exec(_code(source, "<trainbudget model>"), namespace)  # i18n: not text
        if len(_COMPILED) >= 4096:     # a long run's one-off sentences: start afresh
            _COMPILED.clear()
        compiled = _COMPILED[source] = namespace["_model"]
    return compiled


# Sources from this size up (the whole model, the search's functions: 10-40 ms to compile)
# are compiled once per machine, not per process.
_KEEP_COMPILED_FROM = 8192


def _code(source: str, filename: str) -> types.CodeType:
    """compile(source), kept across runs for a large source: budget.cache keeps the code's
    marshal bytes (as Latin-1 text) under a digest of the source and the bytecode's version,
    as a .pyc keeps a module's; anything unreadable is compiled afresh."""
    if len(source) < _KEEP_COMPILED_FROM:
        return compile(source, filename, "exec")
    import importlib.util
    import marshal

    from ..core.cache import cached

    def fresh() -> str:
        return marshal.dumps(compile(source, filename, "exec")).decode("latin-1")

    kind = f"compiled {filename} {importlib.util.MAGIC_NUMBER.hex()}"  # i18n: not text
    try:
        code = marshal.loads(cached(source.encode("utf-8"), kind, fresh).encode("latin-1"))
    except (ValueError, EOFError, TypeError):
        code = None
    return code if isinstance(code, types.CodeType) else compile(source, filename, "exec")


# source -> its compiled function: the functions are pure (they read their two arguments and
# the runtime (budget.formula.runtime), and write only into the dict they are given), so one serves every caller
_COMPILED: dict[str, Callable[[dict, Mapping], dict]] = {}
