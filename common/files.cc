#include "common/files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hvd {

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return Status::NotFound("'" + path + "'", std::string("cannot be read: ") +
                                                  std::strerror(errno));
  }
  std::ostringstream out;
  out << f.rdbuf();
  return out.str();
}

StatusOr<std::string> ReadSecretFile(const std::string& path,
                                     const std::string& what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return Status::NotFound(what + " '" + path + "'", std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(what + " '" + path + "'",
                                   "is not a regular file");
  }
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
    return Status::PermissionDenied(
        what + " '" + path + "'",
        std::string("is accessible by group or others (mode ") + mode +
            "); run chmod 600 on it");
  }
  HVD_ASSIGN_OR_RETURN(std::string token, ReadWholeFile(path));
  size_t first = token.find_first_not_of(" \t\r\n");
  size_t last = token.find_last_not_of(" \t\r\n");
  token =
      first == std::string::npos ? "" : token.substr(first, last - first + 1);
  if (token.empty()) {
    return Status::InvalidArgument(what + " '" + path + "'", "is empty");
  }
  return token;
}

}  // namespace hvd
