"""Background threads as Horovod's horovod.runner.util.threads makes them:
``in_thread`` starts one, ``on_event`` runs a function once an event is
set, ``execute_function_multithreaded`` maps a function over argument
lists on a pool of threads."""

import queue
import threading
from typing import Any, Callable, Dict, List, Optional


def _check_args(args: Any) -> None:
    if not isinstance(args, tuple):
        raise ValueError(f"args must be a tuple, not {type(args).__name__} "
                         "(for one argument write (arg,))")


def in_thread(target: Callable[..., Any], args: tuple = (),
              name: Optional[str] = None, daemon: bool = True,
              silent: bool = False) -> threading.Thread:
    """Starts ``target(*args)`` on a new thread and returns the thread;
    ``silent`` swallows whatever the target raises."""
    _check_args(args)
    body = target
    if silent:
        def body(*call_args: Any) -> None:  # noqa: F811
            try:
                target(*call_args)
            except BaseException:  # silent means every exception
                pass
    thread = threading.Thread(target=body, args=args, name=name,
                              daemon=daemon)
    thread.start()
    return thread


def on_event(event: threading.Event, func: Callable[..., Any],
             args: tuple = (), stop: Optional[threading.Event] = None,
             check_stop_interval_s: float = 1.0, daemon: bool = True,
             silent: bool = False) -> threading.Thread:
    """Runs ``func(*args)`` on a thread once ``event`` is set. With a
    ``stop`` event (looked at every ``check_stop_interval_s``), setting it
    first ends the thread without calling ``func``. A thread that is not
    a daemon needs a stop event, or it could hold the process forever."""
    if event is None:
        raise ValueError("on_event needs an event to wait for, not None")
    _check_args(args)
    if stop is None and not daemon:
        raise ValueError("a thread that is not a daemon needs a stop event")

    def wait_then_call() -> None:
        if stop is None:
            event.wait()
        else:
            while not (event.is_set() or stop.is_set()):
                event.wait(check_stop_interval_s)
            if stop.is_set():
                return
        func(*args)

    return in_thread(wait_then_call, daemon=daemon, silent=silent)


def execute_function_multithreaded(fn: Callable[..., Any],
                                   args_list: List[List[Any]],
                                   block_until_all_done: bool = True,
                                   max_concurrent_executions: int = 1000
                                   ) -> Optional[Dict[int, Any]]:
    """Calls ``fn(*args_list[i])`` for every i on at most
    ``max_concurrent_executions`` threads. Blocking, it returns
    ``{i: result}`` and raises RuntimeError if any call failed; otherwise
    it returns None at once (the threads are daemons)."""
    pending: "queue.Queue[Any]" = queue.Queue()
    for index, call_args in enumerate(args_list):
        pending.put((index, list(call_args)))
    results: Dict[int, Any] = {}
    results_lock = threading.Lock()

    def drain() -> None:
        while True:
            try:
                index, call_args = pending.get_nowait()
            except queue.Empty:
                return
            value = fn(*call_args)
            with results_lock:
                results[index] = value

    workers = [in_thread(drain, daemon=not block_until_all_done)
               for _ in range(min(max_concurrent_executions, len(args_list)))]
    if not block_until_all_done:
        return None
    # join() with a timeout, so that a signal (Ctrl-C) still gets through.
    while any(t.is_alive() for t in workers):
        for t in workers:
            t.join(0.1)
    if len(results) != len(args_list):
        raise RuntimeError(f"some calls of {fn.__name__} did not complete "
                           "successfully")
    return results
