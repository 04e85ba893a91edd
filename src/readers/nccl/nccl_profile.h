#pragma once
// What scalescope's NCCL profiler plugin (profile/nccl_plugin) wrote for one communicator on one rank:
// "nccl-profile.<host>.<pid>.<comm>.r<rank>.jsonl", a header line (schema "scalescope.nccl-profile/1") and one
// JSON line per collective or send/recv (docs/profile.md lists the fields). Read here into operations, summarised
// per operation and size (calls, GPU time, algbw, busbw with nccl-tests' factors), and turned into a sweep so that
// analyze's collective analysis and the diagnosis read it as they read an nccl-tests output.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/sweep.h"
#include "comm/collectives.h"

namespace scalescope::analyze {

inline constexpr std::string_view kNcclProfileSchema = "scalescope.nccl-profile/1";

struct NcclProfileOp {
  std::string op;        ///< NCCL's name: "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Send" …
  std::string type;      ///< NCCL's datatype name: "ncclBfloat16" …
  std::uint64_t count = 0;
  std::optional<std::uint64_t> size_bytes;  ///< nccl-tests' "size" for it (comm::size_column_bytes' sense); absent for an unknown type
  std::string algo, proto;
  int channels = 0;
  std::int64_t host_ns = 0;                 ///< when NCCL enqueued it (CLOCK_REALTIME)
  std::optional<double> gpu_us;             ///< its kernel's time on the GPU, first channel start to last channel end
};

struct NcclProfile {
  std::string source;
  std::string comm_id, comm_name, host;
  int rank = 0, nranks = 0, nnodes = 0;
  long pid = 0;
  std::vector<NcclProfileOp> ops;
  std::size_t unreadable_lines = 0;  ///< lines that are not a record (a file cut short ends in one)
  std::size_t implausible = 0;       ///< records with a negative or overflowing count, or a GPU time < 0 or > 1 day
  std::size_t unknown_type = 0;      ///< operations whose datatype NCCL named "Unknown": bytes not known
  std::vector<std::string> warnings;
};

/// Whether `head` (a file's first bytes) starts with the plugin's header line.
bool looks_like_nccl_profile(std::string_view head);

/// Parses a whole file. Throws core::Error when its first line is not the plugin's header, or a header field
/// (nranks 1 – 2^24, rank, nnodes) is out of range; record lines that do not parse are counted in unreadable_lines,
/// implausible ones in `implausible`, never fatal.
NcclProfile parse_nccl_profile(std::string_view text, const std::string& source);

/// Operations of one name and size: how many, how many were timed on the GPU, and their GPU time.
struct NcclProfileRow {
  std::string op, type, algo, proto;  ///< algo/proto: the most frequent
  std::uint64_t size_bytes = 0;
  std::size_t calls = 0, timed = 0;
  double total_gpu_us = 0, median_gpu_us = 0, min_gpu_us = 0;
  std::optional<double> algbw_gbps, busbw_gbps;  ///< from the median time (GB = 1e9 B); collectives only
};

struct NcclProfileSummary {
  std::vector<NcclProfileRow> rows;  ///< largest total GPU time first
  std::size_t ops = 0, timed = 0;
  double gpu_us = 0;                 ///< sum of every operation's GPU time
  double span_s = 0;                 ///< first to last enqueue (host clock)
};

/// Throws nothing.
NcclProfileSummary summarize_nccl_profile(const NcclProfile& p);

/// The collectives of one kind as a sweep (one row per size: the median GPU time, algbw, busbw), source
/// "scalescope NCCL profiler plugin". Sizes with no GPU time are left out. nullopt when none remains.
std::optional<Sweep> nccl_profile_sweep(const NcclProfile& p, comm::Collective c);

/// The collective kind of an NCCL operation name ("AllReduce" → all_reduce); nullopt for send/recv and others.
std::optional<comm::Collective> collective_of_nccl_op(std::string_view op);

void to_json(nlohmann::json& j, const NcclProfileRow& r);
void to_json(nlohmann::json& j, const NcclProfileSummary& s);

}  // namespace scalescope::analyze
