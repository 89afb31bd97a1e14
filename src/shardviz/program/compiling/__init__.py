"""Compiling and reading the module: the stage that runs first and joins the others.

Takes the user's function and arguments. ``trace_here.py`` checks and names
the arguments (``arguments.py``), traces, lowers and compiles once, and reads
the optimized module and XLA's dumps while XLA compiles (``module_reading.py``:
what the module says on its own, before any value is laid out).
``assemble.py`` passes the jaxpr and that reading through the other stages
(``lines/``, ``values/``, ``collectives/``, ``memory/``) and gives a
:class:`~shardviz.program.Program`.
"""
