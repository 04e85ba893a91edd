#pragma once
// The collectives, data types and reduction operations scalescope measures, named as nccl-tests names them,
// and the bus-bandwidth factors that make their bandwidths comparable across world sizes.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::comm {

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv };
enum class DataType { f32, f16, bf16, f64, i32, i8 };
enum class RedOp { sum, prod, max, min, avg };

/// nccl-tests program name: "all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "broadcast_perf",
/// "reduce_perf", "alltoall_perf", "sendrecv_perf".
std::string_view perf_program_name(Collective c);
/// Short name used on scalescope's command line and in JSON: "all_reduce", "all_gather", … "send_recv".
std::string_view to_string(Collective c);
/// Accepts scalescope's names, nccl-tests' program names (with or without "_perf") and common spellings
/// ("allreduce", "alltoall", "sendrecv"). Returns nothing for anything else.
std::optional<Collective> parse_collective(std::string_view text);
std::vector<Collective> all_collectives();

/// nccl-tests' type names: "float", "half", "bfloat16", "double", "int32", "int8".
std::string_view to_string(DataType t);
/// Accepts nccl-tests' names and aliases ("fp32", "f32", "float32", "fp16", "bf16", "fp64", "int", "char"…).
std::optional<DataType> parse_data_type(std::string_view text);
/// Bytes per element: 4, 2, 2, 8, 4, 1. Throws core::Error for a value outside the enum.
std::size_t element_size(DataType t);

/// nccl-tests' op names: "sum", "prod", "max", "min", "avg".
std::string_view to_string(RedOp op);
std::optional<RedOp> parse_red_op(std::string_view text);
/// Whether the collective takes a reduction operation (all-reduce, reduce-scatter, reduce).
bool has_red_op(Collective c);
/// Whether the collective has a root rank (broadcast, reduce).
bool has_root(Collective c);

/// Bus-bandwidth factor: busbw = algbw × factor, so that busbw reflects the per-link load and is comparable
/// across world sizes n. Source: nccl-tests doc/PERFORMANCE.md ("Bus bandwidth"): all-reduce 2(n−1)/n;
/// all-gather, reduce-scatter, all-to-all (n−1)/n; broadcast, reduce, send/recv 1.
/// Throws core::Error when n < 1.
double bus_bandwidth_factor(Collective c, int n);

/// Bytes that nccl-tests' "size" column counts for one rank (its algbw = size / time): for all-gather the
/// receive buffer (count × n elements), for reduce-scatter the send buffer, for the rest the buffer. This
/// helper returns the per-rank element count nccl-tests calls "count" for a given size.
/// As nccl-tests computes it (src/<collective>.cu, GetCollByteCount): size / element_size for all-reduce,
/// broadcast, reduce and send/recv; for all-gather, reduce-scatter and all-to-all the per-rank share
/// size / element_size / n rounded down to whole 16-byte units, which is why small sizes print as 0 bytes.
/// For a value read from a "size" column it returns exactly that row's "count". Throws core::Error when n < 1.
std::size_t element_count(Collective c, std::size_t size_bytes, DataType t, int n);

/// The "size" column nccl-tests prints (bytes) for a requested size (its -b/-e sweep value, bytes):
/// element_count × element_size, times n for all-gather, reduce-scatter and all-to-all (their size is the
/// whole n-rank buffer). Scalescope's addition for the live benchmark, so its sizes match nccl-tests' rows.
/// Throws core::Error when n < 1.
std::size_t size_column_bytes(Collective c, std::size_t requested_bytes, DataType t, int n);

}  // namespace scalescope::comm
