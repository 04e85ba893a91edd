// core::Progress: the time left, the line drawn on a terminal and the plain lines of a log.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/progress.h"

namespace {

using scalescope::core::eta_seconds;
using scalescope::core::format_duration;
using scalescope::core::Progress;
using scalescope::core::ProgressStyle;

TEST(Progress, DurationsReadAsPeopleWriteThem) {
  EXPECT_EQ(format_duration(0.42), "0.4 s");
  EXPECT_EQ(format_duration(12.4), "12 s");
  EXPECT_EQ(format_duration(185), "3 min 05 s");
  EXPECT_EQ(format_duration(7620), "2 h 07 min");
  EXPECT_EQ(format_duration(-3), "0.0 s");
}

TEST(Progress, TimeLeftAssumesTheRateSoFar) {
  EXPECT_FALSE(eta_seconds(0, 10, 5));  // nothing done: no rate yet
  EXPECT_FALSE(eta_seconds(3, 0, 5));   // no total
  EXPECT_FALSE(eta_seconds(10, 10, 5)); // finished
  EXPECT_DOUBLE_EQ(*eta_seconds(2, 8, 10), 30.0);
}

std::string captured(ProgressStyle style, void (*body)(Progress&)) {
  char* buffer = nullptr;
  std::size_t size = 0;
  FILE* out = open_memstream(&buffer, &size);
  {
    Progress p("comm", 4, style, out);
    body(p);
  }
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

TEST(Progress, ALogGetsOneLinePerUpdateWithCountsAndNoControlCharacters) {
  const auto text = captured(ProgressStyle::lines, [](Progress& p) {
    p.update(1, "all_reduce 8 B");
    p.update(2, "all_reduce 16 B");
  });
  EXPECT_NE(text.find("comm 1/4 all_reduce 8 B"), std::string::npos) << text;
  EXPECT_NE(text.find("comm 2/4 all_reduce 16 B"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\033'), std::string::npos);
}

TEST(Progress, ATerminalLineIsRedrawnInPlaceAndEndedOnce) {
  const auto text = captured(ProgressStyle::terminal, [](Progress& p) {
    p.update(1, "a");
    p.update(4, "d");  // the last update is always drawn
    p.note("a result");
  });
  EXPECT_NE(text.find("\r\033[Kcomm [#####...............] 1/4 a"), std::string::npos) << text;
  EXPECT_NE(text.find("[####################] 4/4 d"), std::string::npos) << text;
  EXPECT_NE(text.find("\r\033[Ka result\n"), std::string::npos) << text;  // above the line, which is drawn again
  EXPECT_EQ(text.back(), '\n');                                           // finished by the destructor
}

TEST(Progress, TheLineFitsTheWidthAndItemsFromFilesAreMadeSafe) {
  FILE* sink = std::fopen("/dev/null", "w");
  ASSERT_NE(sink, nullptr);
  Progress p("doctor", 3, ProgressStyle::terminal, sink);
  p.update(1, std::string(300, 'x') + "\033[31m");
  const std::string line = p.render(20.0, 80);
  EXPECT_LE(line.size(), 90u) << line;  // the item is cut; the counts and the time stay
  EXPECT_NE(line.find("1/3"), std::string::npos);
  EXPECT_NE(line.find("about 40 s left"), std::string::npos) << line;
  EXPECT_EQ(line.find('\033'), std::string::npos);
  p.finish();
  std::fclose(sink);
}

TEST(Progress, TheEnvironmentChoosesTheStyleForRanksWritingIntoPipes) {
  setenv("SCALESCOPE_PROGRESS", "terminal", 1);
  EXPECT_EQ(scalescope::core::progress_style_from_environment(), ProgressStyle::terminal);
  setenv("SCALESCOPE_PROGRESS", "lines", 1);
  EXPECT_EQ(scalescope::core::progress_style_from_environment(), ProgressStyle::lines);
  unsetenv("SCALESCOPE_PROGRESS");
}

}  // namespace
