#include "probe/gpu_health.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/stats.h"

namespace scalescope::probe {

std::vector<std::string> clock_event_reason_names(std::uint64_t mask) {
  static const std::pair<std::uint64_t, const char*> kBits[] = {
      {0x1, "GPU Idle"},          {0x2, "Applications Clocks Setting"}, {0x4, "SW Power Cap"},
      {0x8, "HW Slowdown"},       {0x10, "Sync Boost"},                 {0x20, "SW Thermal Slowdown"},
      {0x40, "HW Thermal Slowdown"}, {0x80, "HW Power Brake Slowdown"}, {0x100, "Display Clock Setting"}};
  std::vector<std::string> out;
  for (auto [bit, name] : kBits)
    if (mask & bit) out.emplace_back(name);
  return out;
}

namespace {

std::string gpu_label(int device, const std::string& bus) { return fmt::format("GPU{} ({})", device, bus); }

}  // namespace

diagnose::FactSet gpu_probe_facts(const GpuProbes& p) {
  using namespace diagnose;
  FactSet f;
  for (const auto& c : p.copies) {
    const Provenance where{"doctor's GPU probe (pinned copies, NVML under load)", 0,
                           fmt::format("{}: host→device {:.1f} GB/s, device→host {:.1f} GB/s", gpu_label(c.device, c.bus_id), c.h2d_gbps, c.d2h_gbps)};
    if (c.nvml.pcie_gen || c.nvml.pcie_width) {
      PcieLinkState s;
      s.device = gpu_label(c.device, c.bus_id);
      s.device_name = c.name;
      s.current_gen = c.nvml.pcie_gen;
      s.current_width = c.nvml.pcie_width;
      s.max_gen = c.nvml.pcie_max_gen;
      s.max_width = c.nvml.pcie_max_width;
      s.under_load = true;
      f.add(std::move(s), where);
    }
    Measurement m;
    m.quantity = "host-to-device copy";
    m.unit = "GB/s";
    m.value = c.h2d_gbps;
    m.higher_is_better = true;
    m.dims["gpu"] = std::to_string(c.device);
    m.row = gpu_label(c.device, c.bus_id);
    m.table = "doctor GPU probe: copies";
    f.add(std::move(m), where);
  }
  std::vector<double> rates;
  for (const auto& g : p.gemms) rates.push_back(g.tflops);
  for (const auto& g : p.gemms) {
    const Provenance where{"doctor's GPU probe (bf16 GEMM 8192³, NVML during it)", 0,
                           fmt::format("{}: {:.0f} TFLOP/s{}", gpu_label(g.device, g.bus_id), g.tflops,
                                       g.nvml.sm_mhz ? fmt::format(", SM {} MHz", *g.nvml.sm_mhz) : "")};
    GpuClocks c;
    c.gpu = gpu_label(g.device, g.bus_id);
    if (g.nvml.sm_mhz) c.sm_mhz = *g.nvml.sm_mhz;
    if (g.nvml.max_sm_mhz) c.max_sm_mhz = *g.nvml.max_sm_mhz;
    c.power_w = g.nvml.power_w;
    c.power_limit_w = g.nvml.power_limit_w;
    c.temperature_c = g.nvml.temperature_c;
    if (g.nvml.clock_event_reasons)
      for (auto& r : clock_event_reason_names(*g.nvml.clock_event_reasons & ~std::uint64_t{0x1}))  // idle is no throttle
        c.active_throttle_reasons.push_back(std::move(r));
    f.add(std::move(c), where);
    if (rates.size() >= 2) {
      std::vector<double> others;
      for (const auto& o : p.gemms)
        if (o.device != g.device) others.push_back(o.tflops);
      const double m = others.empty() ? 0 : core::quantile(others, 0.5);
      if (m > 0 && g.tflops < 0.92 * m) {
        Straggler s;
        s.who = gpu_label(g.device, g.bus_id);
        s.compute_skew = m / g.tflops - 1;
        s.basis = fmt::format("the same GEMM ran at {:.0f} TFLOP/s on it against {:.0f} on the others (median)", g.tflops, m);
        f.add(std::move(s), where);
      }
    }
  }
  for (const auto& q : p.pairs) {
    const Provenance where{"doctor's GPU pair probe (p2pBandwidthLatencyTest's method)", 0,
                           fmt::format("GPU{} → GPU{}: {}staged through the host {:.1f} GB/s, {:.1f} µs{}", q.a, q.b,
                                       q.p2p_gbps ? fmt::format("peer {:.1f} GB/s, {:.1f} µs; ", *q.p2p_gbps,
                                                                q.p2p_latency_us.value_or(0))
                                                  : std::string(),
                                       q.staged_gbps, q.staged_latency_us, q.error.empty() ? "" : " (" + q.error + ")")};
    if (q.staged_gbps > 0) f.add(P2pMeasurement{q.a, q.b, false, false, q.staged_gbps, q.staged_latency_us}, where);
    if (q.p2p_gbps && q.works.value_or(false)) f.add(P2pMeasurement{q.a, q.b, true, false, q.p2p_gbps, q.p2p_latency_us}, where);
    if (q.can_access && q.works && !*q.works)
      f.add(P2pStatus{"GPU" + std::to_string(q.a), "GPU" + std::to_string(q.b), "copy failed", "peer copy"}, where);
  }
  return f;
}

std::string render_gpu_probes(const GpuProbes& p) {
  std::string o = fmt::format("GPU probes ({:.1f} s):\n", p.seconds);
  for (const auto& c : p.copies)
    o += fmt::format("  GPU{} {}: pinned copies host→device {:.1f} GB/s, device→host {:.1f} GB/s; PCIe under load {}{}\n", c.device,
                     c.bus_id, c.h2d_gbps, c.d2h_gbps,
                     c.nvml.pcie_gen ? fmt::format("Gen{} x{}", *c.nvml.pcie_gen, c.nvml.pcie_width.value_or(0)) : "unknown",
                     c.nvml.pcie_max_gen ? fmt::format(" (max Gen{} x{})", *c.nvml.pcie_max_gen, c.nvml.pcie_max_width.value_or(0)) : "");
  for (const auto& g : p.gemms) {
    std::string reasons;
    if (g.nvml.clock_event_reasons)
      for (const auto& r : clock_event_reason_names(*g.nvml.clock_event_reasons & ~std::uint64_t{0x1})) reasons += (reasons.empty() ? "" : ", ") + r;
    o += fmt::format("  GPU{}: bf16 GEMM 8192³ {:.0f} TFLOP/s; SM {}; power {}; {}; throttle: {}\n", g.device, g.tflops,
                     g.nvml.sm_mhz ? fmt::format("{} of {} MHz", *g.nvml.sm_mhz, g.nvml.max_sm_mhz.value_or(0)) : "unknown",
                     g.nvml.power_w ? fmt::format("{:.0f} of {:.0f} W", *g.nvml.power_w, g.nvml.power_limit_w.value_or(0)) : "unknown",
                     g.nvml.temperature_c ? fmt::format("{:.0f} °C", *g.nvml.temperature_c) : "temperature unknown",
                     reasons.empty() ? "none" : reasons);
  }
  for (const auto& g : p.gemms) {  // memory health: only what is not clean is worth a line
    const auto& n = g.nvml;
    std::string bad;
    if (n.remapped_uncorrectable.value_or(0) > 0) bad += fmt::format("{} rows remapped for uncorrectable errors; ", *n.remapped_uncorrectable);
    if (n.remap_pending.value_or(false)) bad += "a row remap pending until the GPU is reset; ";
    if (n.remap_failed.value_or(false)) bad += "a row remap failed; ";
    if (n.retired_dbe.value_or(0) > 0) bad += fmt::format("{} pages retired for double-bit ECC errors; ", *n.retired_dbe);
    if (!bad.empty()) o += fmt::format("  GPU{}: memory: {}see nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT\n", g.device, bad);
  }
  for (const auto& q : p.pairs) {
    std::string peer = !q.can_access ? "no peer access (CUDA)"
                       : !q.works    ? "peer access not tried"
                       : *q.works    ? fmt::format("peer {:.1f} GB/s, {:.1f} µs", q.p2p_gbps.value_or(0), q.p2p_latency_us.value_or(0))
                                     : "peer access reported, but the peer copy moved wrong bytes";
    o += fmt::format("  GPU{} → GPU{}: {}; staged through the host {:.1f} GB/s, {:.1f} µs{}\n", q.a, q.b, peer, q.staged_gbps,
                     q.staged_latency_us, q.error.empty() ? "" : " (error: " + q.error + ")");
  }
  for (const auto& n : p.notes) o += "  note: " + n + "\n";
  return o;
}

namespace {
nlohmann::json nvml_json(const NvmlUnderLoad& n) {
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json reasons = nlohmann::json::array();
  if (n.clock_event_reasons)
    for (auto& r : clock_event_reason_names(*n.clock_event_reasons)) reasons.push_back(r);
  return {{"pcie_gen", opt(n.pcie_gen)},     {"pcie_width", opt(n.pcie_width)},   {"pcie_max_gen", opt(n.pcie_max_gen)},
          {"pcie_max_width", opt(n.pcie_max_width)}, {"sm_mhz", opt(n.sm_mhz)},   {"max_sm_mhz", opt(n.max_sm_mhz)},
          {"power_w", opt(n.power_w)},       {"power_limit_w", opt(n.power_limit_w)}, {"temperature_c", opt(n.temperature_c)},
          {"clock_event_reasons", reasons},
          {"remapped_rows", {{"correctable", opt(n.remapped_correctable)}, {"uncorrectable", opt(n.remapped_uncorrectable)},
                             {"pending", opt(n.remap_pending)}, {"failed", opt(n.remap_failed)}}},
          {"retired_pages", {{"multiple_single_bit", opt(n.retired_sbe)}, {"double_bit", opt(n.retired_dbe)}}}};
}
}  // namespace

void to_json(nlohmann::json& j, const GpuProbes& p) {
  nlohmann::json copies = nlohmann::json::array(), gemms = nlohmann::json::array();
  for (const auto& c : p.copies)
    copies.push_back({{"device", c.device}, {"bus_id", c.bus_id}, {"name", c.name}, {"h2d_gbps", c.h2d_gbps}, {"d2h_gbps", c.d2h_gbps}, {"nvml", nvml_json(c.nvml)}});
  for (const auto& g : p.gemms)
    gemms.push_back({{"device", g.device}, {"bus_id", g.bus_id}, {"name", g.name}, {"tflops", g.tflops}, {"nvml", nvml_json(g.nvml)}});
  nlohmann::json pairs = nlohmann::json::array();
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  for (const auto& q : p.pairs)
    pairs.push_back({{"a", q.a}, {"b", q.b}, {"can_access", q.can_access}, {"works", opt(q.works)}, {"p2p_gbps", opt(q.p2p_gbps)},
                     {"p2p_latency_us", opt(q.p2p_latency_us)}, {"staged_gbps", q.staged_gbps},
                     {"staged_latency_us", q.staged_latency_us}, {"error", q.error}});
  j = {{"copies", copies}, {"gemms", gemms}, {"pairs", pairs}, {"seconds", p.seconds}, {"notes", p.notes}};
}

}  // namespace scalescope::probe
