"""A pytest plugin for mutation runs of parts that never change a trace: keep each traced program on disk.

Mutating ``plan/`` cannot change what ``shardviz.trace`` returns (``program/`` calls the
estimator only when asked), yet the plan tests trace a program per test and each mutant
would trace them all again. With ``SHARDVIZ_TRACE_CACHE`` set to a folder, the first run
(mutmut's clean run) pickles every program it traces there, keyed by the traced function's
code and closure and the arguments' shapes, dtypes and shardings; later runs load it. A key
that cannot be made stable (an object whose repr is its address) or a program that cannot be
pickled is simply traced again, so a cache can cost time but never changes an answer.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import re
from pathlib import Path
from typing import Any

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _function_key(fn: Any, depth: int = 0) -> str | None:
    if depth > 6:  # a closure that holds itself, or nearly so
        return None
    if isinstance(fn, functools.partial):
        inner = _function_key(fn.func, depth + 1)
        return None if inner is None else f"partial({inner}, {fn.args!r}, {sorted(fn.keywords.items())!r})"
    fn = getattr(fn, "__wrapped__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    cells = [_value_key(cell.cell_contents, depth + 1) for cell in (fn.__closure__ or ())]
    return f"{fn.__module__}.{fn.__qualname__}:{_code_key(code)}:{cells}:{_value_key(fn.__defaults__, depth + 1)}"


def _code_key(code: Any) -> str:
    consts = ", ".join(_code_key(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts)
    return f"{code.co_filename}:{code.co_firstlineno}:{code.co_code.hex()}:{code.co_names!r}:({consts})"


def _value_key(value: Any, depth: int = 0) -> str:
    if callable(value) and not isinstance(value, type):
        function = _function_key(value, depth)
        if function is not None:
            return function
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        sharding = getattr(value, "sharding", None)
        kind = type(value).__name__
        return f"{kind}({tuple(shape)}, {dtype}, {sharding!r}, {getattr(value, 'weak_type', None)})"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__}[{', '.join(_value_key(v, depth) for v in value)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_value_key(v, depth)}" for k, v in sorted(value.items(), key=repr)) + "}"
    return repr(value)


def cache_key(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    function = _function_key(fn)
    if function is None:
        return None
    text = f"{function}|{_value_key(args)}|{_value_key(kwargs)}"
    if _ADDRESS.search(text):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def _cached(trace: Any, folder: Path) -> Any:
    @functools.wraps(trace)
    def traced(fn: Any, *args: Any, **kwargs: Any) -> Any:
        key = cache_key(fn, args, kwargs)
        path = folder / f"{key}.pickle" if key else None
        if path is not None and path.exists():
            return pickle.loads(path.read_bytes())
        program = trace(fn, *args, **kwargs)
        if path is not None:
            try:
                data = pickle.dumps(program)
            except Exception:  # a program holding a lambda or a live executable stays uncached
                return program
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_bytes(data)
            partial.replace(path)
        return program

    return traced


def pytest_configure(config: Any) -> None:
    folder = os.environ.get("SHARDVIZ_TRACE_CACHE")
    if not folder:
        return
    import importlib

    import shardviz

    trace = importlib.import_module("shardviz.program.trace").trace
    Path(folder).mkdir(parents=True, exist_ok=True)
    shardviz.trace = _cached(trace, Path(folder))  # type: ignore[attr-defined]
