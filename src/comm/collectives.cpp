#include "comm/collectives.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "core/error.h"

namespace scalescope::comm {
namespace {

struct CollectiveNames {
  Collective c;
  std::string_view name;     // scalescope's
  std::string_view program;  // nccl-tests'
};
constexpr std::array<CollectiveNames, 7> kCollectives{{
    {Collective::all_reduce, "all_reduce", "all_reduce_perf"},
    {Collective::all_gather, "all_gather", "all_gather_perf"},
    {Collective::reduce_scatter, "reduce_scatter", "reduce_scatter_perf"},
    {Collective::broadcast, "broadcast", "broadcast_perf"},
    {Collective::reduce, "reduce", "reduce_perf"},
    {Collective::all_to_all, "all_to_all", "alltoall_perf"},
    {Collective::send_recv, "send_recv", "sendrecv_perf"},
}};

const CollectiveNames& names_of(Collective c) {
  for (const auto& n : kCollectives)
    if (n.c == c) return n;
  throw core::Error("unknown collective value " + std::to_string(static_cast<int>(c)));
}

// Lower-case with '-' and '_' removed, so "All-Reduce", "all_reduce" and "allreduce" compare equal.
std::string squash(std::string_view s) {
  std::string out;
  for (char ch : s)
    if (ch != '_' && ch != '-' && ch != '/') out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

std::string_view perf_program_name(Collective c) { return names_of(c).program; }
std::string_view to_string(Collective c) { return names_of(c).name; }

std::optional<Collective> parse_collective(std::string_view text) {
  std::string s = squash(text);
  if (s.ends_with("perf")) s.resize(s.size() - 4);  // "all_reduce_perf" squashes to "allreduceperf"
  for (const auto& n : kCollectives) {
    std::string program = squash(n.program);
    program.resize(program.size() - 4);
    if (s == squash(n.name) || s == program) return n.c;
  }
  if (s == "alltoall" || s == "a2a") return Collective::all_to_all;
  if (s == "p2p") return Collective::send_recv;
  return std::nullopt;
}

std::vector<Collective> all_collectives() {
  std::vector<Collective> out;
  for (const auto& n : kCollectives) out.push_back(n.c);
  return out;
}

std::string_view to_string(DataType t) {
  switch (t) {
    case DataType::f32: return "float";
    case DataType::f16: return "half";
    case DataType::bf16: return "bfloat16";
    case DataType::f64: return "double";
    case DataType::i32: return "int32";
    case DataType::i8: return "int8";
  }
  throw core::Error("unknown data type value " + std::to_string(static_cast<int>(t)));
}

std::optional<DataType> parse_data_type(std::string_view text) {
  const std::string s = lower(text);
  // nccl-tests' names first, then NCCL 1.x test names ("char", "int") and common spellings.
  if (s == "float" || s == "fp32" || s == "f32" || s == "float32") return DataType::f32;
  if (s == "half" || s == "fp16" || s == "f16" || s == "float16") return DataType::f16;
  if (s == "bfloat16" || s == "bf16") return DataType::bf16;
  if (s == "double" || s == "fp64" || s == "f64" || s == "float64") return DataType::f64;
  if (s == "int32" || s == "int" || s == "i32") return DataType::i32;
  if (s == "int8" || s == "char" || s == "i8") return DataType::i8;
  return std::nullopt;
}

std::size_t element_size(DataType t) {
  switch (t) {
    case DataType::f32: return 4;
    case DataType::f16: return 2;
    case DataType::bf16: return 2;
    case DataType::f64: return 8;
    case DataType::i32: return 4;
    case DataType::i8: return 1;
  }
  throw core::Error("unknown data type value " + std::to_string(static_cast<int>(t)));
}

std::string_view to_string(RedOp op) {
  switch (op) {
    case RedOp::sum: return "sum";
    case RedOp::prod: return "prod";
    case RedOp::max: return "max";
    case RedOp::min: return "min";
    case RedOp::avg: return "avg";
  }
  throw core::Error("unknown reduction value " + std::to_string(static_cast<int>(op)));
}

std::optional<RedOp> parse_red_op(std::string_view text) {
  const std::string s = lower(text);
  if (s == "sum") return RedOp::sum;
  if (s == "prod") return RedOp::prod;
  if (s == "max") return RedOp::max;
  if (s == "min") return RedOp::min;
  if (s == "avg") return RedOp::avg;
  return std::nullopt;
}

bool has_red_op(Collective c) {
  return c == Collective::all_reduce || c == Collective::reduce_scatter || c == Collective::reduce;
}

bool has_root(Collective c) { return c == Collective::broadcast || c == Collective::reduce; }

double bus_bandwidth_factor(Collective c, int n) {
  if (n < 1)
    throw core::Error("bus bandwidth factor asked for " + std::to_string(n) + " ranks",
                      "the world size must be at least 1");
  const double nd = n;
  switch (c) {
    case Collective::all_reduce: return 2.0 * (nd - 1.0) / nd;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return (nd - 1.0) / nd;
    case Collective::broadcast:
    case Collective::reduce:
    case Collective::send_recv: return 1.0;
  }
  throw core::Error("unknown collective value " + std::to_string(static_cast<int>(c)));
}

std::size_t element_count(Collective c, std::size_t size_bytes, DataType t, int n) {
  if (n < 1)
    throw core::Error("element count asked for " + std::to_string(n) + " ranks", "the world size must be at least 1");
  const std::size_t elt = element_size(t);
  const std::size_t count = size_bytes / elt;
  switch (c) {
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: {
      // Per-rank share, rounded down to whole 16-byte units as nccl-tests does for these three
      // (src/all_gather.cu, reduce_scatter.cu, alltoall.cu: (count/nranks) & ~(16/eltSize - 1)).
      const std::size_t per_rank = count / static_cast<std::size_t>(n);
      const std::size_t unit = std::max<std::size_t>(1, 16 / elt);
      return per_rank & ~(unit - 1);
    }
    default: return count;
  }
}

std::size_t size_column_bytes(Collective c, std::size_t requested_bytes, DataType t, int n) {
  const std::size_t bytes = element_count(c, requested_bytes, t, n) * element_size(t);
  switch (c) {
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return bytes * static_cast<std::size_t>(n);
    default: return bytes;
  }
}

}  // namespace scalescope::comm
