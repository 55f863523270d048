// horovodrun's own lines ("horovodrun: ..." on stderr), from any thread,
// each written whole, and the newest of them kept for the live page
// (live_state.h) to show what the launcher said.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hvd::launcher {

// Writes "horovodrun: <line>\n" in one write (lines of several threads
// never split each other) and records it.
void Say(const std::string& line);
// Each line of `text` as one of Say's.
void SayLines(const std::string& text);

// The lines said so far (the newest kLinesKept of them), numbered from 1
// in the order they were said: those numbered after `after`.
inline constexpr size_t kLinesKept = 200;
std::vector<std::pair<uint64_t, std::string>> LinesSaidAfter(uint64_t after);

}  // namespace hvd::launcher
