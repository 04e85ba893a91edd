// Python profile reader: cProfile / pstats text (Python 3 built-ins in braces, the profile module's ":0(name)", the
// 3.12 "~:0(<…>)" form, recursive "N/M" counts, the header line), damaged input and the shared corpus's profile.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "readers/job/python_profile.h"

using namespace scalescope;
namespace fs = std::filesystem;

namespace {

diagnose::Reading read(const std::string& text) { return analyze::read_python_profile(text, "profile.txt"); }

const char* kPstats =
    "         2317016 function calls (2280914 primitive calls) in 63.285 seconds\n"
    "\n"
    "   Ordered by: cumulative time\n"
    "   List reduced from 3120 to 8 due to restriction <8>\n"
    "\n"
    "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n"
    "    294/1    0.004    0.000   63.290   63.290 {built-in method builtins.exec}\n"
    "        1    0.000    0.000   63.290   63.290 train.py:1(<module>)\n"
    "       20    0.010    0.001   40.100    2.005 data_parallel.py:150(forward)\n"
    "       20    0.120    0.006   21.300    1.065 replicate.py:78(replicate)\n"
    "     8460   12.500    0.001   12.500    0.001 {method 'acquire' of '_thread.lock' objects}\n"
    "      400    3.200    0.008    3.200    0.008 {method 'item' of 'torch._C.TensorBase' objects}\n"
    "        1    0.000    0.000    0.001    0.001 <frozen importlib._bootstrap>:1002(_find_and_load)\n"
    "       12    0.300    0.025    0.300    0.025 /usr/lib/python3.10/json/decoder.py:343(raw_decode)\n";

}  // namespace

TEST(PythonProfile, ReadsEveryRowOfAPstatsListing) {
  const auto r = read(kPstats);
  const auto rows = r.facts.of<diagnose::ProfileRow>();
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0].fact.function, "exec");
  EXPECT_EQ(rows[0].fact.file, "");
  EXPECT_EQ(rows[0].fact.calls, 294u);
  EXPECT_EQ(rows[0].fact.primitive_calls, 1u);
  EXPECT_DOUBLE_EQ(rows[0].fact.cumtime_s, 63.29);
  EXPECT_EQ(rows[1].fact.function, "<module>");
  EXPECT_EQ(rows[1].fact.file, "train.py");
  EXPECT_EQ(rows[1].fact.file_line, 1);
  EXPECT_EQ(rows[3].fact.function, "replicate");
  EXPECT_DOUBLE_EQ(rows[3].fact.tottime_s, 0.12);
  EXPECT_DOUBLE_EQ(rows[3].fact.cumtime_s, 21.3);
  EXPECT_EQ(rows[4].fact.function, "acquire");
  EXPECT_EQ(rows[4].fact.file, "");
  EXPECT_FALSE(rows[4].fact.file_line.has_value());
  EXPECT_EQ(rows[5].fact.function, "item");
  EXPECT_EQ(rows[6].fact.file, "<frozen importlib._bootstrap>");
  EXPECT_EQ(rows[6].fact.function, "_find_and_load");
  EXPECT_EQ(rows[7].fact.file, "/usr/lib/python3.10/json/decoder.py");
  EXPECT_EQ(rows[7].fact.file_line, 343);
  EXPECT_EQ(rows[7].where.line, 14u);
  // The header line: the profiled wall time.
  const auto ms = r.facts.of<diagnose::Measurement>();
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].fact.quantity, "profiled time");
  EXPECT_DOUBLE_EQ(ms[0].fact.value, 63.285);
  EXPECT_TRUE(analyze::looks_like_python_profile(kPstats));
}

TEST(PythonProfile, ProfileModuleAndPython312Forms) {
  const auto r = read(
      "       82    9.238    0.113    9.238    0.113 :0(run_backward)\n"
      "     2114    4.500    0.002    4.500    0.002 :0(acquire)\n"
      "        1    0.000    0.000    0.000    0.000 profile:0(profiler)\n"
      "      5/1    0.000    0.000    1.000    1.000 ~:0(<built-in method builtins.exec>)\n"
      "        3    0.001    0.000    0.001    0.000 ~:0(<method 'disable' of '_lsprof.Profiler' objects>)\n");
  const auto rows = r.facts.of<diagnose::ProfileRow>();
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].fact.function, "run_backward");
  EXPECT_EQ(rows[0].fact.file, "");
  EXPECT_EQ(rows[1].fact.function, "acquire");
  EXPECT_EQ(rows[2].fact.file, "profile");
  EXPECT_EQ(rows[2].fact.function, "profiler");
  EXPECT_EQ(rows[3].fact.function, "exec");
  EXPECT_EQ(rows[3].fact.calls, 5u);
  EXPECT_EQ(rows[3].fact.primitive_calls, 1u);
  EXPECT_EQ(rows[4].fact.function, "disable");
}

TEST(PythonProfile, WrappedRowsPrefixesAndWindowsPaths) {
  const auto r = read(
      "> ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n"
      ">   1156049    9.164    0.000   15.516    0.000\n"
      ">   /very/long/path/to/site-packages/torch/nn/modules/module.py:774(__setattr__)\n"
      "[rank0]:     10    1.000    0.100    2.000    0.200 C:\\Users\\me\\train.py:42(step)\n");
  const auto rows = r.facts.of<diagnose::ProfileRow>();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].fact.function, "__setattr__");
  EXPECT_EQ(rows[0].fact.file_line, 774);
  EXPECT_EQ(rows[0].where.line, 2u);
  EXPECT_EQ(rows[1].fact.file, "C:\\Users\\me\\train.py");
  EXPECT_EQ(rows[1].fact.file_line, 42);
  EXPECT_FALSE(r.notes.empty());  // the joined row is noted
}

TEST(PythonProfile, DamagedInputNeverThrows) {
  std::string junk;
  for (int i = 0; i < 5000; ++i) junk += static_cast<char>((i * 131) % 256);
  EXPECT_NO_THROW({
    auto r = read(junk);
    r = read("   ncalls  tottime\n  12  0.5  0.1");          // cut row
    r = read("2898444/ 6.542 0.000 7.415 0.000 module.py:1215(named_modules)\n");
    r = read("1 2 3 4 5 x.py:(f)\n");
    r = read("99999999999999999999999 1 1 1 1 f.py:1(g)\n");
    r = read(std::string(100000, '9'));
    r = read("");
    (void)analyze::looks_like_python_profile(junk);
  });
  const auto r = read("   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\r\n"
                      "        3   25.258    8.419   25.258    8.419 decoder.py:343(raw_decode)\r\n"
                      "      883    3.255    0.004    5.86");
  ASSERT_EQ(r.facts.of<diagnose::ProfileRow>().size(), 1u);
  EXPECT_FALSE(r.notes.empty());  // the cut last row
  EXPECT_FALSE(analyze::looks_like_python_profile("hello\n1 2 3\n"));
  EXPECT_FALSE(analyze::looks_like_python_profile(""));
}

TEST(PythonProfileCorpus, GcDprProfileHead) {
  const fs::path cases = fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "cases";
  if (!fs::is_directory(cases)) GTEST_SKIP() << "shared corpus not found at " << cases << " (checkout without ../shared)";
  fs::path file;
  for (const auto& e : fs::directory_iterator(cases))
    if (e.path().filename().string().rfind("gcdpr2", 0) == 0) file = e.path() / "profile.txt";
  if (!fs::exists(file)) GTEST_SKIP() << "gcdpr2 case not in the corpus";
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_TRUE(analyze::looks_like_python_profile(ss.str()));
  const auto r = read(ss.str());
  const auto rows = r.facts.of<diagnose::ProfileRow>();
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0].fact.function, "raw_decode");
  EXPECT_DOUBLE_EQ(rows[0].fact.tottime_s, 25.258);
  EXPECT_EQ(rows[1].fact.function, "run_backward");
  EXPECT_EQ(rows[1].fact.file, "");
  EXPECT_EQ(rows[2].fact.function, "__setattr__");
  EXPECT_EQ(rows[2].fact.calls, 1156049u);
  EXPECT_EQ(rows[3].fact.function, "named_modules");
  EXPECT_EQ(rows[3].fact.calls, 2898444u);
  EXPECT_EQ(rows[3].fact.primitive_calls, 367168u);
  EXPECT_EQ(rows[4].fact.function, "acquire");
  EXPECT_EQ(rows[4].fact.calls, 2114u);
  EXPECT_EQ(rows[5].fact.calls, 3265133u);
  EXPECT_EQ(rows[5].fact.primitive_calls, 3265132u);
  EXPECT_EQ(rows[6].fact.function, "read");
  EXPECT_EQ(rows[6].where.line, 8u);
}
