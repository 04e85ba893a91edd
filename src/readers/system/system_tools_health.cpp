// Node health checks: Azure's NHC (azurehpc-health-checks, built on LBNL NHC) prints each failure as
// "ERROR:  nhc:  Health check failed:  check_ib_bw_gdr: ib_write_bw, IB=mlx5_ib0, IB BW (expected > 380 Gbps, but
// measured 351.09 Gbps. FaultCode: NHC2003" (the message may wrap onto the next lines), after a line naming the node
// when several nodes' output is gathered ("## host-a", "[1] 12:00:01 [FAILURE] host-a"). A failed check is a member
// of the job below what its peers do: a Claim "health-check-failed" naming the node and the check, and the measured
// figure against the check's threshold as a Measurement.

#include <regex>
#include <string>

#include <fmt/format.h>

#include "readers/system/system_tools_internal.h"
#include "text/log_text.h"

namespace scalescope::analyze::system_tools_detail {

void read_health_checks(const std::vector<Line>& lines, Scan& scan) {
  static const std::regex host_re(R"(^(?:#+\s*|\[\d+\]\s+\S+\s+\[(?:SUCCESS|FAILURE)\]\s+)([A-Za-z0-9_.-]+)\b)");
  static const std::regex figure_re(R"(expected\s*([<>]=?)\s*([0-9.]+)\s*([A-Za-z/]*),?\s*but\s+measured\s+([0-9.]+)\s*([A-Za-z/]*))");
  std::string host;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string t(lines[i].text);
    std::smatch hm;
    if (std::regex_search(t, hm, host_re) && !icontains(t, "nhc")) host = hm[1].str();
    const std::size_t at = t.find("Health check failed:");
    if (at == std::string::npos || !icontains(t, "nhc")) continue;
    // The message, with its wrapped continuation lines (indented, or not starting a new ERROR/host line).
    std::string message = std::string(trim_blanks(std::string_view(t).substr(at + 20)));
    for (std::size_t k = i + 1; k < lines.size() && k <= i + 3; ++k) {
      const std::string_view n = lines[k].text;
      if (n.empty() || icontains(n, "nhc:") || n.front() == '#' || n.front() == '[') break;
      message += " " + std::string(n);
    }
    scan.saw(Tool::health_check);
    std::string check = message.substr(0, message.find(':'));
    scan.add(diagnose::Claim{"health-check-failed", (host.empty() ? "" : host + ": ") + message.substr(0, 200)}, lines[i]);
    std::smatch fm;
    if (std::regex_search(message, fm, figure_re)) {
      diagnose::Measurement m;
      m.quantity = "health check";
      m.value = std::stod(fm[4].str());
      m.unit = fm[5].str().empty() ? fm[3].str() : fm[5].str();
      m.higher_is_better = fm[1].str()[0] == '>';
      m.dims["check"] = check;
      m.dims["expected"] = fm[1].str() + " " + fm[2].str() + (fm[3].str().empty() ? "" : " " + fm[3].str());
      if (!host.empty()) m.dims["host"] = host;
      m.row = fmt::format("{}{}", host.empty() ? "" : host + " ", check);
      m.table = "health checks";
      scan.add(std::move(m), lines[i]);
    }
  }
}

}  // namespace scalescope::analyze::system_tools_detail
