#include "readers/nccl/nccl_profile.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/parse_count.h"
#include "core/error.h"
#include "core/stats.h"

namespace scalescope::analyze {

namespace {

std::string_view first_line(std::string_view text) {
  const auto nl = text.find('\n');
  return nl == std::string_view::npos ? text : text.substr(0, nl);
}

std::optional<int> element_bytes(std::string_view type) {
  if (type == "ncclInt8" || type == "ncclUint8" || type == "ncclFloat8e4m3" || type == "ncclFloat8e5m2") return 1;
  if (type == "ncclFloat16" || type == "ncclBfloat16") return 2;
  if (type == "ncclInt32" || type == "ncclUint32" || type == "ncclFloat32") return 4;
  if (type == "ncclInt64" || type == "ncclUint64" || type == "ncclFloat64") return 8;
  return std::nullopt;
}

// nccl-tests' size column: the whole n-rank buffer for all-gather, reduce-scatter and all-to-all, whose NCCL count
// is per rank; the buffer for the rest. nullopt when it does not fit 64 bits (not a real record).
std::optional<std::uint64_t> size_of(std::string_view op, std::uint64_t count, int elem, int nranks) {
  const bool whole = op == "AllGather" || op == "ReduceScatter" || op == "AlltoAll";
  std::uint64_t out = 0;
  if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(elem), &out)) return std::nullopt;
  if (whole && __builtin_mul_overflow(out, static_cast<std::uint64_t>(std::max(nranks, 1)), &out)) return std::nullopt;
  return out;
}

// A header field that must be a whole number in [lo, hi].
int header_int(const nlohmann::json& j, const char* key, int lo, int hi, const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < lo || it->get<std::int64_t>() > hi)
    throw core::Error(fmt::format("'{}': header field {} is not a whole number from {} to {}", source, key, lo, hi),
                      "pass the nccl-profile file as the plugin wrote it");
  return static_cast<int>(it->get<std::int64_t>());
}

template <class T>
T get_or(const nlohmann::json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

std::string most_frequent(const std::map<std::string, std::size_t>& m) {
  std::string best;
  std::size_t n = 0;
  for (const auto& [k, c] : m)
    if (c > n) best = k, n = c;
  return best;
}

}  // namespace

std::optional<comm::Collective> collective_of_nccl_op(std::string_view op) {
  if (op == "AllReduce") return comm::Collective::all_reduce;
  if (op == "AllGather") return comm::Collective::all_gather;
  if (op == "ReduceScatter") return comm::Collective::reduce_scatter;
  if (op == "Broadcast") return comm::Collective::broadcast;
  if (op == "Reduce") return comm::Collective::reduce;
  if (op == "AlltoAll") return comm::Collective::all_to_all;
  return std::nullopt;
}

bool looks_like_nccl_profile(std::string_view head) {
  const auto line = first_line(head);
  if (line.find(kNcclProfileSchema) == std::string_view::npos) return false;
  try {
    const auto j = nlohmann::json::parse(line);
    return j.is_object() && j.value("schema", std::string()) == kNcclProfileSchema;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

NcclProfile parse_nccl_profile(std::string_view text, const std::string& source) {
  core::count_parse("nccl_profile", text);
  if (!looks_like_nccl_profile(text))
    throw core::Error(fmt::format("'{}' does not start with the header of scalescope's NCCL profiler plugin "
                                  "(a JSON line with \"schema\": \"{}\")", source, kNcclProfileSchema),
                      "pass the nccl-profile.*.jsonl file as the plugin wrote it");
  NcclProfile p;
  p.source = source;
  std::size_t pos = 0;
  bool header = true;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const auto line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (header) {  // looks_like_nccl_profile parsed it already
      header = false;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      p.comm_id = j.value("comm_id", "");
      p.comm_name = j.value("comm_name", "");
      p.host = j.value("host", "");
      p.nranks = header_int(j, "nranks", 1, 1 << 24, source);
      p.rank = header_int(j, "rank", 0, p.nranks - 1, source);
      p.nnodes = header_int(j, "nnodes", 1, p.nranks, source);
      p.pid = j.contains("pid") && j["pid"].is_number_integer() ? j["pid"].get<long>() : 0;
      continue;
    }
    try {
      const auto j = nlohmann::json::parse(line);
      NcclProfileOp op;
      op.op = j.at("op").get<std::string>();
      op.type = get_or<std::string>(j, "type", "");
      if (!j.at("count").is_number_unsigned()) {  // negative, fractional or not a number: not a record
        ++p.implausible;
        continue;
      }
      op.count = j.at("count").get<std::uint64_t>();
      if (const auto e = element_bytes(op.type)) {
        op.size_bytes = size_of(op.op, op.count, *e, p.nranks);
        if (!op.size_bytes) {
          ++p.implausible;
          continue;
        }
      } else {
        ++p.unknown_type;
      }
      op.algo = get_or<std::string>(j, "algo", "");
      op.proto = get_or<std::string>(j, "proto", "");
      op.channels = get_or<int>(j, "channels", 0);
      op.host_ns = get_or<std::int64_t>(j, "host_ns", 0);
      // A GPU time must be ≥ 0 and under a day (globaltimer nanoseconds); anything else is not kept.
      if (j.contains("gpu_ns") && j["gpu_ns"].is_number()) {
        const double ns = j["gpu_ns"].get<double>();
        if (ns >= 0 && ns < 86400e9)
          op.gpu_us = ns / 1000.0;
        else
          ++p.implausible;
      }
      p.ops.push_back(std::move(op));
    } catch (const nlohmann::json::exception&) {
      ++p.unreadable_lines;
    }
  }
  if (p.unreadable_lines > 0)
    p.warnings.push_back(fmt::format("{} line(s) that are not a record were skipped (a file cut short ends in one)",
                                     p.unreadable_lines));
  if (p.implausible > 0)
    p.warnings.push_back(fmt::format("{} record(s) with a negative or overflowing count or GPU time: left out or untimed",
                                     p.implausible));
  if (p.unknown_type > 0)
    p.warnings.push_back(fmt::format("{} operation(s) of a datatype NCCL names \"Unknown\" (ncclUint8 among them): their "
                                     "bytes, hence busbw, are not known", p.unknown_type));
  return p;
}

NcclProfileSummary summarize_nccl_profile(const NcclProfile& p) {
  NcclProfileSummary s;
  struct Acc {
    std::vector<double> times;
    std::size_t calls = 0;
    std::string type;
    std::map<std::string, std::size_t> algos, protos;
  };
  std::map<std::pair<std::string, std::uint64_t>, Acc> by;
  std::int64_t first = 0, last = 0;
  for (const auto& op : p.ops) {
    ++s.ops;
    if (op.host_ns > 0) {
      if (first == 0 || op.host_ns < first) first = op.host_ns;
      last = std::max(last, op.host_ns);
    }
    auto& a = by[{op.op + (op.size_bytes ? "" : " (" + op.type + " x" + std::to_string(op.count) + ")"), op.size_bytes.value_or(0)}];
    ++a.calls;
    a.type = op.type;
    if (!op.algo.empty()) ++a.algos[op.algo];
    if (!op.proto.empty()) ++a.protos[op.proto];
    if (op.gpu_us) {
      a.times.push_back(*op.gpu_us);
      ++s.timed;
      s.gpu_us += *op.gpu_us;
    }
  }
  s.span_s = last > first ? static_cast<double>(last - first) * 1e-9 : 0;
  for (auto& [key, a] : by) {
    NcclProfileRow r;
    r.op = key.first;
    r.size_bytes = key.second;
    r.type = a.type;
    r.calls = a.calls;
    r.timed = a.times.size();
    r.algo = most_frequent(a.algos);
    r.proto = most_frequent(a.protos);
    for (double t : a.times) r.total_gpu_us += t;
    if (!a.times.empty()) {
      r.median_gpu_us = core::quantile(a.times, 0.5);
      r.min_gpu_us = *std::min_element(a.times.begin(), a.times.end());
      const auto c = collective_of_nccl_op(r.op);
      if (c && r.size_bytes > 0 && r.median_gpu_us > 0 && p.nranks >= 1) {
        r.algbw_gbps = static_cast<double>(r.size_bytes) / (r.median_gpu_us * 1e3);  // B/ns = GB/s
        r.busbw_gbps = *r.algbw_gbps * comm::bus_bandwidth_factor(*c, p.nranks);
      }
    }
    s.rows.push_back(std::move(r));
  }
  std::stable_sort(s.rows.begin(), s.rows.end(),
                   [](const auto& a, const auto& b) { return a.total_gpu_us > b.total_gpu_us; });
  return s;
}

std::optional<Sweep> nccl_profile_sweep(const NcclProfile& p, comm::Collective c) {
  if (p.nranks < 1) return std::nullopt;
  Sweep sw;
  sw.collective = c;
  sw.ranks = p.nranks;
  sw.source = fmt::format("scalescope NCCL profiler plugin, rank {} of {}", p.rank, p.nranks);
  sw.from_text = true;
  const auto s = summarize_nccl_profile(p);
  for (const auto& r : s.rows) {
    if (collective_of_nccl_op(r.op) != c || r.timed == 0 || !r.busbw_gbps) continue;
    SweepRow row;
    row.size_bytes = r.size_bytes;
    row.type_name = r.type;
    row.out_of_place.time_us = r.median_gpu_us;
    row.out_of_place.algbw_gbps = r.algbw_gbps;
    row.out_of_place.busbw_gbps = r.busbw_gbps;
    row.out_of_place.min_us = r.min_gpu_us;
    row.out_of_place.median_us = r.median_gpu_us;
    sw.rows.push_back(std::move(row));
  }
  if (sw.rows.empty()) return std::nullopt;
  std::sort(sw.rows.begin(), sw.rows.end(), [](const auto& a, const auto& b) { return a.size_bytes < b.size_bytes; });
  return sw;
}

void to_json(nlohmann::json& j, const NcclProfileRow& r) {
  j = {{"op", r.op},
       {"type", r.type},
       {"size_bytes", r.size_bytes},
       {"algo", r.algo},
       {"proto", r.proto},
       {"calls", r.calls},
       {"timed", r.timed},
       {"total_gpu_us", r.total_gpu_us},
       {"median_gpu_us", r.median_gpu_us},
       {"min_gpu_us", r.min_gpu_us},
       {"algbw_gbps", r.algbw_gbps ? nlohmann::json(*r.algbw_gbps) : nlohmann::json()},
       {"busbw_gbps", r.busbw_gbps ? nlohmann::json(*r.busbw_gbps) : nlohmann::json()}};
}

void to_json(nlohmann::json& j, const NcclProfileSummary& s) {
  j = {{"ops", s.ops}, {"timed", s.timed}, {"gpu_us", s.gpu_us}, {"span_s", s.span_s}, {"rows", s.rows}};
}

}  // namespace scalescope::analyze
