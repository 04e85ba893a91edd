#include "comm/sweep.h"

#include "core/error.h"

namespace scalescope::analyze {
namespace {

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <class T>
void read_opt(const nlohmann::json& j, const char* key, std::optional<T>& out) {
  if (j.contains(key) && !j.at(key).is_null()) out = j.at(key).get<T>();
  else out.reset();
}

template <class T, class Parse>
T parse_name(const nlohmann::json& j, Parse parse, const char* what) {
  const std::string name = j.get<std::string>();
  auto v = parse(name);
  if (!v) throw core::Error(std::string("unknown ") + what + " '" + name + "' in a sweep record");
  return *v;
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
       {"from_text", s.from_text},
       {"warnings", s.warnings},
       {"rows_with_wrong_elements", s.rows_with_wrong_elements}};
}

void from_json(const nlohmann::json& j, SweepTiming& t) {
  read_opt(j, "time_us", t.time_us);
  read_opt(j, "algbw_gbps", t.algbw_gbps);
  read_opt(j, "busbw_gbps", t.busbw_gbps);
  read_opt(j, "wrong", t.wrong);
  read_opt(j, "median_us", t.median_us);
  read_opt(j, "p95_us", t.p95_us);
  read_opt(j, "cv", t.cv);
  read_opt(j, "min_us", t.min_us);
  read_opt(j, "max_us", t.max_us);
  read_opt(j, "rank_skew_us", t.rank_skew_us);
}

void from_json(const nlohmann::json& j, SweepRow& r) {
  r.size_bytes = j.at("size_bytes");
  read_opt(j, "count", r.count);
  r.type.reset();
  r.type_name.clear();
  if (!j.at("type").is_null()) {
    if (auto t = comm::parse_data_type(j.at("type").get<std::string>())) r.type = t;
    else r.type_name = j.at("type");
  }
  r.redop.reset();
  r.redop_name.clear();
  if (!j.at("redop").is_null()) {
    if (auto o = comm::parse_red_op(j.at("redop").get<std::string>())) r.redop = o;
    else r.redop_name = j.at("redop");
  }
  read_opt(j, "root", r.root);
  r.out_of_place = j.at("out_of_place").get<SweepTiming>();
  r.in_place = j.at("in_place").get<SweepTiming>();
}

void from_json(const nlohmann::json& j, Sweep& s) {
  s.collective = parse_name<comm::Collective>(j.at("collective"), comm::parse_collective, "collective");
  read_opt(j, "ranks", s.ranks);
  s.source = j.at("source");
  read_opt(j, "nccl_version", s.nccl_version);
  s.devices = j.at("devices").get<std::vector<std::string>>();
  s.rows = j.at("rows").get<std::vector<SweepRow>>();
  read_opt(j, "reported_avg_busbw_gbps", s.reported_avg_busbw_gbps);
  s.from_text = j.value("from_text", false);
  s.warnings = j.at("warnings").get<std::vector<std::string>>();
  s.rows_with_wrong_elements = j.value("rows_with_wrong_elements", std::size_t{0});
}

}  // namespace scalescope::analyze
