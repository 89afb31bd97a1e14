"""The shared terminal kit, and the array's picture drawn with it.

``lines.py`` lays text out in terminal columns (wide East Asian characters
count twice): width, pad, centre, fit (cut in the middle), clip (cut at the
end), wrap, flow, and emit of coloured segments; ``ranges.py`` writes device-id
lists, index intervals and byte counts as short text; ``ansi.py`` decides
whether and how to colour. Every report (``picture.py`` for an array,
``tree/report.py``, ``program/result/report.py``) is laid out with these. The
array's picture is three modules: ``picture.py`` plans it (header, legend,
how much to merge), ``blocks.py`` groups blocks into boxes, ``boxes.py`` draws
grids of boxes or the list that replaces them. Nothing here imports the
engine or widget code: the picture reads a layout through a protocol
(``blocks.Layout``).
"""
