"""The one exception type shardviz raises for input it rejects."""


class ShardingError(ValueError):
    """An input shardviz cannot lay out: the message names what was wrong.

    A ``ValueError`` subclass, so code that already catches JAX's own
    ``ValueError`` for bad shardings keeps working.
    """
