#include "analyze/nccl_profile.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.h"

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
// is per rank; the buffer for the rest.
std::uint64_t size_of(std::string_view op, std::uint64_t count, int elem, int nranks) {
  const bool whole = op == "AllGather" || op == "ReduceScatter" || op == "AlltoAll";
  return count * static_cast<std::uint64_t>(elem) * static_cast<std::uint64_t>(whole ? std::max(nranks, 1) : 1);
}

template <class T>
T get_or(const nlohmann::json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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
    try {
      const auto j = nlohmann::json::parse(line);
      if (header) {
        header = false;
        p.comm_id = get_or<std::string>(j, "comm_id", "");
        p.comm_name = get_or<std::string>(j, "comm_name", "");
        p.host = get_or<std::string>(j, "host", "");
        p.rank = get_or<int>(j, "rank", 0);
        p.nranks = get_or<int>(j, "nranks", 0);
        p.nnodes = get_or<int>(j, "nnodes", 0);
        p.pid = get_or<long>(j, "pid", 0);
        continue;
      }
      NcclProfileOp op;
      op.op = j.at("op").get<std::string>();
      op.type = get_or<std::string>(j, "type", "");
      op.count = j.at("count").get<std::uint64_t>();
      if (const auto e = element_bytes(op.type)) op.size_bytes = size_of(op.op, op.count, *e, p.nranks);
      op.algo = get_or<std::string>(j, "algo", "");
      op.proto = get_or<std::string>(j, "proto", "");
      op.channels = get_or<int>(j, "channels", 0);
      op.host_ns = get_or<std::int64_t>(j, "host_ns", 0);
      if (j.contains("gpu_ns") && j["gpu_ns"].is_number()) op.gpu_us = j["gpu_ns"].get<double>() / 1000.0;
      p.ops.push_back(std::move(op));
    } catch (const nlohmann::json::exception&) {
      if (header) throw core::Error(fmt::format("'{}': its header line does not parse", source), "pass the file as the plugin wrote it");
      ++p.unreadable_lines;
    }
  }
  if (p.unreadable_lines > 0)
    p.warnings.push_back(fmt::format("{} line(s) that are not a record were skipped (a file cut short ends in one)",
                                     p.unreadable_lines));
  if (p.nranks < 1) p.warnings.push_back("the header gives no rank count: bus bandwidth is not computed");
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
    auto& a = by[{op.op, op.size_bytes.value_or(op.count)}];
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
      r.median_gpu_us = median(a.times);
      r.min_gpu_us = *std::min_element(a.times.begin(), a.times.end());
      const auto c = collective_of_nccl_op(r.op);
      if (c && r.median_gpu_us > 0 && p.nranks >= 1) {
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
