"""The result, for people: a traced program's payload and its terminal report.

Takes a :class:`~shardviz.program.model.ProgramData` (``model.py``, the
immutable data every stage fills in). Gives the payload a front end draws
(``payload.py``, docs/program-payload.md) and the text of ``print(prog)``
(``report.py``). :class:`~shardviz.program.Program` (``program.py``) wraps
both.
"""
