// The diagnosis over every case of two corpora of real public threads whose cause was established (each INDEX.md
// gives the expected primary cause id): the project's own tests/corpus/ (batches collected for the first-sight score,
// issue #36) and ../shared/corpus/cases/ beside the developers' checkout (skipped with a message where it is absent,
// as in a user's clone). Each case's evidence files are read as `scalescope analyze` reads them, every file must be
// read or refused with its reason, and the result of each case is reported. The cases listed in the corpus's
// passing list passed when the list was written: the suite fails when one of them stops passing.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "evidence/gather.h"

using namespace scalescope;
using namespace scalescope::diagnose;
namespace fs = std::filesystem;

namespace {

const fs::path kSharedCases = fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "cases";
const fs::path kSharedPassing = fs::path(SCALESCOPE_SOURCE_DIR) / "tests" / "diagnose" / "corpus_passing.txt";
const fs::path kOwnCases = fs::path(SCALESCOPE_SOURCE_DIR) / "tests" / "corpus";
const fs::path kOwnPassing = fs::path(SCALESCOPE_SOURCE_DIR) / "tests" / "corpus" / "passing.txt";

// "| case-id | `cause-id` | …" rows of INDEX.md.
std::map<std::string, std::string> expected_causes(const fs::path& cases) {
  std::map<std::string, std::string> out;
  std::ifstream in(cases / "INDEX.md");
  std::string line;
  const std::regex row(R"(^\|\s*([A-Za-z0-9._-]+)\s*\|\s*`([a-z0-9-]+)`\s*\|)");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, row)) out[m[1]] = m[2];
  return out;
}

std::set<std::string> listed_passing(const fs::path& passing) {
  std::set<std::string> out;
  std::ifstream in(passing);
  std::string line;
  while (std::getline(in, line)) {
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (!line.empty()) out.insert(line);
  }
  return out;
}

/// Every case of `cases` diagnosed; a case of `passing` that no longer names its cause fails the test.
void check_corpus(const fs::path& cases, const fs::path& passing, std::size_t min_cases) {
  const auto expected = expected_causes(cases);
  ASSERT_GE(expected.size(), min_cases) << "INDEX.md lists fewer cases than expected";
  const auto passing_before = listed_passing(passing);
  std::size_t hits = 0;
  std::ostringstream table;
  std::vector<std::string> regressions;
  for (const auto& [name, want] : expected) {
    const auto dir = cases / name;
    ASSERT_TRUE(fs::is_directory(dir)) << name;
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().filename() != "case.md") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    const auto ev = gather_evidence(files);
    for (const auto& f : ev.files)
      EXPECT_TRUE(f.facts > 0 || !f.error.empty() || !f.notes.empty())
          << name << ": " << f.path << " was neither read (facts, or a note saying what the reader found) nor refused with a reason";
    const auto d = diagnose::diagnose(ev.facts);
    const std::string got = d.primary ? d.primary->cause : "(none)";
    const bool ok = got == want;
    hits += ok ? 1 : 0;
    table << (ok ? "  pass  " : "  MISS  ") << name << ": expected " << want << ", got " << got
          << (d.primary ? " (" + confidence_label(d.primary->score) + ")" : "") << "\n";
    if (!ok && passing_before.count(name)) regressions.push_back(name + " (now " + got + ")");
  }
  std::cout << "diagnosis corpus: " << hits << " of " << expected.size() << " cases name the expected primary cause\n"
            << table.str();
  for (const auto& name : passing_before) EXPECT_TRUE(expected.count(name)) << name << " in " << passing << " is no case";
  EXPECT_TRUE(regressions.empty()) << "cases that passed before and fail now: " << regressions.size() << "\n" << table.str();
}

}  // namespace

TEST(DiagnosisCorpus, EveryCaseReportedAndNoPassingCaseRegresses) {
  if (!fs::is_directory(kSharedCases)) GTEST_SKIP() << "the shared corpus (" << kSharedCases << ") is not beside this checkout";
  check_corpus(kSharedCases, kSharedPassing, 17);
}

TEST(DiagnosisCorpus, TheProjectsOwnCorpusEveryCaseReportedAndNoPassingCaseRegresses) {
  check_corpus(kOwnCases, kOwnPassing, 281);
}
