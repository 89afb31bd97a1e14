"""Planning a pod: trace on a mesh larger than this machine (what-if), estimate a step's time per hardware.

Importing this package registers :func:`.estimate.estimate` as ``Program.estimate``
(``program`` never imports ``plan``); ``shardviz.trace`` lives here, so every
Program a user traces can be estimated.
"""

from . import estimate as _estimate  # noqa: F401  (registers Program.estimate)
