"""One rank of ``horovod.run``: loads the pickled function, calls it, and
writes its answer (the value, or the exception with its traceback) where
``run`` collects it. Exits non-zero when the function raised, so that
horovodrun ends the job as for any failing worker."""

import os
import sys
import traceback

from hvd.runner import _RESULT


def main(folder: str) -> int:
    import cloudpickle
    with open(os.path.join(folder, "func.pkl"), "rb") as f:
        func, args, kwargs = cloudpickle.load(f)
    try:
        answer = (True, func(*args, **kwargs))
        status = 0
    except BaseException as e:  # noqa: B902 - every failure goes back
        trace = traceback.format_exc()
        try:
            cloudpickle.dumps(e)
            answer = (False, e, trace)
        except Exception:  # an exception that cannot travel: its text does
            answer = (False, None, trace)
        status = 1
    try:
        data = cloudpickle.dumps(answer)
    except Exception as e:  # a return value that cannot travel
        data = cloudpickle.dumps(
            (False, None, f"the return value cannot be pickled: {e}"))
        status = 1
    path = os.path.join(folder, _RESULT.format(_rank()))
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
    return status


def _rank() -> int:
    """This worker's rank: the job's, when the function joined it (an
    elastic job's rank comes from the rendezvous alone), else the one
    horovodrun planned."""
    from hvd import _core
    if _core.is_initialized():
        return _core.rank()
    return int(os.environ.get("HOROVOD_RANK", "0"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
