// PyTorch ProcessGroupNCCL watchdog messages: inline fixtures for every format from 2022 on, cross-rank
// findings, then every watchdog_* file of ../shared/corpus/nccl-logs with expectations checked by hand.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "readers/job/watchdog.h"

using namespace scalescope::analyze;
namespace fs = std::filesystem;

namespace {

WatchdogAnalysis analyse(const WatchdogLog& log) {
  std::vector<WatchdogLog> one{log};
  return analyze_watchdog(one);
}

const LogFinding* find(const WatchdogAnalysis& a, const std::string& text) {
  for (const auto& f : a.findings)
    if (f.title.find(text) != std::string::npos) return &f;
  return nullptr;
}

std::string titles(const WatchdogAnalysis& a) {
  std::string s = "verdict: " + a.verdict + "\n";
  for (const auto& f : a.findings) s += "  " + f.title + "\n";
  return s;
}

}  // namespace

TEST(Watchdog, OldestFormatWithoutNumelOrPrefix) {
  auto log = parse_watchdog(
      "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, "
      "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.\n");
  ASSERT_EQ(log.timeouts.size(), 1u);
  const auto& t = log.timeouts[0];
  EXPECT_EQ(t.group_rank, 1);
  EXPECT_FALSE(t.global_rank.has_value());
  EXPECT_EQ(t.op_type, "ALLREDUCE");
  EXPECT_EQ(t.seq_num, 469508u);
  EXPECT_FALSE(t.numel_in.has_value());
  EXPECT_FALSE(t.numel_out.has_value());
  EXPECT_EQ(t.timeout_ms, 1800000u);
  EXPECT_EQ(t.elapsed_ms, 1802212u);
  EXPECT_FALSE(t.timestamp.has_value());
  EXPECT_EQ(analyse(log).verdict, "Rank 1 timed out in ALLREDUCE #469508 after 30 min (timeout 30 min)");
}

TEST(Watchdog, ImpossibleTimesAreNotedAndNotUsed) {
  // A negative timeout, and a run time of 292 million years ("noticed … late" was built on it).
  auto log = parse_watchdog(
      "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, "
      "OpType=ALLREDUCE, Timeout(ms)=-600000) ran for 9223372036854775807 milliseconds before timing out.\n");
  ASSERT_EQ(log.timeouts.size(), 1u);
  EXPECT_FALSE(log.timeouts[0].timeout_ms.has_value());
  EXPECT_FALSE(log.timeouts[0].elapsed_ms.has_value());
  std::string notes;
  for (const auto& n : log.notes) notes += n + "\n";
  EXPECT_NE(notes.find("Timeout(ms)=-600000 is no count of milliseconds; not used"), std::string::npos) << notes;
  EXPECT_NE(notes.find("is more than a year: a damaged line; not used"), std::string::npos) << notes;
}

TEST(Watchdog, NewerFormatWithGlobalRankTimestampNumelAndWorkState) {
  auto log = parse_watchdog(
      "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) "
      "ran for 600060 milliseconds before timing out.\n"
      "[rank0]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or "
      "timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.\n");
  ASSERT_EQ(log.timeouts.size(), 1u);
  const auto& t = log.timeouts[0];
  EXPECT_EQ(t.global_rank, 0);
  EXPECT_EQ(t.group_rank, 0);
  EXPECT_EQ(t.process_group, "1");
  EXPECT_EQ(t.numel_in, 466119168u);
  EXPECT_EQ(t.numel_out, 466119168u);
  EXPECT_EQ(t.last_enqueued, 1582u);
  EXPECT_EQ(t.last_completed, 1579u);
  EXPECT_EQ(t.timestamp, "E321 02:07:08.408271257");
  EXPECT_TRUE(log.work_states.empty());  // merged into the timeout
}

TEST(Watchdog, ProcessGroupNamesOfEveryVersion) {
  auto a = parse_watchdog("[PG 0 (default_pg) Rank 7] Exception (either an error or timeout) detected by watchdog at work: 8, last enqueued NCCL work: 8, last completed NCCL work: 7.\n");
  ASSERT_EQ(a.work_states.size(), 1u);
  EXPECT_EQ(a.work_states[0].process_group, "0 (default_pg)");
  EXPECT_EQ(a.work_states[0].group_rank, 7);
  auto b = parse_watchdog(
      "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: "
      "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, "
      "NumelOut=1, Timeout(ms)=1) ran for 90 milliseconds before timing out.\n");
  ASSERT_EQ(b.timeouts.size(), 1u);
  EXPECT_EQ(b.timeouts[0].process_group, "ID 0 PG GUID 0(default_pg)");
  EXPECT_EQ(b.timeouts[0].group_rank, 3);
  EXPECT_EQ(b.timeouts[0].elapsed_ms, 90u);
  auto f = analyse(b);
  EXPECT_NE(find(f, "the collective timeout is only 1 ms"), nullptr) << titles(f);
}

TEST(Watchdog, UnderscoreOpTypesAndNumelRatio) {
  auto log = parse_watchdog(
      "[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=800, NumelOut=100, Timeout(ms)=600000) ran "
      "for 600061 milliseconds before timing out.\n"
      "[rank1]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=12, OpType=_ALLGATHER_BASE, NumelIn=10, NumelOut=40, Timeout(ms)=600000) ran "
      "for 600061 milliseconds before timing out.\n");
  ASSERT_EQ(log.timeouts.size(), 2u);
  EXPECT_EQ(log.timeouts[0].op_type, "_REDUCE_SCATTER_BASE");
  auto a = analyse(log);
  EXPECT_NE(find(a, "NumelIn 800 = 8 × NumelOut 100: a reduce-scatter"), nullptr) << titles(a);
  EXPECT_NE(find(a, "NumelIn 10 = 4 × NumelOut 40: a all-gather"), nullptr) << titles(a);
}

TEST(Watchdog, TqdmBarGluedBeforeAndDuplicatesCountedOnce) {
  const std::string msg =
      "[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, "
      "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25624887 milliseconds before timing out.";
  auto log = parse_watchdog("Epoch 0:   6%|\xE2\x96\x88\xE2\x96\x88   | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6]" + msg +
                            "\n" + msg + "\n");
  ASSERT_EQ(log.timeouts.size(), 1u);
  EXPECT_EQ(log.timeouts[0].repeats, 1u);
  EXPECT_EQ(log.timeouts[0].line, 1u);
  auto a = analyse(log);
  const auto* late = find(a, "the timeout was noticed 6.6 h late");
  ASSERT_NE(late, nullptr) << titles(a);
  EXPECT_EQ(late->severity, Severity::warning);
}

TEST(Watchdog, CollectiveMismatchAtTheSameSeqNum) {
  auto log = parse_watchdog(
      "    [rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=1234, OpType=BROADCAST, NumelIn=5056, NumelOut=5056, Timeout(ms)=600000) ran for "
      "600026 milliseconds before timing out.\n"
      "    [rank3]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=2106881, NumelOut=2106881, Timeout(ms)=600000) ran "
      "for 600013 milliseconds before timing out.\n");
  auto a = analyse(log);
  const auto* f = find(a, "collective mismatch at SeqNum 1234");
  ASSERT_NE(f, nullptr) << titles(a);
  EXPECT_EQ(f->severity, Severity::error);
  EXPECT_NE(f->title.find("rank 3 in ALLREDUCE"), std::string::npos);
  EXPECT_NE(f->title.find("rank 7 in BROADCAST"), std::string::npos);
  EXPECT_EQ(a.verdict, "rank 3 timed out in ALLREDUCE #1234 after 10 min while rank 7 was in BROADCAST #1234: collective mismatch");
}

TEST(Watchdog, SameCollectiveDifferentSizesIsASizeMismatch) {
  auto log = parse_watchdog(
      "[rank0]:[E1 1:1:1.1 ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
      "[rank1]:[E1 1:1:1.1 ProcessGroupNCCL.cpp:1] [Rank 1] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=12, NumelOut=12, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n");
  auto a = analyse(log);
  const auto* f = find(a, "collective mismatch at SeqNum 5");
  ASSERT_NE(f, nullptr) << titles(a);
  EXPECT_NE(f->detail.find("different element counts"), std::string::npos);
}

TEST(Watchdog, LowestSeqNumIsBehind) {
  auto log = parse_watchdog(
      "[rank0]:[E1 1:1:1.1 ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=101, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
      "[rank0]:[E1 1:1:1.1 ProcessGroupNCCL.cpp:1] [PG 0 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 101, last enqueued NCCL work: 104, last completed NCCL work: 100.\n"
      "[rank2]:[E1 1:1:1.1 ProcessGroupNCCL.cpp:1] [Rank 2] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=99, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
      "[rank2]:[E1 1:1:1.1 ProcessGroupNCCL.cpp:1] [PG 0 Rank 2] Exception (either an error or timeout) detected by watchdog at work: 99, last enqueued NCCL work: 99, last completed NCCL work: 98.\n");
  auto a = analyse(log);
  const auto* f = find(a, "ranks stuck at different SeqNums in process group 0: rank 2 at BROADCAST #99 (lowest) while rank 0 at ALLREDUCE #101");
  ASSERT_NE(f, nullptr) << titles(a);
  EXPECT_NE(f->detail.find("rank 2: last enqueued 99, last completed 98."), std::string::npos) << f->detail;
  EXPECT_EQ(a.verdict, "rank 2 behind in process group 0: timed out in BROADCAST #99 while rank 0 reached ALLREDUCE #101");
}

TEST(Watchdog, ARankLabelAtSeveralSeqNumsNamesNoStraggler) {
  auto line = [](int rank, int seq) {
    return "[E ProcessGroupNCCL.cpp:458] [Rank " + std::to_string(rank) + "] Watchdog caught collective operation timeout: "
           "WorkNCCL(SeqNum=" + std::to_string(seq) + ", OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800100 milliseconds before timing out.\n";
  };
  auto a = analyse(parse_watchdog(line(0, 10) + line(0, 12) + line(1, 5)));
  EXPECT_NE(find(a, "the same rank label timed out at several SeqNums: Rank 0 at SeqNum 10, 12"), nullptr) << titles(a);
  EXPECT_EQ(find(a, "different SeqNums"), nullptr) << titles(a);
  EXPECT_EQ(find(a, "mismatch"), nullptr) << titles(a);
}

TEST(Watchdog, CutOffFieldsAreAbsentNotGuessed) {
  auto log = parse_watchdog(
      "[E ProcessGroupNCCL.cpp:737] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLR");
  ASSERT_EQ(log.timeouts.size(), 1u);
  EXPECT_EQ(log.timeouts[0].seq_num, 469508u);
  EXPECT_FALSE(log.timeouts[0].op_type.has_value());  // "ALLR" was cut: not an op type
  EXPECT_FALSE(log.timeouts[0].timeout_ms.has_value());
  EXPECT_FALSE(log.timeouts[0].elapsed_ms.has_value());
  EXPECT_EQ(log.notes.size(), 1u);
  auto s = parse_watchdog("[PG 1 Rank 3] Exception (either an error or timeout) detected by watchdog at work: 77");
  ASSERT_TRUE(s.work_states.empty() || !s.work_states[0].at_work.has_value());
}

TEST(Watchdog, PyTorch1TensorShapeFormat) {
  auto log = parse_watchdog(
      "[E ProcessGroupNCCL.cpp:566] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, "
      "TensorShape=[8, 1024], Timeout(ms)=1800000) ran for 1800530 milliseconds before timing out.\n");
  ASSERT_EQ(log.timeouts.size(), 1u);
  EXPECT_EQ(log.timeouts[0].tensor_shape, "[8, 1024]");
  EXPECT_EQ(log.timeouts[0].op_type, "BROADCAST");
  EXPECT_FALSE(log.timeouts[0].seq_num.has_value());
}

TEST(Watchdog, OtherErrorsWithoutATimedOutCollective) {
  auto log = parse_watchdog(
      "[rank1]:[E ProcessGroupNCCL.cpp:537] Some NCCL operations have failed or timed out. Due to the asynchronous nature\n"
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in libc10.so)\n"
      "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:525 (most recent call first):\n");
  EXPECT_EQ(log.other_errors.size(), 1u);
  auto a = analyse(log);
  EXPECT_EQ(a.verdict, "ProcessGroupNCCL errors without the collective that failed");
  EXPECT_TRUE(has_watchdog_messages("x WorkNCCL(SeqNum=1"));
  EXPECT_FALSE(has_watchdog_messages("NCCL INFO Channel 00"));
}

TEST(Watchdog, RanksInSeveralFilesAreComparedTogether) {
  auto r0 = parse_watchdog("[rank0]:[E1 1:1:1.1 ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: "
                           "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n",
                           "rank0.log");
  auto r1 = parse_watchdog("[rank1]:[E1 1:1:1.1 ProcessGroupNCCL.cpp:1] [Rank 1] Watchdog caught collective operation timeout: "
                           "WorkNCCL(SeqNum=7, OpType=ALLGATHER, NumelIn=1, NumelOut=2, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n",
                           "rank1.log");
  std::vector<WatchdogLog> both{r0, r1};
  auto a = analyze_watchdog(both);
  const auto* f = find(a, "collective mismatch at SeqNum 7");
  ASSERT_NE(f, nullptr) << titles(a);
  ASSERT_EQ(f->evidence.size(), 2u);
  EXPECT_EQ(f->evidence[0].source, "rank1.log");
  EXPECT_EQ(a.ranks.size(), 2u);
}

TEST(Watchdog, DamagedInputNeverThrows) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 97 + 3) % 256);
  for (const std::string& in : {std::string(), junk, std::string("WorkNCCL("), std::string("WorkNCCL(((((([[[[ timeout"),
                                std::string("[rank99999999999999999999]:[Rank 99999999999] WorkNCCL(SeqNum=99999999999999999999999) timeout"),
                                std::string("[PG Rank ] at work: last enqueued NCCL work: 1, x"), std::string("ran for ms timeout WorkNCCL()")}) {
    WatchdogLog log;
    EXPECT_NO_THROW(log = parse_watchdog(in));
    std::vector<WatchdogLog> one{log};
    WatchdogAnalysis a;
    EXPECT_NO_THROW(a = analyze_watchdog(one));
    EXPECT_NO_THROW((void)nlohmann::json(log).dump());
    EXPECT_NO_THROW((void)nlohmann::json(a).dump());
  }
}

// ---- the corpus ----

namespace {

const fs::path kDir = fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "nccl-logs";

struct Row {  // one timeout as the file prints it; 0 / "" = absent
  int global_rank, group_rank;
  std::string op;
  std::uint64_t seq, numel_in, numel_out, timeout_ms, elapsed_ms, enqueued, completed;
  std::string pg;
};

struct Expect {
  std::vector<Row> rows;  // in order of first appearance
  std::string verdict;
  std::vector<std::string> findings;  // substrings of the titles, one per finding, all of them
  std::size_t other_errors = 0;
};

const std::map<std::string, Expect>& expectations() {
  static const std::map<std::string, Expect> e = {
      {"watchdog_LlamaFactory-6269_REDUCE_SCATTER_BASE_numel_in_ne_out_PG_1_truncated.log",
       {{{0, 0, "_REDUCE_SCATTER_BASE", 7753, 544997376, 68124672, 600000, 600061, 7755, 7752, "1"},
         {4, 4, "_REDUCE_SCATTER_BASE", 7753, 544997376, 68124672, 600000, 600099, 7755, 7752, "1"},
         {3, 3, "_REDUCE_SCATTER_BASE", 7753, 544997376, 68124672, 600000, 600089, 0, 0, ""}},
        "3 rank(s) in process group 1 timed out in the same collective, _REDUCE_SCATTER_BASE #7753 after 10 min (timeout 10 min)",
        {"every reporting rank in process group 1 (rank 0, rank 3, rank 4)", "compared with group 1",
         "NumelIn 544997376 = 8 × NumelOut 68124672: a reduce-scatter"},
        1}},
      {"watchdog_LlamaFactory-7396_viewer_line_numbers_prefix_numel_466M_out_of_order_timestamps_truncated.log",
       {{{0, 0, "ALLREDUCE", 1580, 466119168, 466119168, 600000, 600060, 1582, 1579, "1"},
         {4, 4, "ALLREDUCE", 1580, 466119168, 466119168, 600000, 600067, 0, 0, ""},
         {2, 2, "ALLREDUCE", 1580, 466119168, 466119168, 600000, 0, 0, 0, ""}},
        "4 rank(s) in process group 1 timed out in the same collective, ALLREDUCE #1580 after 10 min (timeout 10 min)",
        {"every reporting rank in process group 1 (rank 0, rank 2, rank 3, rank 4)", "compared with group 1"},
        0}},
      {"watchdog_OFA-271_2022_old_format_no_numel_no_rank_prefix_1800000ms_8xV100_truncated.log",
       {{{-1, 1, "ALLREDUCE", 469508, 0, 0, 1800000, 1802212, 0, 0, ""},
         {-1, 3, "ALLREDUCE", 469508, 0, 0, 1800000, 1802211, 0, 0, ""},
         {-1, 2, "ALLREDUCE", 469508, 0, 0, 1800000, 1802212, 0, 0, ""},
         {-1, 6, "ALLREDUCE", 469508, 0, 0, 1800000, 1802210, 0, 0, ""},
         {-1, 7, "ALLREDUCE", 469508, 0, 0, 1800000, 1802220, 0, 0, ""},
         {-1, 5, "", 469508, 0, 0, 0, 0, 0, 0, ""}},
        "6 rank(s) timed out in the same collective, ALLREDUCE #469508 after 30 min (timeout 30 min)",
        {"every reporting rank (Rank 1, Rank 2, Rank 3, Rank 5, Rank 6, Rank 7) timed out in ALLREDUCE #469508"},
        0}},
      {"watchdog_catalyst-rl-15_rank_prefixed_E_lines_no_timestamp_NCCL_watchdog_terminated_BROADCAST_stack_truncated.log",
       {{{1, 1, "BROADCAST", 880, 131137536, 131137536, 1800000, 1800695, 0, 0, ""}},
        "rank 1 timed out in BROADCAST #880 after 30 min (timeout 30 min)",
        {},
        2}},
      {"watchdog_instructlab-pr520_timeout_1ms_ran_for_90ms_CI_runner_truncated.log",
       {{{-1, 3, "ALLREDUCE", 1, 1, 1, 1, 90, 0, 0, "ID 0 PG GUID 0(default_pg)"}},
        "Rank 3 timed out in ALLREDUCE #1 after 90 ms (timeout 1 ms)",
        {"the collective timeout is only 1 ms"},
        0}},
      {"watchdog_nccl-1409_indented_paste_BROADCAST_vs_ALLREDUCE_same_seqnum_mismatch_truncated.log",
       {{{7, 7, "BROADCAST", 80078, 5056, 5056, 600000, 600026, 80078, 80077, "0 (default_pg)"},
         {3, 3, "ALLREDUCE", 80078, 2106881, 2106881, 600000, 600013, 0, 0, ""}},
        "rank 3 timed out in ALLREDUCE #80078 after 10 min in process group 0 (default_pg) while rank 7 was in BROADCAST #80078: collective mismatch",
        {"collective mismatch at SeqNum 80078 in process group 0 (default_pg): rank 3 in ALLREDUCE (NumelIn 2106881); rank 7 in BROADCAST (NumelIn 5056)",
         "compared with group 0 (default_pg)"},
        0}},
      {"watchdog_pytorch-118369_tqdm_progress_bar_glued_to_first_error_line_ran_for_25624887ms_truncated.log",
       {{{-1, 0, "ALLREDUCE", 96120, 0, 0, 1800000, 25624887, 0, 0, ""},
         {-1, 0, "ALLREDUCE", 96117, 0, 0, 1800000, 25625613, 0, 0, ""},
         {-1, 0, "ALLREDUCE", 96125, 0, 0, 1800000, 25625593, 0, 0, ""},
         {-1, 7, "ALLREDUCE", 64088, 0, 0, 1800000, 25625251, 0, 0, ""}},
        "4 timeout message(s) from several process groups that the messages do not tell apart; no cross-rank comparison possible",
        {"the timeout was noticed 6.6 h late", "Rank 0 at SeqNum 96117, 96120, 96125"},
        1}},
  };
  return e;
}

std::vector<fs::path> corpus_watchdogs() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kDir))
    if (entry.is_regular_file() && entry.path().filename().string().rfind("watchdog_", 0) == 0) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

template <class T>
std::optional<T> opt(T v, T absent) { return v == absent ? std::nullopt : std::optional<T>(v); }

}  // namespace

TEST(WatchdogCorpus, EveryWatchdogFileHasAnExpectation) {
  if (!fs::is_directory(kDir)) GTEST_SKIP() << "shared corpus not found at " << kDir << " (checkout without ../shared)";
  for (const auto& f : corpus_watchdogs())
    EXPECT_TRUE(expectations().count(f.filename().string()))
        << "new corpus file without an expectation in test_watchdog.cpp: " << f.filename();
}

TEST(WatchdogCorpus, EachFileReadsAsCheckedByHand) {
  if (!fs::is_directory(kDir)) GTEST_SKIP() << "shared corpus not found at " << kDir << " (checkout without ../shared)";
  for (const auto& path : corpus_watchdogs()) {
    auto it = expectations().find(path.filename().string());
    if (it == expectations().end()) continue;
    SCOPED_TRACE(path.filename().string());
    const auto& e = it->second;
    const auto log = read_watchdog_file(path.string());
    ASSERT_EQ(log.timeouts.size(), e.rows.size());
    for (std::size_t i = 0; i < e.rows.size(); ++i) {
      SCOPED_TRACE(i);
      const auto& r = e.rows[i];
      const auto& t = log.timeouts[i];
      EXPECT_EQ(t.global_rank, opt(r.global_rank, -1));
      EXPECT_EQ(t.group_rank, opt(r.group_rank, -1));
      EXPECT_EQ(t.op_type, opt<std::string>(r.op, ""));
      EXPECT_EQ(t.seq_num, opt<std::uint64_t>(r.seq, 0));
      EXPECT_EQ(t.numel_in, opt<std::uint64_t>(r.numel_in, 0));
      EXPECT_EQ(t.numel_out, opt<std::uint64_t>(r.numel_out, 0));
      EXPECT_EQ(t.timeout_ms, opt<std::uint64_t>(r.timeout_ms, 0));
      EXPECT_EQ(t.elapsed_ms, opt<std::uint64_t>(r.elapsed_ms, 0));
      EXPECT_EQ(t.last_enqueued, opt<std::uint64_t>(r.enqueued, 0));
      EXPECT_EQ(t.last_completed, opt<std::uint64_t>(r.completed, 0));
      EXPECT_EQ(t.process_group, opt<std::string>(r.pg, ""));
    }
    EXPECT_EQ(log.other_errors.size(), e.other_errors);
    const auto a = analyse(log);
    EXPECT_EQ(a.verdict, e.verdict);
    EXPECT_EQ(a.findings.size(), e.findings.size()) << titles(a);
    for (const auto& want : e.findings) EXPECT_NE(find(a, want), nullptr) << "missing finding '" << want << "' in\n" << titles(a);
    EXPECT_NO_THROW((void)nlohmann::json(log).dump());
  }
}

TEST(WatchdogCorpus, DuplicatedLineOfPytorch118369IsCountedOnce) {
  if (!fs::is_directory(kDir)) GTEST_SKIP() << "shared corpus not found at " << kDir << " (checkout without ../shared)";
  for (const auto& p : corpus_watchdogs())
    if (p.filename().string().find("pytorch-118369") != std::string::npos) {
      auto log = read_watchdog_file(p.string());
      ASSERT_EQ(log.timeouts.size(), 4u);
      EXPECT_EQ(log.timeouts[2].repeats, 1u);  // SeqNum 96125 printed twice
      EXPECT_EQ(log.timeouts[0].line, 2u);     // glued to the tqdm bar on line 2
    }
}
