// Launching through OpenMPI's mpirun (horovodrun --mpi), as Horovod's MPI
// mode does: mpirun starts every worker on the plan's hosts; the workers
// find their place in the plan from OMPI_COMM_WORLD_RANK (libhvd reads it)
// and join the rendezvous as every worker does. Collectives stay on Gloo.
// Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launcher/hosts.h"

namespace hvd::launcher {

// mpirun's command line: tagged output, the plan's hosts as -H in rank
// order, one process per slot without binding (Horovod's defaults), each
// of `exports` passed with -x NAME (its value from mpirun's environment,
// never on the command line), the user's --mpi-args, then the command.
std::vector<std::string> MpirunArgv(const std::string& mpirun,
                                    const std::vector<HostSpec>& hosts,
                                    const std::vector<std::string>& exports,
                                    const std::vector<std::string>& mpi_args,
                                    const std::vector<std::string>& command,
                                    bool as_root);

// Which variables of a worker's environment ("K=V") mpirun must carry to
// other hosts: Horovod's, hvd's, NCCL's and the search paths.
std::vector<std::string> MpirunExports(const std::vector<std::string>& env);

// A line of mpirun's tagged output ("[1,3]<stdout>:text"): the rank and
// where its text starts, or false.
bool SplitMpirunLabel(std::string_view line, int* rank, size_t* text_at);

// mpirun's report of the first failed process ("  Process name: [[4,1],2]"):
// its rank, or false.
bool ParseMpirunProcessName(std::string_view line, int* rank);

}  // namespace hvd::launcher
