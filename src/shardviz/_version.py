"""The one place the package version is written: hatch reads it for the build, ``shardviz.__version__`` falls
back to it in a source checkout that was never installed."""

__version__ = "0.1.0"
