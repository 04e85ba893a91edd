// nccl-tests' names, element counts and bus-bandwidth factors (doc/PERFORMANCE.md, src/<collective>.cu).

#include <gtest/gtest.h>

#include "comm/collectives.h"
#include "core/error.h"

using namespace scalescope::comm;

TEST(Collectives, NamesRoundTrip) {
  for (Collective c : all_collectives()) {
    EXPECT_EQ(parse_collective(to_string(c)), c);
    EXPECT_EQ(parse_collective(perf_program_name(c)), c);
  }
  EXPECT_EQ(all_collectives().size(), 7u);
  EXPECT_EQ(perf_program_name(Collective::all_to_all), "alltoall_perf");
  EXPECT_EQ(perf_program_name(Collective::send_recv), "sendrecv_perf");
  EXPECT_EQ(parse_collective("allreduce"), Collective::all_reduce);
  EXPECT_EQ(parse_collective("send/recv"), Collective::send_recv);  // as the README writes it
  EXPECT_EQ(parse_collective("All-Gather"), Collective::all_gather);
  EXPECT_EQ(parse_collective("alltoall"), Collective::all_to_all);
  EXPECT_EQ(parse_collective("sendrecv"), Collective::send_recv);
  EXPECT_EQ(parse_collective("reduce_scatter_perf"), Collective::reduce_scatter);
  EXPECT_FALSE(parse_collective("gather"));
  EXPECT_FALSE(parse_collective(""));
  EXPECT_FALSE(parse_collective("perf"));
}

TEST(Collectives, TypesAndOps) {
  EXPECT_EQ(parse_data_type("float"), DataType::f32);
  EXPECT_EQ(parse_data_type("fp16"), DataType::f16);
  EXPECT_EQ(parse_data_type("bfloat16"), DataType::bf16);
  EXPECT_EQ(parse_data_type("char"), DataType::i8);  // NCCL 1.x tests
  EXPECT_EQ(parse_data_type("int"), DataType::i32);
  EXPECT_FALSE(parse_data_type("uint8"));  // not modelled: the parser keeps it as text
  EXPECT_EQ(element_size(DataType::f64), 8u);
  EXPECT_EQ(element_size(DataType::bf16), 2u);
  EXPECT_EQ(element_size(DataType::i8), 1u);
  for (DataType t : {DataType::f32, DataType::f16, DataType::bf16, DataType::f64, DataType::i32, DataType::i8})
    EXPECT_EQ(parse_data_type(to_string(t)), t);
  for (RedOp op : {RedOp::sum, RedOp::prod, RedOp::max, RedOp::min, RedOp::avg}) EXPECT_EQ(parse_red_op(to_string(op)), op);
  EXPECT_FALSE(parse_red_op("none"));
  EXPECT_TRUE(has_red_op(Collective::reduce_scatter));
  EXPECT_FALSE(has_red_op(Collective::all_gather));
  EXPECT_TRUE(has_root(Collective::broadcast));
  EXPECT_FALSE(has_root(Collective::all_reduce));
}

TEST(Collectives, BusFactorsFollowPerformanceMd) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::reduce_scatter, 16), 15.0 / 16.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_to_all, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::broadcast, 64), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::reduce, 64), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::send_recv, 2), 1.0);
  // Published rows: a3mega 16 ranks all-reduce 338.82 / 180.71, within print rounding of 2·15/16.
  EXPECT_NEAR(180.71 * bus_bandwidth_factor(Collective::all_reduce, 16), 338.82, 0.015);
  EXPECT_THROW(bus_bandwidth_factor(Collective::all_reduce, 0), scalescope::core::Error);
}

TEST(Collectives, ElementCountsAsNcclTestsPrintsThem) {
  // Rows of published outputs: (collective, size column, ranks) -> count column.
  EXPECT_EQ(element_count(Collective::all_reduce, 8, DataType::f32, 2), 2u);
  EXPECT_EQ(element_count(Collective::all_gather, 32, DataType::f32, 2), 4u);           // autodl all_gather
  EXPECT_EQ(element_count(Collective::all_to_all, 524288000, DataType::f32, 4), 32768000u);  // nccl #2169
  EXPECT_EQ(element_count(Collective::reduce_scatter, 128, DataType::f32, 8), 4u);      // nccl-tests #128
  EXPECT_EQ(element_count(Collective::broadcast, 1024, DataType::f32, 2), 256u);
  // Requested sizes below 16 bytes per rank round down to nothing (the 0-byte rows of all_gather/alltoall).
  EXPECT_EQ(element_count(Collective::all_gather, 8, DataType::f32, 2), 0u);
  EXPECT_EQ(element_count(Collective::all_gather, 16, DataType::f32, 2), 0u);
  EXPECT_EQ(element_count(Collective::all_to_all, 100, DataType::f32, 2), 12u);  // 25 / 2 = 12, a multiple of 4
  EXPECT_EQ(element_count(Collective::all_gather, 48, DataType::f64, 2), 2u);    // 6 / 2 = 3 -> multiple of 2
  EXPECT_EQ(size_column_bytes(Collective::all_gather, 8, DataType::f32, 2), 0u);
  EXPECT_EQ(size_column_bytes(Collective::all_gather, 32, DataType::f32, 2), 32u);
  EXPECT_EQ(size_column_bytes(Collective::all_to_all, 100, DataType::f32, 2), 96u);
  EXPECT_EQ(size_column_bytes(Collective::all_reduce, 37748744, DataType::i8, 2), 37748744u);
  EXPECT_THROW(element_count(Collective::all_reduce, 8, DataType::f32, 0), scalescope::core::Error);
}
