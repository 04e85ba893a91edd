// The JSON form of a parsed NCCL log (readers/nccl/nccl_log.h): every record, long lists capped.

#include "readers/nccl/nccl_log.h"

namespace scalescope::analyze {

void to_json(nlohmann::json& j, const NcclOrigin& o) {
  j = {{"host", o.host ? nlohmann::json(to_valid_utf8(*o.host)) : nlohmann::json()}, {"pid", optional_json(o.pid)},
       {"tid", optional_json(o.tid)}, {"device", optional_json(o.device)}};
}

namespace {
template <class Container, class F>
nlohmann::json capped(const Container& v, std::size_t cap, F f) {
  nlohmann::json a = nlohmann::json::array();
  for (std::size_t i = 0; i < v.size() && i < cap; ++i) a.push_back(f(v[i]));
  return a;
}
}  // namespace

void to_json(nlohmann::json& j, const NcclLog& log) {
  constexpr std::size_t cap = 2000;  // lists longer than this are cut; the counts stay exact
  j = {{"source", to_valid_utf8(log.source)},
       {"lines", log.lines},
       {"nccl_lines", log.nccl_lines},
       {"info_lines", log.info_lines},
       {"warn_lines", log.warn_lines},
       {"trace_lines", log.trace_lines}};
  j["versions"] = capped(log.versions, cap, [](const NcclVersionLine& v) {
    return nlohmann::json{{"version", v.version}, {"full", v.full}, {"origin", v.origin}, {"line", v.line}};
  });
  j["processes"] = capped(log.processes, cap, [](const NcclProcess& p) {
    return nlohmann::json{{"host", p.host ? nlohmann::json(to_valid_utf8(*p.host)) : nlohmann::json()},
                          {"pid", optional_json(p.pid)}, {"devices", p.devices}, {"ranks", p.ranks},
                          {"version", optional_json(p.version)}, {"lines", p.lines}, {"first_line", p.first_line}};
  });
  j["communicators"] = capped(log.communicators, cap, [](const NcclCommunicator& c) {
    return nlohmann::json{{"comm", optional_json(c.comm)}, {"init_call", optional_json(c.init_call)},
                          {"rank", optional_json(c.rank)}, {"nranks", optional_json(c.nranks)},
                          {"cuda_dev", optional_json(c.cuda_dev)}, {"nvml_dev", optional_json(c.nvml_dev)},
                          {"bus_id", optional_json(c.bus_id)}, {"comm_id", optional_json(c.comm_id)},
                          {"nnodes", optional_json(c.nnodes)}, {"local_ranks", optional_json(c.local_ranks)},
                          {"local_rank", optional_json(c.local_rank)}, {"init_complete", c.init_complete},
                          {"init_seconds", optional_json(c.init_seconds)}, {"init_phases_seconds", c.init_phases},
                          {"origin", c.origin}, {"line", c.line}};
  });
  j["connections_total"] = log.connections.size();
  j["connections"] = capped(log.connections, cap, [](const NcclConnection& c) {
    return nlohmann::json{{"channel", c.channel}, {"from_rank", c.from_rank}, {"to_rank", c.to_rank},
                          {"from_tag", c.from_tag}, {"to_tag", c.to_tag}, {"direction", optional_json(c.direction)},
                          {"via", c.via}, {"kind", std::string(to_string(c.kind))}, {"transport", c.transport},
                          {"gdrdma", c.gdrdma}, {"p2p_read", c.p2p_read}, {"origin", c.origin}, {"line", c.line}};
  });
  j["rings"] = capped(log.rings, cap, [](const NcclRing& r) {
    return nlohmann::json{{"channel", r.channel}, {"channels", optional_json(r.channels)}, {"ranks", r.ranks},
                          {"origin", r.origin}, {"line", r.line}};
  });
  j["trees_total"] = log.trees.size();
  j["trees"] = capped(log.trees, cap, [](const NcclTree& t) {
    return nlohmann::json{{"channel", t.channel}, {"rank", t.rank}, {"children", t.children},
                          {"parent", optional_json(t.parent)}, {"origin", t.origin}, {"line", t.line}};
  });
  j["channel_counts"] = capped(log.channel_counts, cap, [](const NcclChannelCounts& c) {
    return nlohmann::json{{"coll", optional_json(c.coll)}, {"collnet", optional_json(c.collnet)},
                          {"nvls", optional_json(c.nvls)}, {"p2p", optional_json(c.p2p)},
                          {"p2p_per_peer", optional_json(c.p2p_per_peer)}, {"origin", c.origin}, {"line", c.line}};
  });
  j["settings"] = capped(log.settings, cap, [](const NcclSetting& s) {
    return nlohmann::json{{"name", s.name}, {"value", s.value}, {"by_environment", s.by_environment},
                          {"origin", s.origin}, {"line", s.line}};
  });
  j["net_devices"] = capped(log.net_devices, cap, [](const NcclNetDevices& d) {
    return nlohmann::json{{"provider", d.provider}, {"devices", d.devices}, {"oob", optional_json(d.oob)},
                          {"relaxed_ordering", d.relaxed_ordering}, {"origin", d.origin}, {"line", d.line}};
  });
  j["net_events"] = capped(log.net_events, cap, [](const NcclNetEvent& e) {
    static const char* kinds[] = {"using_network", "plugin", "bootstrap_interface", "no_device"};
    return nlohmann::json{{"kind", kinds[static_cast<int>(e.kind)]}, {"text", e.text}, {"origin", e.origin}, {"line", e.line}};
  });
  j["gdr_lines"] = capped(log.gdr_lines, cap, [](const NcclGdrLine& g) {
    return nlohmann::json{{"hca", g.hca}, {"enabled", g.enabled}, {"origin", g.origin}, {"line", g.line}};
  });
  auto unwind_json = [](const NcclUnwind& u) {
    return nlohmann::json{{"location", to_valid_utf8(u.location)}, {"code", u.code}, {"result", nccl_result_name(u.code)},
                          {"note", to_valid_utf8(u.note)}, {"line", u.line}};
  };
  j["warnings_total"] = log.warnings.size();
  j["warnings"] = capped(log.warnings, cap, [&](const NcclWarning& w) {
    return nlohmann::json{{"location", w.location ? nlohmann::json(to_valid_utf8(*w.location)) : nlohmann::json()},
                          {"message", w.message}, {"wrapped", w.wrapped}, {"unwind", capped(w.unwind, 64, unwind_json)},
                          {"origin", w.origin}, {"line", w.line}};
  });
  j["orphan_unwind"] = capped(log.orphan_unwind, cap, unwind_json);
  j["collectives_total"] = log.collectives.size();
  j["collectives"] = capped(log.collectives, cap, [](const NcclCollectiveCall& c) {
    return nlohmann::json{{"op", c.op}, {"op_count", optional_json(c.op_count)}, {"count", optional_json(c.count)},
                          {"datatype", optional_json(c.datatype)}, {"red_op", optional_json(c.red_op)},
                          {"root", optional_json(c.root)}, {"nranks", optional_json(c.nranks)},
                          {"comm", optional_json(c.comm)}, {"origin", c.origin}, {"line", c.line}};
  });
  j["graph_patterns"] = capped(log.graph_patterns, cap, [](const NcclGraphPattern& g) {
    return nlohmann::json{{"pattern", optional_json(g.pattern)}, {"channels", optional_json(g.channels)},
                          {"speed_intra", optional_json(g.speed_intra)}, {"speed_inter", optional_json(g.speed_inter)},
                          {"type_intra", g.type_intra}, {"type_inter", g.type_inter}, {"origin", g.origin}, {"line", g.line}};
  });
  j["p2p_checks"] = capped(log.p2p_checks, cap, [](const NcclP2pCheck& c) {
    return nlohmann::json{{"intra_node_p2p_support", optional_json(c.intra_node_p2p_support)},
                          {"all_direct_p2p", optional_json(c.all_direct_p2p)}, {"direct_mode", optional_json(c.direct_mode)},
                          {"origin", c.origin}, {"line", c.line}};
  });
  nlohmann::json notes = nlohmann::json::array();
  for (const auto& n : log.notes) notes.push_back(to_valid_utf8(n));
  j["notes"] = notes;
}

}  // namespace scalescope::analyze
