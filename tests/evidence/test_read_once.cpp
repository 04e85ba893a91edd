// Each input file is read and parsed once per run (issue #37): every file of the project's fixtures and of the
// diagnosis corpus goes through evidence::run on its own while core::ParseCounting counts the parses, and no reader
// may parse one text twice — detection keeps what it parsed to recognise a kind (readers/input_kind.h,
// DetectionProducts) and the reading takes it. Every kind a file was detected as must show its reader's parse, so a
// reader that stops counting fails here too, and every kind must be met at least once.
//
// What counts as a parse: a reader's read of a text into its record or facts (core/parse_count.h). Recognisers that
// only look at lines' shapes (NCCL prefixes, watchdog wording, launcher words, NAME=value lines, cProfile headers)
// are not parses; nor is the training-log probe, which stops at the first line that tells.

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/parse_count.h"
#include "evidence/run.h"
#include "readers/input_kind.h"
#include "readers/nccl/nccl_log.h"

using namespace scalescope;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> files_under(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The parse counted for a kind: its reader's name in core::count_parse.
std::string reader_of(analyze::InputKind k) { return std::string(analyze::to_string(k)); }

}  // namespace

TEST(ReadOnce, CountingSeesARepeatedParse) {
  core::ParseCounting counting;
  const std::string log = "host-a:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n";
  (void)analyze::parse_nccl_log(log, "a.log");
  EXPECT_EQ(counting.repeated(), "");
  (void)analyze::parse_nccl_log(log, "a.log");
  EXPECT_EQ(counting.repeated(), "nccl_log x2");
}

TEST(ReadOnce, CountingIsOffOutsideAScope) {
  const std::string log = "host-a:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n";
  (void)analyze::parse_nccl_log(log, "a.log");  // no ParseCounting alive: nothing is kept
  core::ParseCounting counting;
  EXPECT_TRUE(counting.counts().empty());
}

TEST(ReadOnce, EveryFixtureAndCorpusFileIsParsedOncePerRun) {
  const fs::path src(SCALESCOPE_SOURCE_DIR);
  std::vector<std::string> files = files_under(src / "tests" / "fixtures");
  for (auto& f : files_under(src / "tests" / "corpus")) files.push_back(std::move(f));
  // A kind no fixture holds on its own: a cProfile listing, written here.
  const fs::path tmp = fs::temp_directory_path() / ("scalescope-read-once-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::ofstream(tmp / "profile.txt") << "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n"
                                        "        1    0.000    0.000   63.290   63.290 train.py:1(<module>)\n"
                                        "       20    0.010    0.001   40.100    2.005 data_parallel.py:150(forward)\n"
                                        "       20    0.120    0.006   21.300    1.065 replicate.py:78(replicate)\n";
  files.push_back((tmp / "profile.txt").string());
  std::set<analyze::InputKind> kinds_met;
  std::size_t read = 0;
  for (const auto& path : files) {
    core::ParseCounting counting;
    const auto a = evidence::run_files({path});
    ASSERT_EQ(a.files.size(), 1u) << path;
    const auto& r = a.files.front();
    if (r.detection.kinds.empty()) continue;  // not an input (a README, a case's notes): nothing parsed to count
    ++read;
    EXPECT_EQ(counting.repeated(), "") << path << ": a reader parsed this file's text more than once";
    std::set<std::string> counted;
    for (const auto& [key, n] : counting.counts()) counted.insert(key.first);
    for (auto k : r.detection.kinds) {
      kinds_met.insert(k);
      EXPECT_TRUE(counted.count(reader_of(k))) << path << ": detected as " << analyze::to_string(k)
                                               << " but that reader's parse was not counted";
    }
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  EXPECT_GT(read, 300u) << "fewer inputs than the fixtures and the corpus hold";
  for (int k = 0; k <= static_cast<int>(analyze::InputKind::nccl_profile); ++k)
    EXPECT_TRUE(kinds_met.count(static_cast<analyze::InputKind>(k)))
        << "no fixture or corpus file is a " << analyze::to_string(static_cast<analyze::InputKind>(k))
        << ": its reader's single parse is not shown";
}
