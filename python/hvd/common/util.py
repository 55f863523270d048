"""Horovod's horovod.common.util: what this build has, a scoped
environment, and the small helpers Horovod's tests and user scripts
import from it.

Horovod asks each framework extension, in a forked child, what it was
built with; hvd has one core for every framework, so the answers come
from it directly, and stay the same for every extension name.
"""

import importlib.util
import os
import sysconfig
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional

from hvd.common import basics

# The frameworks Horovod builds an extension for, in the order it asks.
EXTENSIONS = ["tensorflow", "torch", "mxnet"]


def _cache(f: Callable[..., Any]) -> Callable[..., Any]:
    """Remembers f's answer per argument list (keyword order aside)."""
    answers: Dict[Any, Any] = {}

    def cached(*args: Any, **kwargs: Any) -> Any:
        key = (args, frozenset(kwargs.items()))
        if key not in answers:
            answers[key] = f(*args, **kwargs)
        return answers[key]

    return cached


def get_ext_suffix() -> str:
    """The file suffix of this interpreter's extension modules."""
    return (sysconfig.get_config_var("EXT_SUFFIX") or
            sysconfig.get_config_var("SO") or ".so")


def get_extension_full_path(pkg_path: str, *args: str) -> str:
    """pkg_path's folder joined with args, the last one an extension's
    name that gets the suffix."""
    if not args:
        raise ValueError("name the extension: at least one path part")
    folder = os.path.join(os.path.dirname(pkg_path), *args[:-1])
    return os.path.join(folder, args[-1] + get_ext_suffix())


def check_extension(ext_name: str, ext_env_var: str, pkg_path: str,
                    *args: str) -> None:
    """ImportError unless the extension's file exists."""
    path = get_extension_full_path(pkg_path, *args)
    if not os.path.exists(path):
        raise ImportError(f"Extension {ext_name} has not been built: {path} "
                          f"not found (rebuild with {ext_env_var}=1 to see "
                          "why)")


def extension_available(ext_base_name: str, verbose: bool = False) -> bool:
    """Whether ``horovod.<ext_base_name>`` can be imported here: hvd has
    the module and the framework itself is installed."""
    found = (importlib.util.find_spec(ext_base_name) is not None and
             importlib.util.find_spec("hvd." + ext_base_name) is not None)
    if verbose:
        print(f"Extension {ext_base_name} was{'' if found else ' NOT'} "
              "built.")
    return found


@_cache
def gpu_available(ext_base_name: str, verbose: bool = False) -> bool:
    """Whether the framework's extension would run on a GPU here."""
    if ext_base_name != "torch" or not extension_available("torch"):
        return False
    import torch
    return bool(basics.cuda_built() and torch.cuda.is_available())


@_cache
def mpi_built(verbose: bool = False) -> bool:
    return basics.mpi_built()


@_cache
def gloo_built(verbose: bool = False) -> bool:
    return basics.gloo_built()


@_cache
def nccl_built(verbose: bool = False) -> int:
    return basics.nccl_built()


@_cache
def ddl_built(verbose: bool = False) -> bool:
    return basics.ddl_built()


@_cache
def ccl_built(verbose: bool = False) -> bool:
    return basics.ccl_built()


@contextmanager
def env(**kwargs: Optional[str]) -> Iterator[None]:
    """Sets the named environment variables (None ones are left alone)
    for the ``with`` block, then puts back what was there before: the old
    value, or no variable."""
    given = {k: v for k, v in kwargs.items() if v is not None}
    before = {k: os.environ.get(k) for k in given}
    os.environ.update(given)
    try:
        yield
    finally:
        for k, old in before.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old


def get_average_backwards_compatibility_fun(reduce_ops: Any
                                            ) -> Callable[[Any, Any], Any]:
    """Maps the old ``average=`` argument onto ``op=``: op wins, both
    given is an error, neither means Average."""

    def choose(op: Any, average: Optional[bool]) -> Any:
        if op is not None:
            if average is not None:
                raise ValueError("give op or average, not both: op "
                                 "supersedes average")
            return op
        if average is None:
            return reduce_ops.Average
        warnings.warn("the average parameter is replaced by op and will be "
                      "removed in v1.0", DeprecationWarning)
        return reduce_ops.Average if average else reduce_ops.Sum

    return choose


def num_rank_is_power_2(num_rank: int) -> bool:
    """Adasum's condition on the number of ranks."""
    return num_rank > 0 and num_rank & (num_rank - 1) == 0


def split_list(items: List[Any], n: int) -> List[List[Any]]:
    """items in n consecutive parts whose lengths differ by at most one,
    the longer ones first."""
    base, extra = divmod(len(items), n)
    parts, at = [], 0
    for i in range(n):
        length = base + (1 if i < extra else 0)
        parts.append(items[at:at + length])
        at += length
    return parts


def is_iterable(x: Any) -> bool:
    try:
        iter(x)
    except TypeError:
        return False
    return True


@_cache
def is_version_greater_equal_than(ver: str, target: str) -> bool:
    """ver >= target, target written major.minor.patch."""
    from packaging import version
    if not isinstance(ver, str) or not isinstance(target, str):
        raise ValueError("both versions must be strings, got "
                         f"{type(ver).__name__} {ver!r} and "
                         f"{type(target).__name__} {target!r}")
    if len(target.split(".")) != 3:
        raise ValueError("the target version must read major.minor.patch, "
                         f"not {target!r}")
    return version.parse(ver) >= version.parse(target)
