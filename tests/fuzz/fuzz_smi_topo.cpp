// libFuzzer target: any bytes as `nvidia-smi topo -m` — parse (core::Error for "no GPU matrix" is the one
// allowed exception), then the bandwidth model, findings and JSON.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "topo/analysis.h"
#include "topo/smi_topo_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace scalescope::topo;
  try {
    const auto report = analyse(parse_smi_topo(text, "fuzz"));
    (void)nlohmann::json(report).dump();
  } catch (const scalescope::core::Error&) {
  }
  return 0;
}
