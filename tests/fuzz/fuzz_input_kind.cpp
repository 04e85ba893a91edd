// libFuzzer target: any bytes through input detection, as a head and as a whole file; only core::Error-free
// results are allowed (detect_input throws nothing).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "readers/input_kind.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace scalescope::analyze;
  (void)detect_input(text, "fuzz.json.gz", false);
  (void)detect_input(text, "fuzz.log", true);
  return 0;
}
