"""Bytes and memory: what a collective moves and what a device holds.

Takes collectives (their bytes), the compiled module and XLA's buffer
assignment and live ranges (``liveness.py`` reads those dumps). Gives the
bytes each device sends (``wire.py``: ring-algorithm estimates;
``device_bytes.py``: where XLA:CPU moved more), the traffic summed per mesh
axis, kind and line (``totals.py``), and the bytes live at each step of the
schedule (``timeline.py``), with the payload part that draws them
(``timeline_payload.py``) and both counts of them by name (``counts.py``).
"""
