#include "report/knowledge_tables.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "knowledge/embedded_data.h"
#include "knowledge/expect.h"
#include "knowledge/hardware.h"
#include "knowledge/models.h"

namespace scalescope::report {
namespace {

std::string cell(std::string s) {
  for (auto& c : s)
    if (c == '|' || c == '\n') c = c == '|' ? '/' : ' ';
  return s;
}

std::string num(double v) { return v > 0 ? fmt::format("{:.4g}", v) : std::string("–"); }

std::string about(std::string_view name) {
  try {
    return nlohmann::json::parse(knowledge::embedded_data(name)).value("about", std::string());
  } catch (...) {
    return {};
  }
}

}  // namespace

std::string knowledge_markdown() {
  std::string o =
      "# Knowledge tables\n\n"
      "Generated from `data/*.json` by `scalescope knowledge --markdown` (do not edit by hand: edit the data file, "
      "rebuild, regenerate; a test fails when this page and the data disagree). Units: GB = 1e9 bytes, GB/s per "
      "direction, TFLOP/s dense. How the expectation engine uses them: `src/knowledge/expect.h`.\n\n";
  o += "## GPUs (`data/gpus.json`)\n\n" + cell(about("gpus")) + "\n\n";
  o += "| model | arch | form | PCIe | NVLink | P2P over PCIe | memory GB | mem GB/s | 16-bit TFLOP/s | FP32 TFLOP/s | source |\n"
       "|---|---|---|---|---|---|---:|---:|---:|---:|---|\n";
  for (const auto& g : topo::gpu_table())
    o += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", g.model, g.architecture, topo::to_string(g.form),
                     g.pcie_gen > 0 ? fmt::format("Gen{} x{}", g.pcie_gen, g.pcie_width) : "–",
                     g.nvlink_links > 0 ? fmt::format("{} × {:.4g} GB/s", g.nvlink_links, g.nvlink_link_gbps)
                     : g.bridge_links > 0 ? fmt::format("bridge, {} links", g.bridge_links)
                                          : "–",
                     g.pcie_p2p ? "yes" : "no", num(g.memory_gb), num(g.memory_bw_gbps), num(g.dense_bf16_tflops), num(g.fp32_tflops),
                     cell(std::string(g.source)));
  o += "\n## Models (`data/models.json`)\n\n" + cell(about("models")) + "\n\n";
  o += "| model | names | family | parameters | forward GFLOP per unit | unit | source |\n|---|---|---|---:|---:|---|---|\n";
  for (const auto& m : knowledge::model_table()) {
    std::string names;
    for (const auto& a : m.aliases) names += (names.empty() ? "" : ", ") + a;
    o += fmt::format("| {} | {} | {} | {:.4g} | {} | {} | {} |\n", m.name, cell(names), m.family, m.params, num(m.forward_gflops_per_unit),
                     m.unit == "token" ? fmt::format("token ({:.0f} context)", m.context.value_or(0)) : m.input, cell(m.source));
  }
  o += "\n## NCCL transports (`data/nccl.json`)\n\n" + cell(about("nccl")) + "\n\n";
  o += "| key | transport | algorithm | share of line rate | latency µs | source |\n|---|---|---|---|---:|---|\n";
  for (const auto& t : knowledge::transport_table())
    o += fmt::format("| {} | {} | {} | {} | {} | {} |\n", t.key, cell(t.transport), t.algorithm,
                     t.share_low && t.share_high ? fmt::format("{:.2f}–{:.2f}", *t.share_low, *t.share_high) : "–",
                     t.latency_us ? fmt::format("{:.3g}", *t.latency_us) : "–", cell(t.source));
  o += "\n## Links (`data/links.json`)\n\n" + cell(about("links")) + "\n\n| name | kind | GB/s per direction | source |\n|---|---|---:|---|\n";
  try {
    const auto doc = nlohmann::json::parse(knowledge::embedded_data("links"));  // kept alive for the loop
    for (const auto& r : doc.at("rows"))
      o += fmt::format("| {} | {} | {} | {} |\n", cell(r.value("name", "")), r.value("kind", ""),
                       r.contains("raw_gbps") && r["raw_gbps"].is_number() ? num(r["raw_gbps"].get<double>()) : "–",
                       cell(r.value("source", "")));
  } catch (const nlohmann::json::exception& e) {
    throw core::Error(std::string("data/links.json: ") + e.what(), "fix the data file and rebuild");
  }
  o += "\n## Public busbw results the bands are checked against (`data/busbw_observations.json`)\n\n" +
       cell(about("busbw_observations")) + "\n\n| GPU | GPUs | nodes | link | collective | busbw GB/s | source |\n|---|---:|---:|---|---|---:|---|\n";
  try {
    const auto doc = nlohmann::json::parse(knowledge::embedded_data("busbw_observations"));
    for (const auto& r : doc.at("rows"))
      o += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", r.value("gpu", ""), r.value("gpus", 0), r.value("nodes", 0),
                       cell(r.value("link", "")), r.value("collective", ""), num(r.value("busbw_gbps", 0.0)), cell(r.value("source", "")));
  } catch (const nlohmann::json::exception& e) {
    throw core::Error(std::string("data/busbw_observations.json: ") + e.what(), "fix the data file and rebuild");
  }
  return o;
}

std::string knowledge_text(std::string_view table) {
  std::string o;
  if (table == "gpus") {
    o += fmt::format("{:<26} {:<13} {:<11} {:<9} {:<16} {:>6} {:>9}\n", "model", "architecture", "form", "PCIe", "NVLink", "GB", "16b TF/s");
    for (const auto& g : topo::gpu_table())
      o += fmt::format("{:<26} {:<13} {:<11} {:<9} {:<16} {:>6} {:>9}\n", g.model, g.architecture, topo::to_string(g.form),
                       g.pcie_gen > 0 ? fmt::format("Gen{} x{}", g.pcie_gen, g.pcie_width) : "-",
                       g.nvlink_links > 0 ? fmt::format("{} x {:.4g} GB/s", g.nvlink_links, g.nvlink_link_gbps) : "-", num(g.memory_gb),
                       num(g.dense_bf16_tflops));
  } else if (table == "models") {
    o += fmt::format("{:<28} {:<20} {:>12} {:>14}  {}\n", "model", "family", "parameters", "fwd GFLOP", "per");
    for (const auto& m : knowledge::model_table())
      o += fmt::format("{:<28} {:<20} {:>12.4g} {:>14}  {}\n", m.name, m.family, m.params, num(m.forward_gflops_per_unit),
                       m.unit == "token" ? "token" : m.input);
  } else if (table == "transports") {
    o += fmt::format("{:<18} {:<10} {:>12} {:>8}  {}\n", "key", "algorithm", "share", "lat µs", "transport");
    for (const auto& t : knowledge::transport_table())
      o += fmt::format("{:<18} {:<10} {:>12} {:>8}  {}\n", t.key, t.algorithm,
                       t.share_low && t.share_high ? fmt::format("{:.2f}-{:.2f}", *t.share_low, *t.share_high) : "-",
                       t.latency_us ? fmt::format("{:.3g}", *t.latency_us) : "-", t.transport);
  } else if (table == "observations") {
    const auto doc = nlohmann::json::parse(knowledge::embedded_data("busbw_observations"));
    for (const auto& r : doc.at("rows"))
      o += fmt::format("{:<22} {:>3} GPUs {:>2} node(s) {:>8} GB/s  {} ({})\n", r.value("gpu", ""), r.value("gpus", 0), r.value("nodes", 0),
                       num(r.value("busbw_gbps", 0.0)), r.value("link", ""), r.value("collective", ""));
  } else {
    throw core::UsageError(fmt::format("no knowledge table '{}'", table), "name one of: gpus, models, transports, observations");
  }
  return o;
}

}  // namespace scalescope::report
