"""The terminal picture: ``print(layout)`` and ``shardviz.render_text(x)``.

``picture.py`` draws a layout as a grid of boxes naming the devices that hold
each block; ``ranges.py`` holds the arithmetic behind it (device-id lists as
short text, index intervals, folding blocks into groups); ``ansi.py`` decides
whether and how to colour. Nothing here imports widget code.
"""
