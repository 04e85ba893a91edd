#include "analyze/sweep.h"

namespace scalescope::analyze {
namespace {

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

void to_json(nlohmann::json& j, const SweepTiming& t) {
  j = {{"time_us", opt(t.time_us)},     {"algbw_gbps", opt(t.algbw_gbps)}, {"busbw_gbps", opt(t.busbw_gbps)},
       {"wrong", opt(t.wrong)},         {"median_us", opt(t.median_us)},   {"p95_us", opt(t.p95_us)},
       {"cv", opt(t.cv)},               {"min_us", opt(t.min_us)},         {"max_us", opt(t.max_us)},
       {"rank_skew_us", opt(t.rank_skew_us)}};
}

void to_json(nlohmann::json& j, const SweepRow& r) {
  j = {{"size_bytes", r.size_bytes},
       {"count", opt(r.count)},
       {"type", r.type ? nlohmann::json(comm::to_string(*r.type))
                       : (r.type_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.type_name))},
       {"redop", r.redop ? nlohmann::json(comm::to_string(*r.redop))
                         : (r.redop_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.redop_name))},
       {"root", opt(r.root)},
       {"out_of_place", r.out_of_place},
       {"in_place", r.in_place}};
}

void to_json(nlohmann::json& j, const Sweep& s) {
  j = {{"collective", comm::to_string(s.collective)},
       {"ranks", opt(s.ranks)},
       {"source", s.source},
       {"nccl_version", opt(s.nccl_version)},
       {"devices", s.devices},
       {"rows", s.rows},
       {"reported_avg_busbw_gbps", opt(s.reported_avg_busbw_gbps)},
       {"warnings", s.warnings}};
}

}  // namespace scalescope::analyze
