// The topology summary printed by doctor and analyze: its pointer to the full findings names the command that
// shows them — for a saved table, `scalescope topo --from FILE`, since a live `scalescope topo` shows this
// machine instead.

#include <gtest/gtest.h>

#include <string>

#include "report/topo_report.h"
#include "topo/analysis.h"
#include "topo/smi_topo_parser.h"

using namespace scalescope;

namespace {

// Two GPUs behind one PCIe switch, as `nvidia-smi topo -m` prints them: PCIe only, which is an info finding.
constexpr const char* kTwoGpusPix =
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tPIX\t0-15\t0\n"
    "GPU1\tPIX\t X \t0-15\t0\n";

int info_findings(const topo::TopoReport& r) {
  int n = 0;
  for (const auto& f : r.findings) n += f.severity == topo::Severity::info;
  return n;
}

}  // namespace

TEST(TopoSummary, InfoFindingsOfASavedTablePointToTopoFromThatFile) {
  const topo::TopoReport r = topo::analyse(topo::parse_smi_topo(kTwoGpusPix, "file saved-topo.txt"));
  ASSERT_GT(info_findings(r), 0) << "the fixture must produce an info finding";
  const std::string out = report::render_topo_summary(r);
  EXPECT_NE(out.find("run `scalescope topo --from saved-topo.txt` for all"), std::string::npos) << out;
}

TEST(TopoSummary, InfoFindingsOfOtherSourcesPointToTopo) {
  const topo::TopoReport r = topo::analyse(topo::parse_smi_topo(kTwoGpusPix, "text"));
  ASSERT_GT(info_findings(r), 0);
  const std::string out = report::render_topo_summary(r);
  EXPECT_NE(out.find("run `scalescope topo` for all"), std::string::npos) << out;
}
