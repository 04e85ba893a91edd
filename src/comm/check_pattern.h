#pragma once
// Inputs and expected outputs of the collective benchmark's data check, as pure functions of (rank, element
// index), so that any backend can fill buffers and count wrong elements without moving data to the host,
// on the CPU and (compiled by nvcc) inside CUDA kernels. Values are small integers chosen so every
// reduction is exact in every data type (int8, fp16 and bf16 included), hence the check is exact equality:
//  - sum:      input (3·rank + i) mod 4 ∈ [0, 3]; with n ≤ 32 ranks the sum is ≤ 96 (exact in int8 and bf16);
//              above 32 ranks the input is (rank + i) mod 2 (sum ≤ 127 up to 127 ranks);
//  - prod:     2 on rank (i mod n), 1 elsewhere: the product is 2;
//  - max/min:  (5·rank + 3·i) mod 11 − 5 ∈ [−5, 5];
//  - avg:      the same value (i mod 4) + 1 on every rank, so the average is that value. With a world size
//              that is not a power of two, NCCL's float average (sum scaled by a rounded 1/n) may be one unit
//              in the last place off; that case is compared with a one-ulp tolerance (avg_tolerance()).
// Non-reducing collectives send (7·rank + i) mod 13 − 6, distinct per rank and position.

#include <cstdint>

#include "comm/collectives.h"

#if defined(__CUDACC__)
#define SCALESCOPE_HD __host__ __device__ inline
#else
#define SCALESCOPE_HD inline
#endif

namespace scalescope::comm::pattern {

/// What one rank's buffers hold for one benchmark case. `count` is nccl-tests' per-rank count: elements
/// per rank for all-reduce/broadcast/reduce/send-recv, per rank chunk for all-gather (receives n·count),
/// reduce-scatter (sends n·count) and all-to-all (count per peer, n·count in each buffer).
struct Case {
  Collective collective = Collective::all_reduce;
  RedOp op = RedOp::sum;
  int rank = 0;
  int n = 1;
  int root = 0;
  std::uint64_t count = 0;
};

SCALESCOPE_HD bool is_reduction(Collective c) {
  return c == Collective::all_reduce || c == Collective::reduce_scatter || c == Collective::reduce;
}

SCALESCOPE_HD double reduction_input(const Case& c, int rank, std::uint64_t i) {
  switch (c.op) {
    case RedOp::sum:
      return c.n <= 32 ? static_cast<double>((3ull * rank + i) % 4) : static_cast<double>((rank + i) % 2);
    case RedOp::prod:
      return static_cast<int>(i % static_cast<std::uint64_t>(c.n)) == rank ? 2.0 : 1.0;
    case RedOp::max:
    case RedOp::min:
      return static_cast<double>(static_cast<int>((5ull * rank + 3ull * i) % 11) - 5);
    case RedOp::avg:
      return static_cast<double>(i % 4 + 1);
  }
  return 0.0;
}

SCALESCOPE_HD double reduced(const Case& c, std::uint64_t i) {
  double acc = reduction_input(c, 0, i);
  for (int r = 1; r < c.n; ++r) {
    double v = reduction_input(c, r, i);
    switch (c.op) {
      case RedOp::sum: acc += v; break;
      case RedOp::prod: acc *= v; break;
      case RedOp::max: acc = v > acc ? v : acc; break;
      case RedOp::min: acc = v < acc ? v : acc; break;
      case RedOp::avg: break;  // every rank holds the same value: the average is that value
    }
  }
  return acc;
}

SCALESCOPE_HD double plain_input(int rank, std::uint64_t i) {
  return static_cast<double>(static_cast<int>((7ull * rank + i) % 13) - 6);
}

/// Value of element `i` of this rank's send buffer (send-buffer length: see Case::count).
SCALESCOPE_HD double send_value(const Case& c, std::uint64_t i) {
  return is_reduction(c.collective) ? reduction_input(c, c.rank, i) : plain_input(c.rank, i);
}

/// Whether this rank's result is defined: not for reduce on a non-root rank.
SCALESCOPE_HD bool result_is_checked(const Case& c) {
  return !(c.collective == Collective::reduce && c.rank != c.root);
}

/// Expected value of element `i` of this rank's result (only where result_is_checked). Result lengths:
/// count (all-reduce, reduce-scatter, broadcast, reduce, send-recv) or n·count (all-gather, all-to-all).
SCALESCOPE_HD double expected_value(const Case& c, std::uint64_t i) {
  switch (c.collective) {
    case Collective::all_reduce:
    case Collective::reduce:
      return reduced(c, i);
    case Collective::reduce_scatter:
      return reduced(c, static_cast<std::uint64_t>(c.rank) * c.count + i);
    case Collective::all_gather:
      return plain_input(static_cast<int>(i / c.count), i % c.count);
    case Collective::broadcast:
      return plain_input(c.root, i);
    case Collective::all_to_all:  // chunk j came from rank j: its chunk for us sat at rank·count
      return plain_input(static_cast<int>(i / c.count), static_cast<std::uint64_t>(c.rank) * c.count + i % c.count);
    case Collective::send_recv:
      return plain_input((c.rank + c.n - 1) % c.n, i);
  }
  return 0.0;
}

/// Elements of this rank's send and result buffers for the case (nccl-tests' sendcount / recvcount).
SCALESCOPE_HD std::uint64_t send_elements(const Case& c) {
  return (c.collective == Collective::reduce_scatter || c.collective == Collective::all_to_all)
             ? c.count * static_cast<std::uint64_t>(c.n)
             : c.count;
}
SCALESCOPE_HD std::uint64_t result_elements(const Case& c) {
  return (c.collective == Collective::all_gather || c.collective == Collective::all_to_all)
             ? c.count * static_cast<std::uint64_t>(c.n)
             : c.count;
}

SCALESCOPE_HD bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

/// Allowed |result − expected| / |expected| for `type`: 0 (exact) except a float average over a world
/// size that is not a power of two, where one unit in the last place is allowed (see file comment).
SCALESCOPE_HD double avg_tolerance(const Case& c, DataType type) {
  if (c.op != RedOp::avg || !is_reduction(c.collective) || is_power_of_two(c.n)) return 0.0;
  switch (type) {
    case DataType::bf16: return 1.0 / 128;
    case DataType::f16: return 1.0 / 1024;
    case DataType::f32: return 1.0 / 8388608;
    case DataType::f64: return 1.0 / 4503599627370496.0;
    default: return 0.0;
  }
}

}  // namespace scalescope::comm::pattern
