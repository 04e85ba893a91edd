// nvidia-smi's default table (no flags) and iperf / iperf3 client output.
//
// The table: a "| NVIDIA-SMI 525.105.17   Driver Version: … |" banner, then per GPU two rows between '|' borders —
// "|   0  Tesla M60           Off  | 00000000:00:1B.0 Off |                    0 |" (index, name, persistence; bus id,
// display; ECC) and "| N/A   41C    P0    37W / 150W |    752MiB /  7680MiB |      0%      Default |" (fan, temperature,
// performance state, power; memory; utilisation, compute mode) — as drivers 4xx–5xx print it (newer ones put the name
// and bus id in wider columns; the cells are read by their '|' borders, not by column). Facts: each GPU (name, index,
// bus id), how many exist, and each GPU's utilisation at that moment.
//
// iperf: "[  3]  0.0-10.0 sec   113 MBytes  95.1 Mbits/sec" (iperf 2) or "[  5]   0.00-10.00  sec  1.10 GBytes  941
// Mbits/sec  0  sender" (iperf 3). Fact: the network rate between the two hosts as measured (the median interval),
// a NicSeen whose line_gbit is the measured rate.

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "readers/system/system_tools_internal.h"

namespace scalescope::analyze::system_tools_detail {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

/// The cells of a "| a | b | c |" row, trimmed; empty when the line is not one.
std::vector<std::string_view> cells(std::string_view t) {
  std::vector<std::string_view> out;
  if (t.size() < 2 || t.front() != '|' || t.back() != '|') return out;
  t = t.substr(1, t.size() - 2);
  std::size_t from = 0;
  for (std::size_t i = 0; i <= t.size(); ++i)
    if (i == t.size() || t[i] == '|') {
      out.push_back(trim(t.substr(from, i - from)));
      from = i + 1;
    }
  return out;
}

}  // namespace

void read_smi_table(const std::vector<Line>& lines, Scan& scan) {
  bool banner = false;
  int gpus = 0;
  const Line* first = nullptr;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    if (icontains(l.text, "NVIDIA-SMI ") && icontains(l.text, "Driver Version")) {
      banner = true;
      continue;
    }
    if (!banner) continue;
    const auto c = cells(l.text);
    if (c.size() < 3) continue;
    // The first row of a GPU: "0  Tesla M60   Off" | "00000000:00:1B.0 Off" | "0".
    const auto w = words(c[0]);
    if (w.size() < 2 || !small_int(w[0])) continue;
    const std::size_t bus_len = pci_address_length(c[1]);
    if (bus_len == 0) continue;
    // The name: the words between the index and the persistence mode ("On" / "Off"), when printed.
    std::size_t end = w.size();
    if (end > 2 && (w[end - 1] == "On" || w[end - 1] == "Off")) --end;
    std::string name;
    for (std::size_t k = 1; k < end; ++k) name += (name.empty() ? "" : " ") + std::string(w[k]);
    if (name.empty()) continue;
    const int index = *small_int(w[0]);
    scan.saw(Tool::smi_table);
    scan.add(diagnose::GpuSeen{name, index, std::string(c[1].substr(0, bus_len)), std::nullopt, std::nullopt}, l);
    ++gpus;
    if (!first) first = &l;
    // The second row: its last cell starts with the utilisation ("0%      Default").
    if (i + 1 < lines.size()) {
      const auto c2 = cells(lines[i + 1].text);
      if (c2.size() >= 3) {
        const auto u = leading_number(c2[2]);
        if (u && u->second < c2[2].size() && c2[2][u->second] == '%' && u->first >= 0 && u->first <= 100) {
          diagnose::Measurement m;
          m.quantity = "GPU utilisation";
          m.unit = "%";
          m.value = u->first;
          m.higher_is_better = true;
          m.dims["gpu"] = std::to_string(index);
          m.row = fmt::format("GPU {} (nvidia-smi, at that moment)", index);
          m.table = "nvidia-smi";
          scan.add(std::move(m), lines[i + 1]);
        }
      }
    }
  }
  if (gpus > 0) scan.add(diagnose::GpuCount{gpus, "exist", std::nullopt}, *first);
}

void read_iperf(const std::vector<Line>& lines, Scan& scan) {
  std::vector<double> gbit;
  const Line* at = nullptr;
  for (const auto& l : lines) {
    // "[  3]  0.0-10.0 sec   113 MBytes  95.1 Mbits/sec", "[SUM] …"
    if (l.text.empty() || l.text.front() != '[') continue;
    const std::size_t close = l.text.find(']');
    if (close == std::string_view::npos || !icontains(l.text, " sec ")) continue;
    const auto w = words(l.text.substr(close + 1));
    for (std::size_t k = 1; k < w.size(); ++k) {
      const double scale = iequals(w[k], "Gbits/sec") ? 1 : iequals(w[k], "Mbits/sec") ? 1e-3 : iequals(w[k], "Kbits/sec") ? 1e-6 : 0;
      if (scale == 0) continue;
      if (const auto v = number(w[k - 1])) {
        gbit.push_back(*v * scale);
        if (!at) at = &l;
      }
      break;
    }
  }
  if (gbit.empty()) return;
  scan.saw(Tool::iperf);
  std::sort(gbit.begin(), gbit.end());
  const double median = gbit[gbit.size() / 2];
  diagnose::NicSeen n;
  n.name = fmt::format("the network as iperf measured it ({} interval(s), median {:.3g} Gb/s)", gbit.size(), median);
  n.line_gbit = median;
  n.link_layer = "Ethernet";
  scan.add(std::move(n), *at);
}

}  // namespace scalescope::analyze::system_tools_detail
