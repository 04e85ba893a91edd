// Robustness: random damage to real and hand-written tables (truncations, byte flips, deleted whitespace,
// duplicated and swapped lines) must never crash the parser or throw anything but core::Error, and whatever
// it returns must be a well-formed topology (square matrix, X on the diagonal).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"
#include "topo/analysis.h"
#include "topo/smi_topo_parser.h"

namespace fs = std::filesystem;
using namespace scalescope::topo;

namespace {

const char* kFixture =
    "$ nvidia-smi topo -m\n"
    "\x1b[4m\tGPU0\tGPU1\tGPU2\tNIC0\tNIC11NIC12\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV18\tSYSSYS\tPIX\tNODE\t0-47,96-143\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tSOC\tNODE\tPIX\tN/A\t0,3-9\t\t2\n"
    "GPU2\tSYS\tSOC\t X \tSYS\tSYS\t48-95\t1\t\tN/A\n"
    "NIC0\tPIX\tNODE\tSYS\t X \tPXB\n"
    "\nNIC Legend:\n\n  NIC0: mlx5_0\n";

std::vector<std::string> seeds() {
  std::vector<std::string> out{kFixture};
  const fs::path dir = fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "topo";
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) {
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      out.push_back(ss.str());
    }
  return out;
}

std::string mutate(std::string s, std::mt19937& rng) {
  auto pick = [&](std::size_t n) { return n == 0 ? std::size_t{0} : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  const int edits = 1 + static_cast<int>(pick(6));
  for (int e = 0; e < edits && !s.empty(); ++e) {
    switch (pick(6)) {
      case 0: s.resize(pick(s.size())); break;                                              // truncate
      case 1: s[pick(s.size())] = static_cast<char>(pick(256)); break;                       // flip a byte
      case 2: {                                                                              // delete whitespace
        std::size_t p = s.find_first_of(" \t", pick(s.size()));
        if (p != std::string::npos) s.erase(p, 1 + pick(4));
        break;
      }
      case 3: s.insert(pick(s.size()), std::string(1 + pick(3), " \t\nX0,-"[pick(7)])); break;  // insert
      case 4: {                                                                              // duplicate a span
        std::size_t p = pick(s.size()), n = pick(std::min<std::size_t>(200, s.size() - p));
        s.insert(pick(s.size()), s.substr(p, n));
        break;
      }
      default: s.erase(pick(s.size()), pick(64)); break;                                     // cut a span
    }
  }
  return s;
}

}  // namespace

TEST(TopoFuzz, RandomDamageNeverCrashesOrThrowsAnythingElse) {
  std::mt19937 rng(20261129);
  int parsed = 0, refused = 0;
  for (const auto& seed : seeds()) {
    for (int i = 0; i < 400; ++i) {
      const std::string text = mutate(seed, rng);
      try {
        auto r = parse_smi_topo(text, "fuzz");
        const auto& t = r.topology;
        ASSERT_EQ(t.links.size(), t.devices.size());
        for (std::size_t d = 0; d < t.devices.size(); ++d) {
          ASSERT_EQ(t.links[d].size(), t.devices.size());
          ASSERT_EQ(t.links[d][d].cls, LinkClass::self);
        }
        const std::size_t devices = t.devices.size();
        auto report = analyse(std::move(r));  // bandwidth and findings must cope with any result too
        ASSERT_EQ(report.bandwidth.gbps.size(), devices);
        ++parsed;
      } catch (const scalescope::core::Error&) {
        ++refused;
      } catch (const std::exception& e) {
        FAIL() << "threw " << e.what() << " for input:\n" << text;
      }
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(refused, 0);  // some mutations destroy the header: those must be refused, not guessed
}

// Found by fuzz_smi_topo (libFuzzer, ASan/UBSan): a header cell holding 0xFF bytes was quoted in a warning, and
// writing the reading as JSON (topo --out, analyze --out) threw nlohmann's invalid-UTF-8 error.
TEST(TopoFuzzRegression, InvalidUtf8InAHeaderCellStillGivesJson) {
  const std::string text =
      "        GPU0    GPU1    GP~\xff\xff\xff\xff\xff\xf9\xc7U4    CPU Affinity\n"
      "GPU0     X      NV12    SYS     0-23\n"
      "GPU1    NV12     X      SYS     0-23\n";
  const auto reading = parse_smi_topo(text, "fuzz");
  EXPECT_FALSE(reading.warnings.empty());
  EXPECT_NO_THROW((void)nlohmann::json(analyse(reading)).dump());
}
