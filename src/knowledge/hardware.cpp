#include "knowledge/hardware.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <vector>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "core/error.h"
#include "knowledge/embedded_data.h"
#include "topo/bandwidth.h"

namespace scalescope::topo {

std::string_view to_string(GpuForm form) {
  switch (form) {
    case GpuForm::sxm: return "sxm";
    case GpuForm::pcie: return "pcie";
    case GpuForm::workstation: return "workstation";
    case GpuForm::consumer: return "consumer";
    case GpuForm::superchip: return "superchip";
  }
  return "pcie";
}

namespace {

// The GPU rows live in data/gpus.json (compiled in: knowledge/embedded_data.h), one row per board with its source;
// the evidence for the pcie_p2p column and the product names drivers print are cited in the rows' sources and in
// data/README.md. The strings the table's string_views point at are owned by this loader's static storage.
GpuForm form_of(const std::string& f, std::size_t row) {
  if (f == "sxm") return GpuForm::sxm;
  if (f == "pcie") return GpuForm::pcie;
  if (f == "workstation") return GpuForm::workstation;
  if (f == "consumer") return GpuForm::consumer;
  if (f == "superchip") return GpuForm::superchip;
  throw core::Error(fmt::format("data/gpus.json, row {}: form '{}' is none of sxm, pcie, workstation, consumer, superchip", row, f),
                    "fix the data file and rebuild");
}

std::vector<GpuSpec> build_gpu_table() {
  static std::deque<std::string> strings;  // owns what the rows' string_views point at
  auto keep = [](std::string v) -> std::string_view { return strings.emplace_back(std::move(v)); };
  const std::string_view text = knowledge::embedded_data("gpus");
  if (text.empty()) return {};
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw core::Error(std::string("data/gpus.json does not parse: ") + e.what(), "fix the data file and rebuild");
  }
  std::vector<GpuSpec> out;
  std::size_t i = 0;
  for (const auto& r : doc.at("rows")) {
    ++i;
    try {
      auto num = [&](const char* k, double dflt) { return r.contains(k) && !r[k].is_null() ? r[k].get<double>() : dflt; };
      auto str = [&](const char* k) {
        if (!r.contains(k) || !r[k].is_string()) throw core::Error(fmt::format("'{}' is missing", k));
        return r[k].get<std::string>();
      };
      GpuSpec g;
      g.model = keep(str("model"));
      g.architecture = keep(str("architecture"));
      const std::string cc = str("compute");
      const auto dot = cc.find('.');
      if (dot == std::string::npos) throw core::Error("'compute' is not MAJOR.MINOR");
      g.compute_major = std::stoi(cc.substr(0, dot));
      g.compute_minor = std::stoi(cc.substr(dot + 1));
      g.form = form_of(str("form"), i);
      g.pcie_gen = static_cast<int>(num("pcie_gen", 0));
      g.pcie_width = static_cast<int>(num("pcie_width", 16));
      g.nvlink_gen = static_cast<int>(num("nvlink_gen", 0));
      g.nvlink_links = static_cast<int>(num("nvlink_links", 0));
      g.nvlink_link_gbps = num("nvlink_link_gbps", 0);
      g.bridge_links = static_cast<int>(num("bridge_links", 0));
      g.pcie_p2p = r.value("pcie_p2p", true);
      g.memory_gb = num("memory_gb", 0);
      g.dense_bf16_tflops = num("dense_bf16_tflops", 0);
      g.fp32_tflops = num("fp32_tflops", 0);
      g.memory_bw_gbps = num("memory_bw_gbps", 0);
      g.source = keep(str("source"));
      g.match = keep(str("match"));
      if (g.source.size() < 8) throw core::Error("'source' must cite where the figures come from");
      if ((g.nvlink_links > 0) != (g.nvlink_link_gbps > 0) && g.bridge_links == 0)
        throw core::Error("'nvlink_links' and 'nvlink_link_gbps' must be given together");
      out.push_back(g);
    } catch (const core::Error& e) {
      throw core::Error(fmt::format("data/gpus.json, row {}: {}", i, e.what()), "fix the data file and rebuild");
    } catch (const std::exception& e) {
      throw core::Error(fmt::format("data/gpus.json, row {}: {}", i, e.what()), "fix the data file and rebuild");
    }
  }
  return out;
}

// ---- name matching ----

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Lower-cased runs of letters and runs of digits; everything else separates.
std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  int kind = 0;  // 0 none, 1 letters, 2 digits
  for (char c : text) {
    const int k = is_alpha(c) ? 1 : is_digit(c) ? 2 : 0;
    if (k != kind && !cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
    kind = k;
    if (k == 1) cur.push_back(static_cast<char>(c | 0x20));
    if (k == 2) cur.push_back(c);
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool has_phrase(const std::vector<std::string>& name, const std::vector<std::string>& phrase) {
  if (phrase.empty() || phrase.size() > name.size()) return false;
  for (std::size_t i = 0; i + phrase.size() <= name.size(); ++i)
    if (std::equal(phrase.begin(), phrase.end(), name.begin() + static_cast<std::ptrdiff_t>(i))) return true;
  return false;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// One clause: "a|b|c" (one must appear) or "!a|b" (none may appear).
bool clause_holds(const std::vector<std::string>& name, std::string_view clause) {
  clause = trim(clause);
  const bool negated = !clause.empty() && clause.front() == '!';
  if (negated) clause.remove_prefix(1);
  bool any = false;
  for (std::string_view phrase : split(clause, '|'))
    if (has_phrase(name, tokenize(phrase))) any = true;
  return negated ? !any : any;
}

bool rule_holds(const std::vector<std::string>& name, std::string_view rule) {
  for (std::string_view alternative : split(rule, ';')) {
    bool all = !trim(alternative).empty();
    for (std::string_view clause : split(alternative, ','))
      if (!clause_holds(name, clause)) {
        all = false;
        break;
      }
    if (all) return true;
  }
  return false;
}

// Variants whose figures are not the board's: laptop and Max-Q parts, embedded modules, MIG slices.
constexpr std::string_view kNotABoard = "laptop|max q|mobile|embedded|mig";

// ---- networks ----

// InfiniBand rates per 4x port: InfiniBand Trade Association, as tabulated by
// advancedclustering.com/act_kb/infiniband-types-speeds and infiniband.jp/2022/06/01 (signalling rate, line
// code and data rate per generation); HDR100/NDR200 are 2-lane ports of HDR/NDR. Ethernet: the IEEE 802.3
// clause named in each row, whose nominal speed is the data rate.
#define SCALESCOPE_IB_SOURCE "InfiniBand Trade Association rates (advancedclustering.com, infiniband.jp): "
const std::vector<NicSpec>& nic_rows() {
  static const std::vector<NicSpec> rows = {
      {"InfiniBand SDR", "InfiniBand", 10, 8, SCALESCOPE_IB_SOURCE "SDR 4x, 10 Gb/s signalling, 8b/10b, 8 Gb/s data"},
      {"InfiniBand DDR", "InfiniBand", 20, 16, SCALESCOPE_IB_SOURCE "DDR 4x, 20 Gb/s, 8b/10b, 16 Gb/s data"},
      {"InfiniBand QDR", "InfiniBand", 40, 32, SCALESCOPE_IB_SOURCE "QDR 4x, 40 Gb/s, 8b/10b, 32 Gb/s data"},
      {"InfiniBand FDR", "InfiniBand", 56, 4 * 14.0625 * 64 / 66,
       SCALESCOPE_IB_SOURCE "FDR 4x, 4 x 14.0625 Gb/s, 64b/66b, 54.5 Gb/s data"},
      {"InfiniBand EDR", "InfiniBand", 100, 100, SCALESCOPE_IB_SOURCE "EDR 4x, 4 x 25.78125 Gb/s, 64b/66b, 100 Gb/s"},
      {"InfiniBand HDR100", "InfiniBand", 100, 100, SCALESCOPE_IB_SOURCE "HDR100, a 2-lane HDR port, 100 Gb/s"},
      {"InfiniBand HDR", "InfiniBand", 200, 200, SCALESCOPE_IB_SOURCE "HDR 4x, 4 x 53.125 Gb/s PAM4, 200 Gb/s"},
      {"InfiniBand NDR200", "InfiniBand", 200, 200, SCALESCOPE_IB_SOURCE "NDR200, a 2-lane NDR port, 200 Gb/s"},
      {"InfiniBand NDR", "InfiniBand", 400, 400, SCALESCOPE_IB_SOURCE "NDR 4x, 4 x 106.25 Gb/s PAM4, 400 Gb/s"},
      {"InfiniBand XDR", "InfiniBand", 800, 800,
       SCALESCOPE_IB_SOURCE "XDR 4x, 800 Gb/s (IBTA roadmap; NVIDIA Quantum-X800 switches, ConnectX-8)"},
      {"Ethernet 1G", "Ethernet", 1, 1, "IEEE 802.3ab/z 1000BASE-T/X"},
      {"Ethernet 10G", "Ethernet", 10, 10, "IEEE 802.3ae 10GBASE-R (64b/66b, 10 Gb/s data)"},
      {"Ethernet 25G", "Ethernet", 25, 25, "IEEE 802.3by 25GBASE-R"},
      {"Ethernet 40G", "Ethernet", 40, 40, "IEEE 802.3ba 40GBASE-R4"},
      {"Ethernet 50G", "Ethernet", 50, 50, "IEEE 802.3cd 50GBASE-R"},
      {"Ethernet 100G", "Ethernet", 100, 100, "IEEE 802.3ba/bm/cd 100GBASE-R"},
      {"Ethernet 200G", "Ethernet", 200, 200, "IEEE 802.3bs/cd 200GBASE-R"},
      {"Ethernet 400G", "Ethernet", 400, 400, "IEEE 802.3bs/ck 400GBASE-R"},
      {"Ethernet 800G", "Ethernet", 800, 800, "IEEE 802.3df 800GBASE-R"},
  };
  return rows;
}
#undef SCALESCOPE_IB_SOURCE

std::string fmt_gbps(double v) { return fmt::format("{:.4g}", v); }
// A result: whole GB/s from 100 up, one decimal below.
std::string fmt_result(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v); }

}  // namespace

std::span<const GpuSpec> gpu_table() {
  static const std::vector<GpuSpec> table = build_gpu_table();
  return table;
}

namespace {

const GpuSpec* find_gpu_tokens(const std::vector<std::string>& name) {
  const GpuSpec* found = nullptr;
  for (const GpuSpec& g : gpu_table()) {
    if (!rule_holds(name, g.match)) continue;
    if (found) return nullptr;  // two entries fit: ambiguous, do not guess
    found = &g;
  }
  return found;
}

}  // namespace

const GpuSpec* find_gpu(std::string_view product_name) {
  std::vector<std::string> name = tokenize(product_name);
  if (name.empty() || clause_holds(name, kNotABoard)) return nullptr;
  if (const auto* g = find_gpu_tokens(name)) return g;
  // A GeForce board by its number alone, as owners write it ("4x 4090", "NVIDIA 5090", "two 3090s"): the numbers
  // 1050–1080 are GTX boards, 2060–5090 RTX boards; professional lines (Quadro, Tesla, RTX A…) have letters.
  for (std::size_t i = 0; i < name.size(); ++i) {
    const std::string& t = name[i];
    if (t.size() != 4 || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }) || t[3] != '0') continue;
    const int n = std::stoi(t);
    if (n < 1050 || n > 5090 || (n > 1080 && n < 2060)) continue;
    if (i > 0 && (name[i - 1] == "rtx" || name[i - 1] == "gtx" || name[i - 1] == "quadro")) break;
    name.insert(name.begin() + static_cast<std::ptrdiff_t>(i), n < 2000 ? "gtx" : "rtx");
    return find_gpu_tokens(name);
  }
  return nullptr;
}

std::span<const NicSpec> nic_table() { return nic_rows(); }

const NicSpec* find_nic(double line_gbit, bool infiniband) {
  if (!(line_gbit > 0)) return nullptr;
  const std::string_view kind = infiniband ? "InfiniBand" : "Ethernet";
  for (const NicSpec& n : nic_rows())
    if (n.kind == kind && std::abs(n.line_gbit - line_gbit) <= 0.01 * n.line_gbit) return &n;
  return nullptr;
}

double nic_busbw_gbps(double line_gbit) { return line_gbit > 0 ? line_gbit / 8 * kNicBusbwEfficiency : 0; }

PathCeiling expected_path_busbw(const GpuSpec* gpu, const Link& link) {
  const std::string who = gpu ? fmt::format("between {}", gpu->model) : "between GPUs of an unknown model";
  const std::string token = to_string(link);
  switch (link.cls) {
    case LinkClass::self: return {0, "X: the same GPU, no transfer"};
    case LinkClass::unknown: return {0, "path class not read: no ceiling"};
    case LinkClass::nvlink: {
      if (link.nvlinks <= 0) return {0, "NVLink without a link count: no ceiling"};
      double per = kAssumedNvlinkGbps;
      std::string note;
      if (!gpu)
        note = fmt::format(" ({} GB/s per link assumed)", fmt_gbps(per));
      else if (gpu->nvlink_link_gbps > 0)
        per = gpu->nvlink_link_gbps;
      else
        note = fmt::format(" (no NVLink in the table for this model; {} GB/s per link assumed)", fmt_gbps(per));
      const double gbps = link.nvlinks * per * kNvlinkShare;
      return {gbps, fmt::format("{} {}{}: {} link{} × {} GB/s × {:.2f} (the share NCCL reaches on NVLink) ≈ {} "
                                "GB/s",
                                token, who, note, link.nvlinks, link.nvlinks == 1 ? "" : "s", fmt_gbps(per),
                                kNvlinkShare, fmt_result(gbps))};
    }
    case LinkClass::pix:
    case LinkClass::pxb:
    case LinkClass::phb:
    case LinkClass::node:
    case LinkClass::sys: break;
  }
  int gen = kAssumedPcieGen, width = kAssumedPcieWidth;
  std::string note;
  if (!gpu)
    note = fmt::format(" (PCIe Gen{} x{} assumed)", gen, width);
  else if (gpu->pcie_gen > 0 && gpu->pcie_width > 0) {
    gen = gpu->pcie_gen;
    width = gpu->pcie_width;
  } else
    note = fmt::format(" (no PCIe link of its own in the table; Gen{} x{} assumed)", gen, width);
  const double line = pcie_link_gbps(gen, width);
  const bool p2p = gpu ? gpu->pcie_p2p : true;
  if (!p2p) {
    const double gbps = line * kSysFactor * kPcieShare;
    return {gbps, fmt::format("{} {}{}: no PCIe peer-to-peer on this model, so NCCL stages through host memory "
                              "(SHM): PCIe Gen{} x{} {:.1f} GB/s × {:.2f} × {:.2f} (the share NCCL reaches) ≈ "
                              "{:.1f} GB/s",
                              token, who, note, gen, width, line, kSysFactor, kPcieShare, gbps)};
  }
  const double factor = path_factor(link.cls);
  std::string_view why;
  switch (link.cls) {
    case LinkClass::pix:
    case LinkClass::pxb: why = "through PCIe switches"; break;
    case LinkClass::phb: why = "through the CPU's root complex, NCCL's 6/5 penalty"; break;
    case LinkClass::node: why = "between host bridges of one socket, as PHB"; break;
    default: why = "staged through host memory across sockets"; break;
  }
  const double gbps = line * factor * kPcieShare;
  return {gbps, fmt::format("{} {}{}: PCIe Gen{} x{} {:.1f} GB/s × {:.2f} ({}) × {:.2f} (the share NCCL reaches) ≈ "
                            "{:.1f} GB/s",
                            token, who, note, gen, width, line, factor, why, kPcieShare, gbps)};
}

PathCeiling expected_network_busbw(int nics_per_node, double line_gbit) {
  if (nics_per_node <= 0 || !(line_gbit > 0))
    return {0, fmt::format("no network ceiling: {} port(s) of {} Gb/s", nics_per_node, fmt_gbps(line_gbit))};
  const double per = nic_busbw_gbps(line_gbit);
  const double gbps = nics_per_node * per;
  return {gbps, fmt::format("{} × {} Gb/s port{}: {} / 8 × {:.2f} = {:.1f} GB/s each (NCCL's ~12 GB/s per 100 Gb/s) "
                            "≈ {} GB/s",
                            nics_per_node, fmt_gbps(line_gbit), nics_per_node == 1 ? "" : "s", fmt_gbps(line_gbit),
                            kNicBusbwEfficiency, per, fmt_result(gbps))};
}

PathCeiling expected_network_busbw(int nics_per_node, const NicSpec& nic) {
  if (nics_per_node <= 0 || !(nic.data_gbit > 0))
    return {0, fmt::format("no network ceiling: {} port(s) of {}", nics_per_node, nic.name)};
  const double per = nic_busbw_gbps(nic.data_gbit);
  const double gbps = nics_per_node * per;
  return {gbps, fmt::format("{} × {} ({} Gb/s data): {} / 8 × {:.2f} = {:.1f} GB/s each ≈ {} GB/s",
                            nics_per_node, nic.name, fmt_gbps(nic.data_gbit), fmt_gbps(nic.data_gbit),
                            kNicBusbwEfficiency, per, fmt_result(gbps))};
}

}  // namespace scalescope::topo
