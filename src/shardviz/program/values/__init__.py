"""Values and their layouts: how each value the program computes is laid out.

Takes the walked jaxpr, its names (``lines/``) and the compiled module.
Gives each value's layout from the best source there is, or why there is
none (``layouts.py``), what XLA's partitioner chose under Auto axes
(``xla_shardings.py``), the program's inputs and outputs with their
shardings (``inputs_outputs.py``), and the index arithmetic from device
tiles and groups to mesh axes (``axes.py``).
"""
