"""What-if tracing: a program compiled for a mesh larger than this machine, in a child process.

A step of :func:`shardviz.program.trace.trace` (its ``mesh=``): the parent
(``parent.py``) checks the mesh and the abstract arguments, sends the function
to a child Python (``child.py``) whose JAX has one simulated CPU device per mesh
device, and reads the Program back; the child traces it with the in-process
trace. Nothing here imports ``trace.py``: the Program's way to be traced again
comes from the caller.
"""
