"""``import horovod.torch as hvd`` for scripts written for Horovod.

Every module ``horovod.X`` is ``hvd.X``: the same module object, so state
(handles, process sets, the joined job) is shared whichever name a script
or library imports.
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any, Optional, Sequence

import hvd as _hvd

__version__ = _hvd.__version__


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``horovod.X`` as the already imported (or importable) ``hvd.X``."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]],
                  target: Optional[ModuleType] = None
                  ) -> Optional[importlib.machinery.ModuleSpec]:
        if not fullname.startswith("horovod."):
            return None
        real = "hvd." + fullname[len("horovod."):]
        try:
            if importlib.util.find_spec(real) is None:
                return None
        except ModuleNotFoundError:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec
                      ) -> ModuleType:
        return importlib.import_module("hvd." + spec.name[len("horovod."):])

    def exec_module(self, module: ModuleType) -> None:
        pass  # already executed as hvd.X


if not any(isinstance(f, _Alias) for f in sys.meta_path):
    sys.meta_path.insert(0, _Alias())


def run(*args: Any, **kwargs: Any) -> Any:
    """Horovod's ``horovod.run`` (hvd.runner.run; imported when called)."""
    from hvd.runner import run as _run
    return _run(*args, **kwargs)
