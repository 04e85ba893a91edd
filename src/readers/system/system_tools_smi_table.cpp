// nvidia-smi's default table (no flags): a "| NVIDIA-SMI 525.105.17   Driver Version: … |" banner, then per GPU
// two rows between '|' borders —
//   "|   0  Tesla M60           Off  | 00000000:00:1B.0 Off |                    0 |"
//     (index, name, persistence; bus id, display; ECC) and
//   "| N/A   41C    P0    37W / 150W |    752MiB /  7680MiB |      0%      Default |"
//     (fan, temperature, performance state, power; memory; utilisation, compute mode)
// — as drivers 4xx–5xx print it (newer ones put the name and bus id in wider columns; the cells are read by their
// '|' borders, not by column). Facts: each GPU (name, index, bus id), how many exist, and each GPU's utilisation at
// that moment.

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

}  // namespace scalescope::analyze::system_tools_detail
