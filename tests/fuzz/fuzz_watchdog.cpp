// libFuzzer target: any bytes as PyTorch watchdog messages — parse, cross-rank analysis, JSON.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "readers/job/watchdog.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace scalescope::analyze;
  (void)has_watchdog_messages(text);
  std::vector<WatchdogLog> logs{parse_watchdog(text, "fuzz"), parse_watchdog(text.substr(size / 3), "fuzz-tail")};
  const auto a = analyze_watchdog(logs);
  (void)nlohmann::json(logs[0]).dump();
  (void)nlohmann::json(a).dump();
  return 0;
}
