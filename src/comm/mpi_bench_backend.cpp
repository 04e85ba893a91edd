#include "comm/mpi_bench_backend.h"

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "comm/check_pattern.h"
#include "comm/half_float.h"
#include "comm/mpi_communicator.h"
#include "core/error.h"

namespace scalescope::comm {
namespace {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw core::Error(fmt::format("{} failed: {}", call, std::string(text, static_cast<std::size_t>(len))),
                    "a peer rank may have died; see its messages");
}

int mpi_count(std::uint64_t n) {
  if (n > static_cast<std::uint64_t>(INT_MAX))
    throw core::Error(fmt::format("{} elements exceed MPI's int count", n), "use a smaller -e on CPU ranks");
  return static_cast<int>(n);
}

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
    case DataType::f32: return MPI_FLOAT;
    case DataType::f64: return MPI_DOUBLE;
    case DataType::i32: return MPI_INT32_T;
    case DataType::i8: return MPI_INT8_T;
    case DataType::f16:
    case DataType::bf16: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

// Element access by data type, through double (every pattern value is exact in every type).
double load(DataType t, const unsigned char* p, std::uint64_t i) {
  switch (t) {
    case DataType::f32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DataType::f64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case DataType::i32: { std::int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DataType::i8: { std::int8_t v; std::memcpy(&v, p + i, 1); return v; }
    case DataType::f16: { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); return half_to_float(v); }
    case DataType::bf16: { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); return bf16_to_float(v); }
  }
  return 0;
}

void store(DataType t, unsigned char* p, std::uint64_t i, double x) {
  switch (t) {
    case DataType::f32: { float v = static_cast<float>(x); std::memcpy(p + 4 * i, &v, 4); break; }
    case DataType::f64: { std::memcpy(p + 8 * i, &x, 8); break; }
    case DataType::i32: { auto v = static_cast<std::int32_t>(x); std::memcpy(p + 4 * i, &v, 4); break; }
    case DataType::i8: { auto v = static_cast<std::int8_t>(x); std::memcpy(p + i, &v, 1); break; }
    case DataType::f16: { auto v = float_to_half(static_cast<float>(x)); std::memcpy(p + 2 * i, &v, 2); break; }
    case DataType::bf16: { auto v = float_to_bf16(static_cast<float>(x)); std::memcpy(p + 2 * i, &v, 2); break; }
  }
}

// User-defined reductions for the 16-bit floats: widen to float, reduce, round back (as GPUs do per step).
template <bool Bf16, RedOp Op>
void reduce16(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = Bf16 ? bf16_to_float(a[i]) : half_to_float(a[i]);
    float y = Bf16 ? bf16_to_float(b[i]) : half_to_float(b[i]);
    float r = Op == RedOp::prod ? x * y : Op == RedOp::max ? std::max(x, y) : Op == RedOp::min ? std::min(x, y) : x + y;
    b[i] = Bf16 ? float_to_bf16(r) : float_to_half(r);
  }
}

template <bool Bf16>
MPI_User_function* user_function(RedOp op) {
  switch (op) {
    case RedOp::prod: return &reduce16<Bf16, RedOp::prod>;
    case RedOp::max: return &reduce16<Bf16, RedOp::max>;
    case RedOp::min: return &reduce16<Bf16, RedOp::min>;
    default: return &reduce16<Bf16, RedOp::sum>;
  }
}

pattern::Case pattern_case(const BenchCase& c, const RankInfo& info) {
  return {c.collective, c.op, info.rank, info.world_size, c.root, c.count};
}

}  // namespace

MpiBenchBackend::MpiBenchBackend() : corrupt_(std::getenv(kEnvCorruptResult) != nullptr) {
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  info_ = mpi_world_rank_info();
  version_ = mpi_library_version();
}

MpiBenchBackend::~MpiBenchBackend() {
  for (auto& [key, op] : user_ops_) MPI_Op_free(&op);
  MPI_Finalize();
}

MPI_Op MpiBenchBackend::reduction(DataType t, RedOp op) {
  if (t != DataType::f16 && t != DataType::bf16) {
    switch (op) {
      case RedOp::prod: return MPI_PROD;
      case RedOp::max: return MPI_MAX;
      case RedOp::min: return MPI_MIN;
      default: return MPI_SUM;  // avg = sum, then divided in launch()
    }
  }
  const RedOp base = op == RedOp::avg ? RedOp::sum : op;
  auto key = std::make_pair(static_cast<int>(t), static_cast<int>(base));
  auto it = user_ops_.find(key);
  if (it != user_ops_.end()) return it->second;
  MPI_Op created;
  check_mpi(MPI_Op_create(t == DataType::bf16 ? user_function<true>(base) : user_function<false>(base), 1, &created),
            "MPI_Op_create");
  user_ops_[key] = created;
  return created;
}

void MpiBenchBackend::reserve(std::uint64_t max_send_bytes, std::uint64_t max_result_bytes) {
  try {
    send_.assign(max_send_bytes, 0);
    result_.assign(max_result_bytes, 0);
  } catch (const std::bad_alloc&) {
    throw core::Error(fmt::format("cannot allocate {} + {} bytes of host memory for the benchmark buffers",
                                  max_send_bytes, max_result_bytes),
                      "use a smaller -e");
  }
}

void MpiBenchBackend::fill(const BenchCase& c) {
  const auto pc = pattern_case(c, info_);
  const std::uint64_t send_n = pattern::send_elements(pc), result_n = pattern::result_elements(pc);
  // Poison the result: 101 is no pattern value, so unwritten elements count as wrong.
  for (std::uint64_t i = 0; i < result_n; ++i) store(c.type, result_.data(), i, 101);
  if (!c.in_place) {
    for (std::uint64_t i = 0; i < send_n; ++i) store(c.type, send_.data(), i, pattern::send_value(pc, i));
    return;
  }
  // In place: the input sits in the result buffer (all-gather: in this rank's chunk).
  const std::uint64_t offset = c.collective == Collective::all_gather ? static_cast<std::uint64_t>(info_.rank) * c.count : 0;
  for (std::uint64_t i = 0; i < send_n; ++i) store(c.type, result_.data(), offset + i, pattern::send_value(pc, i));
}

void MpiBenchBackend::launch(const BenchCase& c) {
  const MPI_Datatype t = mpi_type(c.type);
  const int n = info_.world_size;
  const int count = mpi_count(c.count);
  const std::size_t es = element_size(c.type);
  void* send = c.in_place ? MPI_IN_PLACE : static_cast<void*>(send_.data());
  void* out = result_.data();
  switch (c.collective) {
    case Collective::all_reduce:
      check_mpi(MPI_Allreduce(send, out, count, t, reduction(c.type, c.op), MPI_COMM_WORLD), "MPI_Allreduce");
      break;
    case Collective::all_gather:
      check_mpi(MPI_Allgather(send, count, t, out, count, t, MPI_COMM_WORLD), "MPI_Allgather");
      break;
    case Collective::reduce_scatter:
      check_mpi(MPI_Reduce_scatter_block(send, out, count, t, reduction(c.type, c.op), MPI_COMM_WORLD),
                "MPI_Reduce_scatter_block");
      break;
    case Collective::broadcast:
      if (!c.in_place && info_.rank == c.root) std::memcpy(out, send_.data(), c.count * es);  // nccl: send → recv
      check_mpi(MPI_Bcast(out, count, t, c.root, MPI_COMM_WORLD), "MPI_Bcast");
      break;
    case Collective::reduce: {
      void* s = c.in_place ? (info_.rank == c.root ? MPI_IN_PLACE : out) : send_.data();
      check_mpi(MPI_Reduce(s, out, count, t, reduction(c.type, c.op), c.root, MPI_COMM_WORLD), "MPI_Reduce");
      break;
    }
    case Collective::all_to_all:
      check_mpi(MPI_Alltoall(send, count, t, out, count, t, MPI_COMM_WORLD), "MPI_Alltoall");
      break;
    case Collective::send_recv: {
      const int next = (info_.rank + 1) % n, prev = (info_.rank + n - 1) % n;
      if (c.in_place)
        check_mpi(MPI_Sendrecv_replace(out, count, t, next, 0, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Sendrecv_replace");
      else
        check_mpi(MPI_Sendrecv(send_.data(), count, t, next, 0, out, count, t, prev, 0, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE),
                  "MPI_Sendrecv");
      break;
    }
  }
  if (c.op == RedOp::avg && has_red_op(c.collective) &&
      !(c.collective == Collective::reduce && info_.rank != c.root)) {
    const std::uint64_t len = c.count;
    for (std::uint64_t i = 0; i < len; ++i) {
      double v = load(c.type, result_.data(), i);
      store(c.type, result_.data(), i,
            (c.type == DataType::i32 || c.type == DataType::i8) ? std::trunc(v / n) : v / n);
    }
  }
  if (corrupt_ && c.count > 0) store(c.type, result_.data(), 0, load(c.type, result_.data(), 0) + 1);
}

std::size_t MpiBenchBackend::record() {
  stamps_.push_back(std::chrono::steady_clock::now());
  return stamps_.size() - 1;
}

double MpiBenchBackend::seconds_between(std::size_t from, std::size_t to) {
  return std::chrono::duration<double>(stamps_.at(to) - stamps_.at(from)).count();
}

std::uint64_t MpiBenchBackend::count_wrong(const BenchCase& c) {
  const auto pc = pattern_case(c, info_);
  if (!pattern::result_is_checked(pc)) return 0;
  const double tol = pattern::avg_tolerance(pc, c.type);
  std::uint64_t wrong = 0;
  const std::uint64_t n = pattern::result_elements(pc);
  // MPI's in-place reduce-scatter leaves the result at the start of the buffer (MPI 3.1 §5.10.1).
  for (std::uint64_t i = 0; i < n; ++i) {
    const double want = pattern::expected_value(pc, i), got = load(c.type, result_.data(), i);
    if (!(std::abs(got - want) <= tol * std::abs(want))) ++wrong;
  }
  return wrong;
}

std::vector<double> MpiBenchBackend::all_gather_host(const std::vector<double>& values) {
  std::vector<double> out(values.size() * static_cast<std::size_t>(info_.world_size));
  check_mpi(MPI_Allgather(values.data(), mpi_count(values.size()), MPI_DOUBLE, out.data(), mpi_count(values.size()),
                          MPI_DOUBLE, MPI_COMM_WORLD),
            "MPI_Allgather");
  return out;
}

void MpiBenchBackend::barrier() { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

}  // namespace scalescope::comm
