"""Pricing a step on hardware: the hardware table, where devices sit (topology), the links between
them, how long collectives take on those links (comms), and the step's estimate.

``plan`` never imports ``program``: the estimate reads a program through the
protocols of ``priced.py``, and a Program prices itself by calling it.
"""
