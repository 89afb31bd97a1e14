"""Lines, names, scopes and passes: where the user wrote each value.

Takes the traced jaxpr (``jaxpr_walk.py`` walks every value it computes) and
the call stacks JAX and XLA keep. Gives each value its user's frame
(``frames.py``), its source line (``sources.py``) and the program's functions
as blocks of source (``source_blocks.py``), its name scope (``scopes.py``),
the pass of a Python loop it belongs to (``passes.py``, and in the compiled
program ``pass_levels.py``) and its user-facing name (``naming.py``).
"""
