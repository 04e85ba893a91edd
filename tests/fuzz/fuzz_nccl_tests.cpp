// libFuzzer target: any bytes as an nccl-tests output — parse, as one table and table by table (core::Error is the
// one allowed exception), then the sweep analysis and JSON of whatever was read.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "readers/nccl/nccl_tests_parser.h"
#include "analysis/sweep_analysis.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace scalescope::analyze;
  try {
    const auto sweep = parse_nccl_tests(text, "fuzz");
    const auto a = analyze_sweep(sweep);
    (void)comm_report_json(sweep, a).dump();
  } catch (const scalescope::core::Error&) {
  }
  try {  // table by table, as `comm --from` and `analyze` read it
    for (const auto& sweep : parse_nccl_tests_tables(text, "fuzz")) (void)comm_report_json(sweep, analyze_sweep(sweep)).dump();
  } catch (const scalescope::core::Error&) {
  }
  return 0;
}
