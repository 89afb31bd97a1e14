"""A source file as its reader knows it: a notebook cell as ``In [3]``, a module by its file name.

IPython is never imported here (it is no dependency): when a kernel has it
loaded, its compiler names the cells it ran.
"""

from __future__ import annotations

import os
import sys


def file_label(file: str) -> str:
    """``In [3]`` for a file that is a notebook cell of this kernel, else the file's own name."""
    shell = _ipython()
    format_code_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if format_code_name is not None:
        try:
            named = format_code_name(file)
        except Exception:  # an IPython whose cache we cannot read names the file plainly
            named = None
        if named:
            return str(named[1]).replace("In[", "In [")
    return os.path.basename(file)


def _ipython() -> object | None:
    module = sys.modules.get("IPython")
    get_ipython = getattr(module, "get_ipython", None)
    return get_ipython() if callable(get_ipython) else None
