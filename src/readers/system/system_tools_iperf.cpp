// iperf / iperf3 client output: "[  3]  0.0-10.0 sec   113 MBytes  95.1 Mbits/sec" (iperf 2) or "[  5]   0.00-10.00
// sec  1.10 GBytes  941 Mbits/sec  0  sender" (iperf 3). Fact: the network rate between the two hosts as measured
// (the median interval), a NicSeen whose line_gbit is the measured rate.

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "readers/system/system_tools_internal.h"

namespace scalescope::analyze::system_tools_detail {

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
