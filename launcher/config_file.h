// horovodrun --config-file: Horovod's YAML file read into flag values, as
// Horovod reads it. Pure: the file's text is handed in.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/flags.h"

namespace hvd::launcher {

// Reads `text` (the file at `path`, named in errors) into `out`: a top-level
// `controller` (gloo, or mpi as --mpi), then the sections Horovod has
// (params, autotune, timeline, stall_check, library_options, logging,
// elastic), each value checked as its flag's. What hvd does not know is
// one line in `warnings`, not an error, so a file written for a newer
// Horovod still loads; Horovod keys that mean nothing for hvd go to
// `notes` (printed with --verbose).
Status ReadConfigFile(const std::string& text, const std::string& path,
                      FlagValues& out, std::vector<std::string>& notes,
                      std::vector<std::string>& warnings);

}  // namespace hvd::launcher
