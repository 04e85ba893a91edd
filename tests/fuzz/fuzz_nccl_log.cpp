// libFuzzer target: any bytes as an NCCL debug log — parse, analyse (alone and as two logs of one run), JSON.
// Nothing may crash, leak, overflow or throw.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/nccl_log_analysis.h"
#include "readers/nccl/nccl_log.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace scalescope::analyze;
  std::vector<NcclLog> logs{parse_nccl_log(text, "fuzz")};
  logs.push_back(parse_nccl_log(text.substr(size / 2), "fuzz-half"));
  const auto a = analyze_nccl_logs(logs);
  (void)nlohmann::json(logs[0]).dump();
  (void)nlohmann::json(a).dump();
  return 0;
}
