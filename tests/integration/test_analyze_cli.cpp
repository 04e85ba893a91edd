// `scalescope analyze` as a user runs it: every file of ../shared/corpus gives a result or a clean per-file error
// (never a crash or an internal error), several files at once, the JSON report, bad paths.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli_runner.h"

using scalescope::testing::read_json;
using scalescope::testing::run_cli;
using scalescope::testing::scratch_dir;
namespace fs = std::filesystem;

namespace {

const fs::path kCorpus = fs::path(SCALESCOPE_SHARED_CORPUS_DIR);

std::string quote(const fs::path& p) { return "'" + p.string() + "'"; }

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

}  // namespace

TEST(AnalyzeCli, EveryCorpusFileGivesAResultOrACleanError) {
  if (!fs::is_directory(kCorpus)) GTEST_SKIP() << "shared corpus not found at " << kCorpus;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(kCorpus))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 50u);
  const auto dir = scratch_dir("analyze_corpus");
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    const auto out = dir / "r.json";
    const auto r = run_cli("analyze " + quote(f) + " --out " + quote(out));
    ASSERT_TRUE(r.status == 0 || r.status == 1) << r.output;
    EXPECT_EQ(r.output.find("scalescope: internal error"), std::string::npos) << r.output;  // (inputs may quote "internal error")
    ASSERT_TRUE(fs::exists(out)) << r.output;
    const auto j = read_json(out);
    ASSERT_EQ(j.at("schema"), "scalescope.analyze/1");
    ASSERT_EQ(j.at("files").size(), 1u);
    const auto& entry = j["files"][0];
    const std::string rel = fs::relative(f, kCorpus).string();
    if (r.status == 1) {
      EXPECT_EQ(entry.at("status"), "error");
      ASSERT_FALSE(entry.at("errors").empty());
      EXPECT_NE(r.output.find("scalescope: error: "), std::string::npos);
      if (rel.rfind("traces/", 0) == 0) {
        // Only the NCCL profiler-plugin dump, which is not valid JSON, is refused; every Kineto trace is read.
        EXPECT_NE(rel.find("nccl_ext_profiler"), std::string::npos) << "unexpected failure: " << r.output;
        EXPECT_NE(r.output.find("not a Kineto trace"), std::string::npos) << r.output;
        EXPECT_EQ(entry.at("kinds"), nlohmann::json::array({"kineto_trace"}));
      } else {
        // Prose: the case descriptions of cases/ (case.md) and the scaling notes written as sentences.
        const bool prose = rel.rfind("scaling/", 0) == 0 || rel == "SOURCES.md" ||
                           (rel.rfind("cases/", 0) == 0 && fs::path(rel).filename() == "case.md");
        EXPECT_TRUE(prose) << "unexpected failure: " << r.output;
        EXPECT_NE(r.output.find("not a recognised input"), std::string::npos) << r.output;
      }
    } else {
      EXPECT_EQ(entry.at("status"), "ok");
      EXPECT_FALSE(entry.at("kinds").empty());
      const std::string top = rel.substr(0, rel.find('/'));
      auto has = [&](const std::string& k) { return std::find(entry["kinds"].begin(), entry["kinds"].end(), k) != entry["kinds"].end(); };
      if (top == "topo") {
        EXPECT_TRUE(has("smi_topo")) << entry["kinds"];
      }
      // nccl-tests outputs cut off before their table (131, 291) still hold NCCL INFO lines: read as NCCL logs.
      if (top == "nccl-tests") {
        EXPECT_TRUE(has("nccl_tests") || (has("nccl_log") && rel.find("_truncated") != std::string::npos)) << entry["kinds"];
      }
      if (top == "nccl-logs") {
        EXPECT_TRUE(entry.contains("nccl_log") || entry.contains("watchdog")) << entry["kinds"];
      }
      if (top == "traces") {
        EXPECT_TRUE(entry.contains("trace") && entry["trace"].contains("rank")) << entry;
        EXPECT_EQ(j["combined"]["trace"]["schema"], "scalescope.trace/1");
      }
    }
  }
  fs::remove_all(dir);
}

TEST(AnalyzeCli, SeveralFilesCombinedViewAndExitStatus) {
  const auto dir = scratch_dir("analyze_several");
  write(dir / "rank0.log",
        "h0:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.1\n"
        "h0:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
        "[rank0]:[E1 1:1:1.1 ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, Timeout(ms)=600000) ran for 600100 milliseconds before timing out.\n");
  write(dir / "rank1.log",
        "h1:2:2 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
        "[rank1]:[E1 1:1:1.1 ProcessGroupNCCL.cpp:1] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1234, OpType=BROADCAST, NumelIn=5, NumelOut=5, Timeout(ms)=600000) ran for 600200 milliseconds before timing out.\n");
  write(dir / "notes.txt", "just some notes\n");
  const auto out = dir / "report.json";
  const auto r = run_cli("analyze " + quote(dir / "rank0.log") + " " + quote(dir / "rank1.log") + " " +
                         quote(dir / "notes.txt") + " " + quote(dir / "missing.log") + " --out " + quote(out));
  EXPECT_EQ(r.status, 1) << r.output;  // two files failed, the others are still reported
  EXPECT_NE(r.output.find("== all 2 NCCL logs together"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NCCL version mismatch between processes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NCCL fell back to sockets"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("verdict: rank 0 timed out in ALLREDUCE #1234 after 10 min while rank 1 was in BROADCAST #1234: collective mismatch"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("notes.txt': not a recognised input"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("missing.log"), std::string::npos) << r.output;
  const auto j = read_json(out);
  ASSERT_EQ(j.at("files").size(), 4u);
  EXPECT_EQ(j["files"][0]["status"], "ok");
  EXPECT_EQ(j["files"][0]["kinds"], nlohmann::json::array({"nccl_log", "watchdog"}));
  EXPECT_EQ(j["files"][2]["status"], "error");
  EXPECT_EQ(j["files"][3]["status"], "error");
  EXPECT_TRUE(j["combined"].contains("nccl_log"));
  EXPECT_TRUE(j["combined"].contains("watchdog"));
  EXPECT_EQ(j["combined"]["watchdog"]["findings"][0]["severity"], "error");
  fs::remove_all(dir);
}

TEST(AnalyzeCli, ScalescopeJsonGivesTheDoctorVerdict) {
  const auto dir = scratch_dir("analyze_json");
  write(dir / "doctor.json",
        R"({"schema": "scalescope.doctor/1", "points": [{"world_size": 1}, {"world_size": 2}], "verdict": {"verdict": "watch", "reasons": ["N=2: comm ratio 28.7 % is between 15 % and 30 %"]}})");
  auto r = run_cli("analyze " + quote(dir / "doctor.json"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("verdict: watch — N=2: comm ratio 28.7 % is between 15 % and 30 %"), std::string::npos) << r.output;
  // doctor never writes a report without a measured point: such a file is damaged, not "no verdict".
  for (const char* stub : {R"({"schema": "scalescope.doctor/1"})", R"({"schema": "scalescope.doctor/1", "points": [1, 2]})",
                           R"({"schema": "scalescope.doctor/1", "points": [{}]})"}) {
    write(dir / "stub.json", stub);
    r = run_cli("analyze " + quote(dir / "stub.json"));
    EXPECT_EQ(r.status, 1) << stub << "\n" << r.output;
    EXPECT_NE(r.output.find("without measured points"), std::string::npos) << r.output;
  }
  // Nor does train write one without its config and step times (it was summarised as "world size -, step - ms").
  write(dir / "train.json", R"({"schema": "scalescope.train/1"})");
  r = run_cli("analyze " + quote(dir / "train.json"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("without its config and step_s objects"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

TEST(AnalyzeCli, NoFileIsAUsageError) {
  const auto r = run_cli("analyze");
  EXPECT_EQ(r.status, 2) << r.output;
}

TEST(AnalyzeCli, ProfilerTracesOfTwoRanksGiveTheCombinedReportAndATimeline) {
  const auto dir = scratch_dir("analyze_traces");
  auto trace = [&](int rank, int compute_us) {
    const auto path = dir / ("rank" + std::to_string(rank) + ".json");
    std::ofstream(path) << R"({"distributedInfo": {"rank": )" << rank << R"(, "world_size": 2, "backend": "nccl"},
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 2000},
  {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 10, "dur": )" << compute_us << R"(},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 20,
   "ts": )" << 10 + compute_us << R"(, "dur": 300,
   "args": {"Collective name": "allreduce", "In msg nelems": 262144, "dtype": "Float", "Group size": 2}}
 ]})";
    return path;
  };
  const auto r0 = trace(0, 500), r1 = trace(1, 900);  // rank 1 computes longer: rank 0 waits for it
  const auto timeline = dir / "merged.json";
  const auto r = run_cli("analyze " + quote(r0) + " " + quote(r1) + " --timeline " + quote(timeline));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 ranks analysed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("straggler"), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(timeline));
  const auto t = read_json(timeline);
  EXPECT_TRUE(t.contains("traceEvents")) << "Perfetto reads Chrome-trace JSON with a traceEvents array";
  // Run again over *.json, which now takes in the merged timeline: it is not read as a third rank.
  const auto timeline2 = dir / "merged2.json";
  const auto again = run_cli("analyze " + quote(r0) + " " + quote(r1) + " " + quote(timeline) + " --timeline " +
                             quote(timeline2));
  EXPECT_EQ(again.status, 1) << again.output;
  EXPECT_NE(again.output.find("2 ranks analysed"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("merged timeline of all ranks that `scalescope analyze --timeline` wrote"),
            std::string::npos)
      << again.output;
  // A timeline asked of inputs with no trace among them is an error, not silence.
  const auto none = run_cli("analyze " + quote(timeline) + " --timeline " + quote(dir / "t3.json"));
  EXPECT_EQ(none.status, 1) << none.output;
  EXPECT_NE(none.output.find("none of the inputs is a profiler trace, so no timeline was written"), std::string::npos)
      << none.output;
  EXPECT_FALSE(fs::exists(dir / "t3.json"));
  fs::remove_all(dir);
}

TEST(AnalyzeCli, UnusableBaselineOrTimelinePathFailsLoudly) {
  const auto dir = scratch_dir("analyze_baseline");
  const auto rank = dir / "rank0.json";
  write(rank, R"({"distributedInfo": {"rank": 0, "world_size": 2, "backend": "nccl"}, "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
  {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 500}]})");
  // A baseline that is JSON but not a trace, and one cut off: the rank is still analysed, the exit status is 1.
  const auto array = dir / "array.json", cut = dir / "cut.json";
  write(array, R"([{"a": 1}, {"b": [1, 2]}, {"name": "x"}])");
  write(cut, R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "du)");
  for (const auto& base : {array, cut}) {
    const auto r = run_cli("analyze --baseline " + quote(base) + " " + quote(rank));
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("scalescope: error: baseline"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("the baseline trace could not be used"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("1 rank analysed"), std::string::npos) << r.output;
  }
  // A timeline that cannot be written is refused before anything is read, naming the flag: exit 1, as --out.
  const auto r = run_cli("analyze --timeline /nonexistent-dir/t.json " + quote(rank));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("--timeline: output directory '/nonexistent-dir' does not exist"), std::string::npos)
      << r.output;
  // The same mistakes as with --out get the same exit status 2: no name, or the file stdout is redirected to.
  const auto unnamed = run_cli("analyze --timeline '' " + quote(rank));
  EXPECT_EQ(unnamed.status, 2) << unnamed.output;
  EXPECT_NE(unnamed.output.find("needs a file name"), std::string::npos) << unnamed.output;
  write(dir / "t.json", "old");
  const std::string redirected = std::string(SCALESCOPE_EXE) + " analyze " + quote(rank) + " --timeline " +
                                 quote(dir / "t.json") + " > " + quote(dir / "t.json") + " 2> " + quote(dir / "err.txt");
  const int raw = std::system(redirected.c_str());
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 2) << raw;
  std::ifstream err_in(dir / "err.txt");
  const std::string err((std::istreambuf_iterator<char>(err_in)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("--timeline: output path"), std::string::npos) << err;
  EXPECT_NE(err.find("is where standard output goes"), std::string::npos) << err;
  // A link whose target is in a missing directory is checked where it leads, before anything is read.
  fs::create_symlink("/nonexistent-dir/t.json", dir / "link.json");
  const auto linked = run_cli("analyze --timeline " + quote(dir / "link.json") + " " + quote(rank));
  EXPECT_EQ(linked.status, 1) << linked.output;
  EXPECT_NE(linked.output.find("output directory '/nonexistent-dir' does not exist"), std::string::npos)
      << linked.output;
  // An empty file says so, once, with what to do.
  const auto empty = dir / "empty.json";
  write(empty, "");
  const auto e = run_cli("analyze " + quote(empty));
  EXPECT_EQ(e.status, 1);
  EXPECT_NE(e.output.find("empty.json': the file is empty\n  what to do: nothing was written to it"), std::string::npos)
      << e.output;
  fs::remove_all(dir);
}

TEST(AnalyzeCli, TheSameFileTwiceIsRefused) {
  // It counted as two processes (an NCCL log) or two ranks (a trace), its lines twice.
  const auto dir = scratch_dir("analyze_twice");
  const auto log = dir / "r0.log";
  std::ofstream(log) << "node01:1234:1234 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n";
  for (const std::string second : {log.string(), (dir / "." / "r0.log").string()}) {
    auto r = run_cli("analyze " + log.string() + " " + second);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("are the same file"), std::string::npos) << r.output;
  }
  std::filesystem::remove_all(dir);
}

TEST(AnalyzeCli, TheCombinedViewNamesTheFileOfEachEvidenceLine) {
  // Over two logs, "line 4:" alone did not say which file held it.
  const auto dir = scratch_dir("analyze_combined_names");
  std::ofstream(dir / "r0.log") << "node01:1234:1234 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n";
  std::ofstream(dir / "r1.log") << "node01:5678:5678 [1] NCCL INFO NCCL version 2.19.3+cuda12.2\n";
  auto r = run_cli("analyze " + (dir / "r0.log").string() + " " + (dir / "r1.log").string());
  EXPECT_NE(r.output.find("r0.log line 1: node01:1234:1234 [0] NCCL INFO NCCL version 2.18.5"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("r1.log line 1: node01:5678:5678 [1] NCCL INFO NCCL version 2.19.3"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}
