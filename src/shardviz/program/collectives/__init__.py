"""Collectives: each one the compiled module runs, as the user knows it.

Takes the module's collectives (``hlo/``), the lines and values of the
earlier stages and the mesh. Gives each collective its mesh axes, its line
and parts (``reading.py``), and its layer, loop pass and array
(``places.py``).
"""
