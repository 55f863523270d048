"""What the environment says of this process's place in the job (as
Horovod's horovod.runner.common.util.env)."""

import os
from typing import Tuple

# Launchers and the variables they name rank and size by, in the order
# they are believed: horovodrun's, then OpenMPI's, then PMI's.
_RANK_AND_SIZE = (("HOROVOD_RANK", "HOROVOD_SIZE"),
                  ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                  ("PMI_RANK", "PMI_SIZE"))


def get_env_rank_and_size() -> Tuple[int, int]:
    """(rank, size) from the first launcher whose two variables are both
    set; (0, 1) outside any launcher. One of a pair without the other is
    an error."""
    for rank_var, size_var in _RANK_AND_SIZE:
        rank, size = os.environ.get(rank_var), os.environ.get(size_var)
        if rank is not None and size is not None:
            return int(rank), int(size)
        if rank is not None or size is not None:
            raise RuntimeError(
                f"cannot tell this process's rank and size: {rank_var} and "
                f"{size_var} must be set together, and only one is")
    return 0, 1
