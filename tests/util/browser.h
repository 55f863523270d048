// A real browser for the live page's tests: Debian's chromium, headless,
// in a profile of its own that it leaves behind in no place but a
// temporary folder. The page runs its script for `budget` of virtual time
// (its polls included) before the DOM is read or the screenshot taken.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace hvd::testing {

// Where chromium is; "" when it is not installed (a test then says so).
std::string ChromiumPath();

struct Rendered {
  bool ok = false;     // chromium ran and exited 0
  std::string dom;     // the document as rendered
  std::string errors;  // the page's console errors and failed loads, a line
                       // each ("" when none), or why chromium failed
};

// Loads `url` and returns its rendered DOM.
Rendered RenderPage(const std::string& url,
                    std::chrono::milliseconds budget = std::chrono::seconds(5));

// What is wrong with `url` as a browser renders it: chromium failing, the
// page's console errors, each of `parts` missing from its DOM, and (with
// `png`) a screenshot that could not be saved there; "" when nothing is.
std::string PageLacks(const std::string& url,
                      const std::vector<std::string>& parts,
                      const std::string& png = "");

// Saves a screenshot of `url` (width x height) to `png`; false when it
// could not.
bool Screenshot(const std::string& url, const std::string& png,
                int width = 1300, int height = 1500,
                std::chrono::milliseconds budget = std::chrono::seconds(5));

}  // namespace hvd::testing
