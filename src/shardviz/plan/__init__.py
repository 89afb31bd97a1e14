"""Planning a pod: trace on a mesh larger than this machine (what-if)."""
