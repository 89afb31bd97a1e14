"""The Jupyter widgets: one anywidget per view over one front-end bundle.

``base.py`` (``ViewWidget``: numbered edit messages answered by one write of
the ``answer`` trait, docs/payload.md) and ``controller.py`` (``EditController``: plain Python,
refusals as ``error``/``error_source``) are what every view shares.
``array.py`` (``ShardingWidget``, with the cost of each move), ``tree.py``
(``TreeWidget``, re-sharded by rules) and ``program.py`` (``ProgramWidget``,
re-traced when an input's spec changes) are the views; ``show.py`` picks the
right one, ``preview.py`` answers the array view's value previews and
``naming.py`` finds the user's variable name for copy code. Imported on
first use, so code that only describes layouts does not load anywidget.
"""
