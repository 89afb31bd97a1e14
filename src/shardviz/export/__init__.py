"""Self-contained HTML pages that draw shardviz pictures with no kernel and no network.

``page.py``: ``save_html`` (one picture per page, bundle and payload
inline). ``course.py``: notebooks to pages (``python -m
shardviz.export.course``, ``make course``), every shardviz widget output
replaced by its inline picture. ``nbconvert.py``: the same pages as the
``shardviz`` nbconvert exporter (``jupyter nbconvert --to shardviz``,
docs/nbconvert.md).
"""
