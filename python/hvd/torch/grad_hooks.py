"""What both distributed optimizers (optimizer.py, adasum_optimizer.py)
share: a hook on each parameter's gradient accumulator that counts the
backward passes of a step and acts on the last one."""

from typing import Any, Iterable

import torch


class GradientHooks:
    """Mixed in by a distributed optimizer, which keeps ``_delay`` (passes
    left per parameter), ``_handles`` (per parameter: its reduction, or
    ``(None, None)`` while it waits), ``_grad_accs`` and
    ``backward_passes_per_step``, and defines ``_gradient_final(p)``: what
    to start once p's gradient is final for the step (it records p's entry
    in ``_handles``)."""

    def _register_hooks(self, params: Iterable[torch.Tensor]) -> None:
        for p in params:
            # The AccumulateGrad node of p: it runs once p.grad holds this
            # pass's gradient.
            acc = p.expand_as(p).grad_fn.next_functions[0][0]
            acc.register_hook(self._make_hook(p))
            self._grad_accs.append(acc)

    def _make_hook(self, p: torch.Tensor) -> Any:
        def hook(*ignore: Any) -> None:
            if p in self._handles and self._handles[p][0] is not None:
                if self._delay[p] <= 0:
                    raise AssertionError(
                        "Gradients were computed more than "
                        "backward_passes_per_step times before call to "
                        "step(). Increase backward_passes_per_step to "
                        "accumulate gradients locally.")
            self._delay[p] -= 1
            if self._delay[p] == 0:
                self._gradient_final(p)
            else:
                self._handles[p] = (None, None)
        return hook

    def set_backward_passes_per_step(self, passes: int) -> None:
        """Gradients accumulate over `passes` backward passes from now on."""
        if passes < 1:
            raise ValueError("backward_passes_per_step must be at least 1")
        self.backward_passes_per_step = passes
        for p in self._delay:
            self._delay[p] = passes

    def zero_grad(self, *args: Any, **kwargs: Any) -> Any:
        if self._handles:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but "
                "before optimizer.step() or optimizer.synchronize(). This is "
                "prohibited as it can cause a race condition.")
        return super().zero_grad(*args, **kwargs)
