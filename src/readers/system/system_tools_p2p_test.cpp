// NVIDIA's CUDA sample p2pBandwidthLatencyTest: "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]", the device list
// ("Device: 0, NVIDIA RTX 6000 Ada Generation, pciBusID: c1, pciDeviceID: 0, pciDomainID:0"), the peer checks
// ("Device=0 CAN Access Peer Device=1", "… CANNOT Access …"), the "P2P Connectivity Matrix", and the bandwidth
// (GB/s) and latency (us) matrices with P2P disabled and enabled: "Unidirectional P2P=Disabled Bandwidth Matrix
// (GB/s)", "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)" (older samples: "… Enabled Bandwidth
// Matrix"), "Bidirectional P2P=…", "P2P=Disabled Latency Matrix (us)", "P2P=Enabled Latency (P2P Writes) Matrix
// (us)" with its "GPU" and "CPU" parts (the CPU part is not read). Formats as in the cuda-samples output pasted in
// public repositories (an RTX 6000 Ada pair, 8-GPU A100 / H100 nodes in stas00/ml-engineering).

#include <map>

#include "text/log_text.h"
#include "readers/system/system_tools_internal.h"

namespace scalescope::analyze::system_tools_detail {
namespace {

enum class Section { none, connectivity, bandwidth, latency };

struct Matrix {
  Section section = Section::none;
  bool peer = false, bidirectional = false;
  bool cpu_part = false;            // the latency matrix's "CPU" half
  std::vector<int> columns;         // device indices of the header
};

class P2pTestReader {
 public:
  explicit P2pTestReader(Scan& scan) : scan_(scan) {}

  void run(const std::vector<Line>& lines) {
    for (const Line& l : lines) {
      const std::string_view t = l.text;
      if (starts_with(t, "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]")) {
        scan_.saw(Tool::p2p_test);
        matrix_ = {};
        continue;
      }
      if (starts_with(t, "Device: ") && t.find(", pciBusID:") != std::string_view::npos) {
        device(l, t);
        continue;
      }
      if (starts_with(t, "Device=") && t.find("Access Peer Device=") != std::string_view::npos) {
        peer_check(l, t);
        continue;
      }
      if (section_header(t)) {
        scan_.saw(Tool::p2p_test);
        continue;
      }
      if (matrix_.section == Section::none) continue;
      const auto w = words(t);
      if (w.empty()) continue;  // the blank line between a latency matrix's GPU and CPU parts
      if (w[0] == "D\\D" || w[0] == "GPU" || w[0] == "CPU") {
        matrix_.cpu_part = w[0] == "CPU";
        matrix_.columns.clear();
        for (std::size_t k = 1; k < w.size(); ++k)
          if (const auto n = small_int(w[k])) matrix_.columns.push_back(*n);
        continue;
      }
      if (const auto r = small_int(w[0]); r && !matrix_.columns.empty()) {
        row(l, *r, w);
        continue;
      }
      matrix_ = {};  // left the matrix
    }
    for (const auto& [pair, status] : peers_) {
      diagnose::P2pStatus s;
      s.a = "GPU" + std::to_string(pair.first);
      s.b = "GPU" + std::to_string(pair.second);
      s.status = status.first;
      s.access = "cuda";
      scan_.add(std::move(s), *status.second);
    }
  }

 private:
  bool section_header(std::string_view t) {
    if (t == "P2P Connectivity Matrix") {
      matrix_ = {};
      matrix_.section = Section::connectivity;
      return true;
    }
    const bool enabled = t.find("P2P=Enabled") != std::string_view::npos;
    const bool disabled = t.find("P2P=Disabled") != std::string_view::npos;
    if ((!enabled && !disabled) || t.find("Matrix") == std::string_view::npos) return false;
    matrix_ = {};
    matrix_.peer = enabled;
    if (t.find("Bandwidth") != std::string_view::npos) {
      matrix_.section = Section::bandwidth;
      matrix_.bidirectional = starts_with(t, "Bidirectional");
      return true;
    }
    if (t.find("Latency") != std::string_view::npos) {
      matrix_.section = Section::latency;
      return true;
    }
    matrix_ = {};
    return false;
  }

  void device(const Line& l, std::string_view t) {
    // "Device: 0, NVIDIA RTX 6000 Ada Generation, pciBusID: c1, pciDeviceID: 0, pciDomainID:0"
    std::string_view rest = t.substr(8);
    const auto idx = leading_int(rest);
    const std::size_t first = rest.find(", ");
    const std::size_t bus = rest.find(", pciBusID:");
    if (!idx || first == std::string_view::npos || bus == std::string_view::npos || bus < first) return;
    scan_.saw(Tool::p2p_test);
    diagnose::GpuSeen g;
    g.name = std::string(trim_blanks(rest.substr(first + 2, bus - first - 2)));
    g.index = *idx;
    std::string_view id = trim_blanks(rest.substr(bus + 11));
    id = id.substr(0, id.find(','));
    if (!id.empty()) g.bus_id = std::string(trim_blanks(id));
    scan_.add(std::move(g), l);
  }

  void peer_check(const Line& l, std::string_view t) {
    // "Device=0 CAN Access Peer Device=1" / "Device=0 CANNOT Access Peer Device=1"
    const auto a = leading_int(t.substr(7));
    const std::size_t at = t.find("Access Peer Device=");
    const auto b = leading_int(t.substr(at + 19));
    if (!a || !b) {
      scan_.note(l, "peer check line without both devices (cut line?); not read");
      return;
    }
    scan_.saw(Tool::p2p_test);
    const bool cannot = t.find("CANNOT") != std::string_view::npos;
    peers_.emplace(std::pair{*a, *b}, std::pair{std::string(cannot ? "NS" : "OK"), &l});
  }

  void row(const Line& l, int r, const std::vector<std::string_view>& w) {
    const std::size_t n = w.size() - 1;
    if (n < matrix_.columns.size())
      scan_.note(l, "p2pBandwidthLatencyTest row of " + std::to_string(n) + " values where the header names " +
                        std::to_string(matrix_.columns.size()) + " devices (cut line?); the rest not read");
    if (matrix_.cpu_part) return;
    for (std::size_t k = 0; k < n && k < matrix_.columns.size(); ++k) {
      const int b = matrix_.columns[k];
      if (b == r) continue;
      const auto v = number(w[k + 1]);
      if (!v) {
        scan_.note(l, "'" + std::string(w[k + 1]) + "' is not a number; not read");
        continue;
      }
      if (matrix_.section == Section::connectivity) {
        peers_.emplace(std::pair{r, b}, std::pair{std::string(*v != 0 ? "OK" : "NS"), &l});
        continue;
      }
      diagnose::P2pMeasurement m;
      m.a = r;
      m.b = b;
      m.peer_access = matrix_.peer;
      m.bidirectional = matrix_.bidirectional;
      if (matrix_.section == Section::bandwidth) m.gbps = *v;
      else m.latency_us = *v;
      scan_.add(std::move(m), l);
    }
  }

  Scan& scan_;
  Matrix matrix_;
  std::map<std::pair<int, int>, std::pair<std::string, const Line*>> peers_;  // first statement of each pair wins
};

}  // namespace

void read_p2p_test(const std::vector<Line>& lines, Scan& scan) { P2pTestReader(scan).run(lines); }

}  // namespace scalescope::analyze::system_tools_detail
