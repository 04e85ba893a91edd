// nccl-tests' flags of `scalescope comm` resolved into the comm job's configuration (comm_job_options.h).

#include "runtime/comm_job_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "comm/collectives.h"
#include "core/error.h"

namespace scalescope::runtime {
namespace {

template <class T, class Parse, class All>
std::vector<T> parse_list(const std::string& flag, const std::string& text, Parse parse, All all, const char* valid) {
  if (text == "all") return all();
  auto v = parse(text);
  if (!v) throw core::UsageError(fmt::format("unknown {} '{}'", flag, text), std::string("use one of: ") + valid + ", or all");
  return {*v};
}

}  // namespace

std::uint64_t parse_size(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  std::uint64_t unit = 1;
  std::string suffix(end ? end : "");
  if (suffix == "K" || suffix == "k") unit = 1ull << 10;
  else if (suffix == "M" || suffix == "m") unit = 1ull << 20;
  else if (suffix == "G" || suffix == "g") unit = 1ull << 30;
  else if (!suffix.empty()) unit = 0;
  if (errno != 0 || end == text.c_str() || unit == 0 || !(value >= 0) || value * unit > 1.8e19)
    throw core::UsageError(fmt::format("{} '{}' is not a size", flag, text), "use bytes with an optional K, M or G suffix, e.g. 8, 64K, 4G");
  return static_cast<std::uint64_t>(std::llround(value * static_cast<double>(unit)));
}

bool op_looks_like_a_file_name(const std::string& op) {
  return op.find('.') != std::string::npos || op.find('/') != std::string::npos;
}

train::BackendKind comm_job_backend(const std::string& name) {
  return name == "auto" ? (train::visible_gpu_count() > 0 ? train::BackendKind::gpu : train::BackendKind::cpu)
                        : train::parse_backend_kind(name);
}

CommJobConfig comm_job_config(const CommJobOptions& f, train::BackendKind backend) {
  CommJobConfig c;
  c.backend = backend;
  c.world_size = f.world_size;
  auto& s = c.sweep;
  s.min_bytes = parse_size("-b", f.min_bytes);
  s.max_bytes = parse_size("-e", f.max_bytes);
  s.step_bytes = parse_size("-i", f.step_bytes);
  s.step_factor = f.step_factor;
  s.iters = f.iters;
  s.warmup_iters = f.warmup_iters;
  s.check = f.check;
  s.per_iteration_stats = !f.no_per_iteration;
  s.collectives = parse_list<comm::Collective>("collective", f.collective.empty() ? "all_reduce" : f.collective,
                                               comm::parse_collective, comm::all_collectives,
                                               "all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv");
  s.types = parse_list<comm::DataType>(
      "data type", f.datatype, comm::parse_data_type,
      [] { return std::vector<comm::DataType>{comm::DataType::f32, comm::DataType::f16, comm::DataType::bf16,
                                              comm::DataType::f64, comm::DataType::i32, comm::DataType::i8}; },
      "float, half, bfloat16, double, int32, int8");
  if (op_looks_like_a_file_name(f.op))  // meant for --out
    throw core::UsageError(fmt::format("unknown op '{}': in `comm`, -o is the reduction op, as in nccl-tests", f.op),
                           "write the result with --out FILE; -o takes sum, prod, max, min, avg or all");
  s.ops = parse_list<comm::RedOp>(
      "op", f.op, comm::parse_red_op,
      [] { return std::vector<comm::RedOp>{comm::RedOp::sum, comm::RedOp::prod, comm::RedOp::max, comm::RedOp::min,
                                           comm::RedOp::avg}; },
      "sum, prod, max, min, avg");
  if (f.root == "all") {
    s.roots.clear();
    for (int r = 0; r < f.world_size; ++r) s.roots.push_back(r);
  } else {
    char* end = nullptr;
    const long r = std::strtol(f.root.c_str(), &end, 10);
    if (end == f.root.c_str() || *end != '\0')
      throw core::UsageError(fmt::format("root '{}' is not a rank number", f.root), "use -r 0 or -r all");
    s.roots = {static_cast<int>(r)};
  }
  c.timeout_seconds = f.timeout_seconds;
  c.progress = f.progress;
  c.validate();
  return c;
}

}  // namespace scalescope::runtime
