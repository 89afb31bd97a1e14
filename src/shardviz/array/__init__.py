"""The array view's engine: how one array, or a sharding with a shape, is laid out on devices.

Pure (JAX objects in, immutable data out; no widget code). ``describe``
(``describe.py``) reads an array, ShapeDtypeStruct or sharding into a
``Layout`` (``layout.py``: the pure data of ``model.py`` plus its payload and
terminal picture). Beside it: the input checks (``checks.py``), what the
devices are (``devices.py``), which block each device holds (``blocks.py``),
the editors' spec and mesh grammars (``grammar.py``), edits turned into JAX
objects (``edits.py``) and the array view's states (``placement.py``), the
"copy code" snippet (``codegen.py``), the array payload (``payload.py``,
docs/payload.md) with its run encoding (``runs.py``), and the move line: what
each device lacks of its new block (``move_needs.py``) and what moving the
array costs (``moves.py``, traced by the program engine its caller hands in).
The tree and program engines reuse these pieces; this package imports neither.
"""
