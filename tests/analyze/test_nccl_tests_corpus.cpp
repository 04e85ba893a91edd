// Every published nccl-tests output in ../shared/corpus/nccl-tests (see ../shared/corpus/SOURCES.md), with
// expectations checked by hand against each file. Skipped with a message where the corpus is absent.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "readers/nccl/nccl_tests_parser.h"
#include "core/error.h"

using namespace scalescope;
using comm::Collective;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(SCALESCOPE_SHARED_CORPUS_DIR) / "nccl-tests";

struct BusbwAt {
  std::size_t row;
  double out_of_place;  // GB/s as printed
};

struct Expect {
  std::optional<Collective> collective;  // nullopt: the file has no table (core::Error expected)
  std::optional<int> ranks;
  std::size_t rows = 0;
  std::uint64_t first_size = 0, last_size = 0;
  std::vector<BusbwAt> busbw;
  std::optional<double> avg;              // "# Avg bus bandwidth" footer
  std::size_t nonzero_wrong = 0;          // results (row × direction) with #wrong/error > 0
  std::size_t absent_wrong = 0;           // results whose #wrong is N/A or cut off
  std::vector<std::string> warnings;      // each must appear in one warning; their count must match
};

std::string list(const std::vector<std::string>& ws) {
  std::string out;
  for (const auto& w : ws) out += "  " + w + "\n";
  return out;
}

const std::map<std::string, Expect>& expectations() {
  static const std::map<std::string, Expect> e = {
      {"a3mega_2x8xH100_allreduce_markdown_mangled_hash_prefixes.md",
       {Collective::all_reduce, 16, 31, 8, 8589934592, {{0, 0.00}, {30, 338.82}, {22, 59.36}}, 70.742, 0, 0, {}}},
      {"autodl_1x2080ti_reduce_perf_single_gpu_misaligned.txt",
       {Collective::reduce, 1, 28, 8, 1073741824, {{27, 267.37}, {17, 163.33}}, 202818, 0, 0, {}}},
      {"autodl_2x2080ti_all_gather_perf.txt",
       {Collective::all_gather, 2, 28, 0, 1073741824, {{27, 3.79}, {2, 0.00}}, 1.6651, 0, 0, {}}},
      {"autodl_2x2080ti_all_reduce_perf.txt",
       {Collective::all_reduce, 2, 28, 8, 1073741824, {{27, 4.00}, {12, 1.33}}, 2.05774, 0, 0, {}}},
      {"autodl_2x2080ti_alltoall_perf.txt",
       {Collective::all_to_all, 2, 28, 0, 1073741824, {{27, 4.61}}, 2.06935, 0, 28, {}}},
      {"autodl_2x2080ti_broadcast_perf.txt",
       {Collective::broadcast, 2, 28, 8, 1073741824, {{17, 9.22}, {27, 11.09}}, 5.07658, 0, 0, {}}},
      {"autodl_2x2080ti_reduce_perf.txt",
       {Collective::reduce, 2, 28, 8, 1073741824, {{27, 11.14}}, 5.23248, 0, 0, {}}},
      {"awsome-dt_aws_batch_openmpi_tag_output_prefix_trailing_space_padding_allreduce.txt",
       {Collective::all_reduce, 8, 32, 8, 17179869184, {{31, 483.05}, {0, 0.00}}, 156.742, 0, 0,
        {"ranks: no device list; 8 derived from the rows (busbw/algbw"}}},
      {"coreweave_gb200_nvl72_1440gpu_20racks_allreduce_tail.txt",
       {Collective::all_reduce, 1440, 6, 536870912, 17179869184, {{5, 405.74}}, 297.808, 0, 0,
        {"device list shows 1 of ranks 0–1439"}}},
      // busbw/algbw = 1.98435 in every row is 2(n−1)/n for n = 128, not for the 144 of its device list.
      {"coreweave_gb200_nvl72_144gpu_2racks_allreduce_tail.txt",
       {Collective::all_reduce, 144, 6, 536870912, 17179869184, {{5, 810.41}}, 688.487, 0, 0,
        {"device list shows 1 of ranks 0–143", "ranks: 144 ranks, but the rows' busbw/algbw and count fit 128 ranks"}}},
      {"coreweave_gb200_nvl72_72gpu_1rack_allreduce_tail.txt",
       {Collective::all_reduce, 72, 5, 536870912, 8589934592, {{4, 834.57}}, 745.53, 0, 0,
        {"device list shows 1 of ranks 0–71"}}},
      // No device list (elided); busbw/algbw = 1.97916 is 2(n−1)/n for n = 96 and no other n.
      {"coreweave_h100_64gpu_sharp_mpijob_kubectl_log_with_elisions.txt",
       {Collective::all_reduce, 96, 5, 536870912, 8589934592, {{4, 386.56}}, 373.187, 0, 0,
        {"ranks: no device list; 96 derived from the rows"}}},
      {"dgx-spark-playbooks-pr103_nccl-tests-2.20.0_unalign_field_2xGB10_2node_truncated.txt",
       {Collective::all_reduce, 2, 4, 8192, 65536, {{0, 0.23}, {3, 0.96}}, std::nullopt, 0, 0,
        {"line 16: the text ends inside a row before its type: '131072' skipped"}}},
      {"hpc-ai-envs-pr30_rccl-tests_8xMI300X_version_line_inside_header_truncated.txt",
       {Collective::all_reduce, 8, 1, 8388608, 8388608, {{0, 161.14}}, std::nullopt, 0, 0,
        {"line 17: the text ends without a newline after this row; its last value '0' is kept"}}},
      {"nccl-2169_nccl-tests-2.17.8_version_header_alltoall_4xH100_wide_wrong_col_truncated.txt",
       {Collective::all_to_all, 4, 1, 524288000, 524288000, {{0, 334.90}}, std::nullopt, 0, 1,
        {"line 16: the text ends inside this row; its last value 'N' (in-place #wrong)",
         "line 16: row for size 524288000 is cut off: no in-place #wrong"}}},
      {"nccl-issue120_NCCL1.x_single_process_test_format_bytes_N_res_columns_truncated.txt",
       {Collective::all_reduce, 1, 11, 10000000, 10000000, {{0, 0.00}}, std::nullopt, 0, 1,
        {"line 13: the text ends inside this row; its last value '0.004' (in-place time)",
         "line 13: row for size 10000000 is cut off: no in-place time, in-place algbw, in-place busbw, in-place res",
         "cannot tell the collective: the text names no nccl-tests program and the columns fit all_reduce, reduce_scatter",
         "ranks: no device list; 1 derived from the rows", "1 size(s) appear more than once"}}},
      {"nccl-tests-104a_sendrecv_GTX1080_old_format_no_redop_root_error_exponent_3e+02.txt",
       {Collective::all_reduce, 2, 1, 37748744, 37748744, {{0, 3.22}}, std::nullopt, 1, 0,
        {"cannot tell the collective: the text names no nccl-tests program and the columns fit all_reduce, broadcast, "
         "reduce, send_recv; read as all_reduce",
         "ranks: no device list; 2 derived from the rows"}}},
      {"nccl-tests-104b_sendrecv_2xGTX1080_old_format_step_bytes_truncated.txt",
       {Collective::all_reduce, 2, 1, 37748736, 37748736, {{0, 5.82}}, std::nullopt, 0, 1,
        {"line 10: the text ends inside this row; its last value '6496.1' (in-place time)",
         "line 10: row for size 37748736 is cut off: no in-place time",
         "cannot tell the collective: the text names no nccl-tests program and the columns fit all_reduce, broadcast, "
         "reduce, send_recv"}}},
      {"nccl-tests-128_reduce_scatter_2node_4gpu_zero_byte_rows_header_only_block_truncated.txt",
       {Collective::reduce_scatter, 8, 8, 0, 512, {{5, 0.00}, {6, 0.01}}, std::nullopt, 0, 2,
        {"line 11: the text ends inside this row; its last value '23.99' (out-of-place time)",
         "line 11: row for size 512 is cut off: no out-of-place time",
         "ranks: no device list; 8 derived from the rows (size = count × element size × n"}}},
      {"nccl-tests-131_GTX1050Ti+GTX950_PHB_P2P_disabled_nccl2.16.5_interleaved_INFO_WARN_X11_noise_truncated_before_table.txt",
       {}},
      {"nccl-tests-252_tail_fragment_2node_ring_header_cut_avg_busbw.txt",
       {Collective::all_reduce, 8, 5, 536870912, 8589934592, {{0, 93.46}, {4, 95.10}}, 95.3009, 0, 0,
        {"ranks: no device list; 8 derived from the rows"}}},
      {"nccl-tests-280_3xRTX4090_docker_hash_prefix_missing_leading_whitespace_stripped_rows_truncated.txt",
       {Collective::all_reduce, 3, 4, 8, 64, {{0, 0.00}}, std::nullopt, 0, 2,
        {"line 12: the text ends inside this row; its last value '-1' (root)",
         "line 12: row for size 64 is cut off: no root, out-of-place time",
         "cannot tell the collective: the text names no nccl-tests program and the columns fit all_reduce, send_recv"}}},
      {"nccl-tests-287_1xRTX5090_alltoall_sudo_prompt_inplace_43046GBps_avg_bw_0.txt",
       {Collective::all_to_all, 1, 1, 33554432, 33554432, {{0, 0.00}}, 0.0, 0, 1, {}}},
      {"nccl-tests-291_1xRTX5090_alltoall_NCCL_DEBUG_INFO_interleaved_collapsed_spaces_nccl2.25.1_truncated.txt", {}},
      {"nccl-tests-78_256gpu_16per_node_allreduce_nccl2.8.4_check_off_error_NA_truncated.txt",
       {Collective::all_reduce, 256, 7, 33554432, 2147483648, {{0, 45.65}, {5, 71.55}}, std::nullopt, 0, 14,
        {"line 14: the text ends inside this row; its last value '78.7' (out-of-place busbw)",
         "line 14: row for size 2147483648 is cut off: no out-of-place busbw",
         "line 1: ranks: no device list; 256 taken from this command line (256 processes × 1 GPU(s) × 1 thread(s))"}}},
      {"nccl-tests-82_broadcast_2node_V100-PCIe_socket_nccl2.9.6_root_col_no_redop_validation0_WARN_interleaved_truncated.txt",
       {Collective::broadcast, 2, 1, 8, 8, {{0, 0.00}}, std::nullopt, 0, 2, {}}},
  };
  return e;
}

}  // namespace

TEST(NcclTestsCorpus, EveryFileMeetsItsExpectations) {
  if (!fs::is_directory(kDir)) GTEST_SKIP() << "no shared corpus at " << kDir << " (a clone without ../shared)";
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    ++files;
    auto it = expectations().find(name);
    ASSERT_NE(it, expectations().end()) << "no expectation written for " << name;
    const Expect& e = it->second;
    if (!e.collective) {
      try {
        analyze::read_nccl_tests_file(entry.path().string());
        ADD_FAILURE() << "expected core::Error: the file stops before its results table";
      } catch (const core::Error& err) {
        EXPECT_NE(std::string(err.what()).find("is an nccl-tests output without any result row"), std::string::npos) << err.what();
      }
      continue;
    }
    const auto s = analyze::read_nccl_tests_file(entry.path().string());
    // Read table by table, a one-table file gives the same one sweep: nothing in it is taken for a second test.
    const auto tables = analyze::read_nccl_tests_tables(entry.path().string());
    ASSERT_EQ(tables.size(), 1u);
    EXPECT_EQ(tables[0].rows.size(), s.rows.size());
    EXPECT_EQ(tables[0].warnings, s.warnings);
    EXPECT_EQ(s.collective, *e.collective);
    EXPECT_EQ(s.ranks, e.ranks);
    ASSERT_EQ(s.rows.size(), e.rows);
    EXPECT_EQ(s.rows.front().size_bytes, e.first_size);
    EXPECT_EQ(s.rows.back().size_bytes, e.last_size);
    for (const auto& b : e.busbw) {
      ASSERT_LT(b.row, s.rows.size());
      ASSERT_TRUE(s.rows[b.row].out_of_place.busbw_gbps) << "row " << b.row;
      EXPECT_DOUBLE_EQ(*s.rows[b.row].out_of_place.busbw_gbps, b.out_of_place) << "row " << b.row;
    }
    EXPECT_EQ(s.reported_avg_busbw_gbps, e.avg);
    std::size_t nonzero = 0, absent = 0;
    for (const auto& r : s.rows)
      for (const auto* t : {&r.out_of_place, &r.in_place}) {
        if (!t->wrong) ++absent;
        else if (*t->wrong > 0) ++nonzero;
      }
    EXPECT_EQ(nonzero, e.nonzero_wrong);
    EXPECT_EQ(absent, e.absent_wrong);
    EXPECT_EQ(s.warnings.size(), e.warnings.size()) << list(s.warnings);
    for (const auto& w : e.warnings)
      EXPECT_TRUE(std::any_of(s.warnings.begin(), s.warnings.end(), [&](const std::string& x) { return x.find(w) != std::string::npos; }))
          << "missing warning: " << w << "\ngot:\n" << list(s.warnings);
  }
  EXPECT_EQ(files, expectations().size()) << "a file listed here is missing from the corpus";
}

TEST(NcclTestsCorpus, DetailsOfSelectedFiles) {
  if (!fs::is_directory(kDir)) GTEST_SKIP() << "no shared corpus at " << kDir;
  auto read = [](const std::string& name, analyze::NcclTestsParseOptions o = {}) {
    return analyze::read_nccl_tests_file((kDir / name).string(), o);
  };
  // NCCL 1.x: milliseconds converted to µs; char/int/half as int8/int32/half.
  auto v1 = read("nccl-issue120_NCCL1.x_single_process_test_format_bytes_N_res_columns_truncated.txt");
  EXPECT_DOUBLE_EQ(*v1.rows[0].out_of_place.time_us, 64.0);
  EXPECT_EQ(v1.rows[4].type, comm::DataType::i32);
  EXPECT_EQ(v1.rows[4].count, 2500000u);
  EXPECT_EQ(v1.rows[9].type, comm::DataType::f16);
  EXPECT_EQ(v1.rows[1].redop, comm::RedOp::prod);
  EXPECT_FALSE(v1.rows[10].in_place.time_us);
  EXPECT_EQ(v1.source.rfind("NCCL 1.x test", 0), 0u);
  // The sendrecv fragment read as send/recv when the caller says so: no guess left, rank count unknown.
  analyze::NcclTestsParseOptions send_recv;
  send_recv.hint = Collective::send_recv;
  auto sr = read("nccl-tests-104a_sendrecv_GTX1080_old_format_no_redop_root_error_exponent_3e+02.txt", send_recv);
  EXPECT_EQ(sr.collective, Collective::send_recv);
  EXPECT_FALSE(sr.ranks);
  EXPECT_EQ(sr.rows[0].type_name, "uint8");
  EXPECT_DOUBLE_EQ(*sr.rows[0].in_place.wrong, 300);
  ASSERT_EQ(sr.warnings.size(), 1u);
  EXPECT_NE(sr.warnings[0].find("ranks: unknown"), std::string::npos);
  // Versions.
  auto v2178 = read("nccl-2169_nccl-tests-2.17.8_version_header_alltoall_4xH100_wide_wrong_col_truncated.txt");
  EXPECT_EQ(v2178.nccl_version, "2.30.4");
  EXPECT_EQ(v2178.rows[0].count, 32768000u);
  EXPECT_DOUBLE_EQ(*v2178.rows[0].out_of_place.time_us, 1174.14);
  EXPECT_EQ(v2178.source.rfind("nccl-tests 2.17.8 (", 0), 0u);
  auto spark = read("dgx-spark-playbooks-pr103_nccl-tests-2.20.0_unalign_field_2xGB10_2node_truncated.txt");
  EXPECT_EQ(spark.nccl_version, "2.31.2");
  EXPECT_EQ(read("nccl-tests-78_256gpu_16per_node_allreduce_nccl2.8.4_check_off_error_NA_truncated.txt").nccl_version, "2.8.4");
  EXPECT_EQ(read("nccl-tests-82_broadcast_2node_V100-PCIe_socket_nccl2.9.6_root_col_no_redop_validation0_WARN_interleaved_truncated.txt").nccl_version,
            "2.9.6");
  auto bc = read("autodl_2x2080ti_broadcast_perf.txt");
  EXPECT_EQ(bc.rows[0].root, 0);
  EXPECT_FALSE(bc.rows[0].redop);
  EXPECT_DOUBLE_EQ(*bc.rows[17].in_place.busbw_gbps, 3.64);
  auto one = read("nccl-tests-287_1xRTX5090_alltoall_sudo_prompt_inplace_43046GBps_avg_bw_0.txt");
  EXPECT_DOUBLE_EQ(*one.rows[0].in_place.algbw_gbps, 43046.10);
  auto rccl = read("hpc-ai-envs-pr30_rccl-tests_8xMI300X_version_line_inside_header_truncated.txt");
  EXPECT_EQ(rccl.source.rfind("rccl-tests develop:83d38d9 (", 0), 0u);
  EXPECT_EQ(rccl.devices.size(), 8u);
  EXPECT_EQ(rccl.devices[0], "Rank 0 Group 0 Pid 37300 on host-a device 0 [0000:05:00] AMD Instinct MI300X");
}
