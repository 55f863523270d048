// libhvd.so's own source: the static libhvd makes up the rest of it. The
// version a loaded library carries, for a program (or `strings`) to tell
// which one it got.
#ifndef HVD_VERSION
#error "HVD_VERSION is set by runtime/CMakeLists.txt"
#endif

extern "C" {
extern const char hvd_library_version[];
const char hvd_library_version[] = HVD_VERSION;
}
