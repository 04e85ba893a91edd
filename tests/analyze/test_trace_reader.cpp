// The Kineto trace reader: fields, numbers, ids, metadata, formats, gzip, streaming across window boundaries,
// and clean errors for what is not a trace.

#include <gtest/gtest.h>

#include <string>

#include "readers/trace/trace_reader.h"
#include "core/error.h"
#include "trace_test_util.h"

using namespace scalescope;
using namespace scalescope::analyze;
using namespace scalescope::analyze::testing;

namespace {

std::string error_of(const std::string& bytes) {
  try {
    read_trace_bytes(bytes, "t.json");
  } catch (const core::Error& e) {
    return e.what();
  }
  return "(no error)";
}

const TraceEvent* find(const Trace& t, std::string_view name) {
  for (const auto& e : t.events)
    if (t.name_of(e) == name) return &e;
  return nullptr;
}

}  // namespace

TEST(TraceReader, KeepsKernelFieldsWithExactNanoseconds) {
  const std::string json = trace({kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                                         4458677009853.422, 2636.669, 40,
                                         R"("correlation": 60047, "External id": 12945, )" +
                                             nccl_args("allreduce", 6637568, "Float", 2))});
  const Trace t = read_trace_bytes(json, "t.json");
  ASSERT_EQ(t.events.size(), 1u);
  const TraceEvent& e = t.events[0];
  EXPECT_EQ(e.kind, EventKind::kernel);
  EXPECT_EQ(e.ts_ns, 4458677009853422);  // 13 integer digits and 3 decimals, no double rounding
  EXPECT_EQ(e.dur_ns, 2636669);
  EXPECT_EQ(e.stream, 40);
  EXPECT_EQ(e.device, 0);
  EXPECT_EQ(e.correlation, 60047);
  EXPECT_EQ(e.external_id, 12945);
  ASSERT_GE(e.collective, 0);
  const CollectiveArgs& c = t.collectives[static_cast<std::size_t>(e.collective)];
  EXPECT_EQ(c.collective, "allreduce");
  EXPECT_EQ(c.in_nelems, 6637568);
  EXPECT_EQ(c.out_nelems, 6637568);
  EXPECT_EQ(c.group_size, 2);
  EXPECT_EQ(c.dtype, "Float");
  EXPECT_EQ(c.pg_name, "0");
  EXPECT_EQ(c.pg_desc, "default_pg");
  EXPECT_FALSE(c.seq.has_value());
  EXPECT_FALSE(t.gzip);
}

TEST(TraceReader, RoundsBeyondNanosecondsAndReadsExponents) {
  const std::string json = trace({kernel("a", 1.0005, 2e3, 7), kernel("b", 10.0004, 0.5, 7), kernel("c", 3, 1.25e-1, 7)});
  const Trace t = read_trace_bytes(json, "t.json");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(find(t, "a")->ts_ns, 1001);  // 1.0005 µs rounds half up to 1001 ns
  EXPECT_EQ(find(t, "a")->dur_ns, 2000000);
  EXPECT_EQ(find(t, "b")->ts_ns, 10000);
  EXPECT_EQ(find(t, "b")->dur_ns, 500);
  EXPECT_EQ(find(t, "c")->dur_ns, 125);
}

TEST(TraceReader, IntAndStringPidsAndTids) {
  const std::string json = trace({
      R"J({"ph": "X", "cat": "Trace", "ts": 1, "dur": 5, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)"})J",
      cpu("user_annotation", "ProfilerStep#3", 10, 100, 7),
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": "host", "tid": "main", "ts": 200, "dur": 50})",
      R"({"name": "process_labels", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}})",
      R"J({"name": "thread_name", "ph": "M", "ts": 0, "pid": 100, "tid": 7, "args": {"name": "thread 7 (python)"}})J",
      R"({"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 300})",
  });
  const Trace t = read_trace_bytes(json, "t.json");
  ASSERT_EQ(t.events.size(), 2u);  // the Trace span and the instant event are counted, not kept
  const TraceEvent* s4 = find(t, "ProfilerStep#4");
  ASSERT_NE(s4, nullptr);
  EXPECT_TRUE(t.ids[s4->pid].is_string);
  EXPECT_EQ(t.ids[s4->pid].text, "host");
  EXPECT_EQ(t.ids[s4->tid].to_string(), "main");
  const TraceEvent* s3 = find(t, "ProfilerStep#3");
  EXPECT_FALSE(t.ids[s3->tid].is_string);
  EXPECT_EQ(t.ids[s3->tid].number, 7);
  EXPECT_EQ(t.events_read, 6u);
  EXPECT_EQ(t.events_by_phase.at("i"), 1u);
  EXPECT_EQ(t.events_by_phase.at("M"), 2u);
  EXPECT_EQ(t.events_by_category.at("Trace"), 1u);
  ASSERT_EQ(t.process_labels.size(), 1u);
  EXPECT_EQ(t.process_labels.begin()->second, "GPU 0");
  ASSERT_EQ(t.thread_names.size(), 1u);
  EXPECT_EQ(t.thread_names.begin()->second, "thread 7 (python)");
}

TEST(TraceReader, FiltersByCategoryAndName) {
  const std::string json = trace({
      cpu("cpu_op", "aten::mm", 0, 10),                  // not needed: dropped
      cpu("cpu_op", "aten::item", 0, 10),                // host sync: kept
      cpu("cpu_op", "record_param_comms", 0, 10, 100, nccl_args("allreduce", 10, "Float", 2)),
      cpu("user_annotation", "## forward ##", 0, 10),    // dropped
      cpu("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 10),
      cpu("cuda_runtime", "cudaLaunchKernel", 0, 1, 100, R"("correlation": 5)"),
      cpu("cuda_runtime", "cudaStreamSynchronize", 0, 1),
      cpu("cuda_runtime", "cudaEventRecord", 0, 1),      // dropped
      cpu("python_function", "forward", 0, 1),           // dropped
      R"({"ph": "f", "id": 5, "pid": 100, "tid": 100, "ts": 0, "cat": "ac2g", "name": "ac2g", "bp": "e"})",
      x_event("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", "0", "7", 0, 3, R"("device": 0, "stream": 7, "bytes": 4096)"),
      x_event("gpu_memset", "Memset (Device)", "0", "7", 0, 3, R"("device": 0, "stream": 7)"),
  });
  const Trace t = read_trace_bytes(json, "t.json");
  std::vector<std::string> kept;
  for (const auto& e : t.events) kept.emplace_back(t.name_of(e));
  EXPECT_EQ(kept, (std::vector<std::string>{"aten::item", "record_param_comms",
                                            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                                            "cudaLaunchKernel", "cudaStreamSynchronize",
                                            "Memcpy HtoD (Pinned -> Device)", "Memset (Device)"}));
  EXPECT_EQ(find(t, "Memcpy HtoD (Pinned -> Device)")->bytes, 4096);
  EXPECT_EQ(find(t, "Memcpy HtoD (Pinned -> Device)")->kind, EventKind::memcpy);
  EXPECT_EQ(find(t, "cudaLaunchKernel")->correlation, 5);
  EXPECT_EQ(t.events_read, 12u);
}

TEST(TraceReader, OldAnnotationInputDimsBecomeCollectiveSize) {
  const std::string json = trace({cpu("user_annotation", "nccl:all_reduce", 0, 10, 100,
                                      R"("External id": 1138, "Input Dims": [[394241], [2, 3]], "Input type": ["float", "int"])")});
  const Trace t = read_trace_bytes(json, "t.json");
  ASSERT_EQ(t.events.size(), 1u);
  ASSERT_GE(t.events[0].collective, 0);
  const CollectiveArgs& c = t.collectives[0];
  EXPECT_EQ(c.collective, "all_reduce");
  EXPECT_EQ(c.in_nelems, 394241);  // the first input's numel
  EXPECT_EQ(c.dtype, "float");
  EXPECT_TRUE(c.from_input_dims);
}

TEST(TraceReader, TopLevelMetadata) {
  const std::string top =
      R"("deviceProperties": [{"id": 0, "name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42297524224, "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8, "pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 8, "ranks": [0, 1, 2, 3, 4, 5, 6, 7]}], "nccl_version": "2.17.1"},
  "INFO": ["a", "b\"c"], "username": "user",
  "baseTimeNanoseconds": 1711964646000000000, "traceName": "/tmp/x.json")";
  const Trace t = read_trace_bytes(trace({kernel("k", 1, 1, 7)}, top), "t.json");
  ASSERT_TRUE(t.distributed.has_value());
  EXPECT_EQ(t.distributed->rank, 3);
  EXPECT_EQ(t.distributed->world_size, 8);
  EXPECT_EQ(t.distributed->backend, "nccl");
  EXPECT_EQ(t.distributed->nccl_version, "2.17.1");
  ASSERT_EQ(t.distributed->pg_config.size(), 1u);
  EXPECT_EQ(t.distributed->pg_config[0].size, 8);
  EXPECT_EQ(t.distributed->pg_config[0].ranks.size(), 8u);
  ASSERT_TRUE(t.device_properties.has_value());
  ASSERT_EQ(t.device_properties->size(), 1u);
  EXPECT_EQ((*t.device_properties)[0].name, "NVIDIA A100-PG509-200");
  EXPECT_EQ((*t.device_properties)[0].num_sms, 108);
  EXPECT_EQ(t.base_time_ns, 1711964646000000000);
  EXPECT_EQ(t.trace_name, "/tmp/x.json");
  EXPECT_EQ(t.schema_version, 1);
}

TEST(TraceReader, AbsentMetadataIsAbsentAndEmptyIsEmpty) {
  const Trace absent = read_trace_bytes(trace({kernel("k", 1, 1, 7)}), "t.json");
  EXPECT_FALSE(absent.distributed.has_value());
  EXPECT_FALSE(absent.device_properties.has_value());
  EXPECT_FALSE(absent.base_time_ns.has_value());
  const Trace empty = read_trace_bytes(trace({cpu("user_annotation", "ProfilerStep#1", 0, 5)}, R"("deviceProperties": [])"), "t.json");
  ASSERT_TRUE(empty.device_properties.has_value());
  EXPECT_TRUE(empty.device_properties->empty());
}

TEST(TraceReader, SkipsAndCountsEventsWithBadFields) {
  // 100 good kernels after them: this many damaged GPU events alone would refuse the trace (the next test).
  std::vector<std::string> events = {
      R"({"ph": "X", "cat": "kernel", "name": "no_ts", "pid": 0, "tid": 7, "dur": 3})",
      R"({"ph": "X", "cat": "kernel", "name": "neg", "pid": 0, "tid": 7, "ts": 1, "dur": -3})",
      R"({"ph": "X", "cat": "kernel", "name": "str_ts", "pid": 0, "tid": 7, "ts": "abc", "dur": 3})",
      R"({"ph": "X", "cat": "kernel", "name": "huge", "pid": 0, "tid": 7, "ts": 1e300, "dur": 3})",
      R"({"ph": "X", "cat": "kernel", "name": "late", "pid": 0, "tid": 7, "ts": 5e15, "dur": 1})",  // > 2^62 ns
      R"({"ph": "X", "cat": "kernel", "name": "long", "pid": 0, "tid": 7, "ts": 1, "dur": 2e15})",  // > 2^60 ns
      R"({"ph": "X", "cat": "kernel", "name": "no_dur", "pid": 0, "tid": 7, "ts": 5})",
      R"({"ph": "B", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 5})",
      R"({"ph": "X", "cat": "kernel", "name": "ok", "pid": 0, "tid": 7, "ts": "12.5", "dur": 3, "args": 7})",
      R"(17)",
      R"({})",
  };
  for (int i = 0; i < 100; ++i) events.push_back(kernel("good", 20 + i, 1, 7));
  const Trace t = read_trace_bytes(trace(events), "t.json");
  std::vector<std::string> kept;
  for (const auto& e : t.events)
    if (t.name_of(e) != "good") kept.emplace_back(t.name_of(e));
  EXPECT_EQ(kept, (std::vector<std::string>{"no_dur", "ok"}));
  EXPECT_EQ(find(t, "ok")->ts_ns, 12500);  // a quoted number is read
  EXPECT_EQ(find(t, "no_dur")->dur_ns, 0);
  std::string all;
  for (const auto& w : t.warnings) all += w + "\n";
  EXPECT_NE(all.find("1 kept-kind events without \"ts\" skipped"), std::string::npos) << all;
  EXPECT_NE(all.find("4 kept-kind events with an unreadable or out-of-range \"ts\" or \"dur\" skipped"), std::string::npos) << all;
  EXPECT_NE(all.find("1 kept-kind events with a negative \"dur\" skipped"), std::string::npos) << all;
  EXPECT_NE(all.find("1 complete ('X') events without \"dur\""), std::string::npos) << all;
  EXPECT_NE(all.find("1 begin/end ('B'/'E') events ignored"), std::string::npos) << all;
  EXPECT_NE(all.find("1 elements of the event array that are not objects ignored"), std::string::npos) << all;
}

TEST(TraceReader, TracesWhoseGpuEventsHaveNoUsableDurationAreRefused) {
  std::vector<std::string> events;
  for (int i = 0; i < 40; ++i) events.push_back(kernel("good_" + std::to_string(i), 100 * i, 50, 7));
  // One kernel of 11 days in a 4 ms trace: skipped (longer than a day), not taken as busy GPU time; a 30-minute
  // NCCL kernel (a rank that waited for a late one) is evidence and stays.
  events.push_back(R"({"ph": "X", "cat": "kernel", "name": "eleven_days", "pid": 0, "tid": 7, "ts": 10, "dur": 1e12})");
  events.push_back(R"({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0, "tid": 8, "ts": 20, "dur": 1.8e9})");
  const Trace one = read_trace_bytes(trace(events), "one.json");
  EXPECT_EQ(find(one, "eleven_days"), nullptr);
  ASSERT_NE(find(one, "ncclDevKernel_AllReduce"), nullptr);
  EXPECT_EQ(find(one, "ncclDevKernel_AllReduce")->dur_ns, 1800000000000);
  EXPECT_EQ(one.events.size(), 41u);
  std::string all;
  for (const auto& w : one.warnings) all += w + "\n";
  EXPECT_NE(all.find("1 events with a \"dur\" longer than a day skipped"), std::string::npos) << all;
  // Beyond 5 % of the GPU events (here 3 of 44: negative, missing, too long) the trace is refused, naming why.
  events.push_back(R"({"ph": "X", "cat": "kernel", "name": "neg", "pid": 0, "tid": 7, "ts": 20, "dur": -3})");
  events.push_back(R"({"ph": "X", "cat": "gpu_memcpy", "name": "no_dur", "pid": 0, "tid": 7, "ts": 30})");
  try {
    read_trace_bytes(trace(events), "three.json");
    ADD_FAILURE() << "a trace with 3 of 44 GPU events without a duration was read";
  } catch (const scalescope::core::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'three.json': 3 of its 44 GPU events"), std::string::npos) << what;
    EXPECT_NE(what.find("would be invented"), std::string::npos) << what;
  }
}

TEST(TraceReader, ArrayFormatWithAndWithoutClosingBracket) {
  const std::string ev = kernel("k", 1, 2, 7);
  const Trace closed = read_trace_bytes("[" + ev + ",\n" + ev + "]", "a.json");
  EXPECT_TRUE(closed.array_format);
  EXPECT_EQ(closed.events.size(), 2u);
  const Trace open = read_trace_bytes("[" + ev + ",\n" + ev + ",\n", "a.json");
  EXPECT_EQ(open.events.size(), 2u);
  ASSERT_FALSE(open.warnings.empty());
  EXPECT_NE(open.warnings.back().find("no closing ']'"), std::string::npos);
  // The NCCL plugin's trailing '{}]' sentinel is an event without ph: read, not kept.
  const Trace sentinel = read_trace_bytes("[" + ev + ",\n{}]", "a.json");
  EXPECT_EQ(sentinel.events.size(), 1u);
  EXPECT_EQ(sentinel.events_read, 2u);
}

TEST(TraceReader, LeadingByteOrderMarkIsSkipped) {
  const Trace t = read_trace_bytes("\xEF\xBB\xBF" + trace({kernel("k", 1, 2, 7)}), "bom.json");
  EXPECT_EQ(t.events.size(), 1u);
}

TEST(TraceReader, GzipOneAndSeveralMembers) {
  const std::string a = trace({kernel("k1", 1, 2, 7), kernel("k2", 3, 2, 7)});
  const Trace t = read_trace_bytes(gzip(a), "t.json.gz");
  EXPECT_TRUE(t.gzip);
  EXPECT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.json_bytes, a.size());
  // Two members (as `cat a.gz b.gz` makes) inflate to one stream.
  const std::string half1 = a.substr(0, a.size() / 2), half2 = a.substr(a.size() / 2);
  const Trace two = read_trace_bytes(gzip(half1) + gzip(half2), "t.json.gz");
  EXPECT_EQ(two.events.size(), 2u);
}

TEST(TraceReader, TruncatedAndCorruptGzipAreErrors) {
  const std::string gz = gzip(trace({kernel("k1", 1, 2, 7)}));
  const std::string cut = error_of(gz.substr(0, gz.size() / 2));
  EXPECT_NE(cut.find("truncated gzip"), std::string::npos) << cut;
  std::string bad = gz;
  for (std::size_t i = 12; i < 40 && i < bad.size(); ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  const std::string corrupt = error_of(bad);
  EXPECT_TRUE(corrupt.find("not a valid gzip stream") != std::string::npos ||
              corrupt.find("not valid JSON") != std::string::npos || corrupt.find("truncated") != std::string::npos)
      << corrupt;
}

TEST(TraceReader, StreamsAcrossWindowBoundariesWithEscapes) {
  // ~12 MiB: events cross the 4 MiB window and 1 MiB read boundaries at every offset; names hold escaped
  // quotes and backslashes, and an unknown top-level key holds a long string, all of which the scanner must skip
  // without losing its place.
  std::vector<std::string> events;
  std::size_t total = 0;
  int n = 0;
  while (total < (std::size_t{12} << 20)) {
    const std::string name = fmt::format(R"(k\"{}\\\\{}\")", n, std::string(static_cast<std::size_t>(n % 97), 'x'));
    events.push_back(kernel(name, n * 10.0, 5, 7, R"("note": "a \\\"quoted\\\" \\\\ path\\")"));
    total += events.back().size();
    ++n;
  }
  const std::string top = R"("padding": ")" + std::string(5u << 20, 'p') + R"(")";
  const Trace t = read_trace_bytes(gzip(trace(events, top)), "big.json.gz");
  ASSERT_EQ(t.events.size(), static_cast<std::size_t>(n));
  for (int i : {0, 1, n / 2, n - 1}) {
    const std::string expect = fmt::format("k\"{}\\\\{}\"", i, std::string(static_cast<std::size_t>(i % 97), 'x'));
    EXPECT_EQ(t.name_of(t.events[static_cast<std::size_t>(i)]), expect);
    EXPECT_EQ(t.events[static_cast<std::size_t>(i)].ts_ns, i * 10000LL);
  }
}

TEST(TraceReader, ErrorsNameTheByteAndWhatItLooksLike) {
  // The NCCL example profiler plugin writes hex and enum values unquoted.
  const std::string plugin = "[\n{\"name\": \"Group API\", \"cat\": \"GROUP_API\", \"ph\": \"b\", \"id\": 0, \"ts\": 1.5},\n"
                             "{\"name\": \"KernelLaunch\", \"ph\": \"b\", \"args\": {\"Stream\": 0x262ca50}}\n]";
  const std::string e1 = error_of(plugin);
  const std::size_t at = plugin.find("0x262ca50");
  EXPECT_NE(e1.find(fmt::format("unquoted hex value 0x262ca50 at byte {} (line 3, column", at)), std::string::npos) << e1;
  EXPECT_NE(e1.find("not a Kineto trace (an NCCL profiler-plugin dump?)"), std::string::npos) << e1;
  const std::string e2 = error_of(R"({"traceEvents": [{"ph": "X", "args": {"datatype": ncclFloat32}}]})");
  EXPECT_NE(e2.find("unquoted word ncclFloat32 at byte 50 (line 1, column 51)"), std::string::npos) << e2;
  EXPECT_NE(e2.find("NCCL profiler-plugin"), std::string::npos) << e2;
  const std::string e3 = error_of(R"({"traceEvents": [{"ph": 'X'}]})");
  EXPECT_NE(e3.find("single-quoted string at byte 24 (line 1, column 25)"), std::string::npos) << e3;
  const std::string e4 = error_of(R"({"traceEvents": [{"ts": NaN}]})");
  EXPECT_NE(e4.find("non-JSON number NaN"), std::string::npos) << e4;
  EXPECT_EQ(e4.find("profiler-plugin"), std::string::npos) << e4;
  const std::string e5 = error_of(R"({"traceEvents": [{"ph": "X"]})");
  EXPECT_NE(e5.find("']' closes a '{'"), std::string::npos) << e5;
  const std::string e6 = error_of(R"({"traceEvents": [{"ph": "X", "ts": 1, "dur" 2}]})");
  EXPECT_NE(e6.find("event 1 of the event array is not valid JSON"), std::string::npos) << e6;
}

TEST(TraceReader, IncompleteAndForeignInputsAreErrors) {
  EXPECT_NE(error_of("").find("is empty"), std::string::npos);
  EXPECT_NE(error_of("   \n ").find("is empty"), std::string::npos);
  const std::string cut = trace({kernel("k1", 1, 2, 7), kernel("k2", 3, 2, 7)});
  const std::string e1 = error_of(cut.substr(0, cut.find("k2") + 10));
  EXPECT_NE(e1.find("the file ends inside event 2 of the event array"), std::string::npos) << e1;
  const std::string e2 = error_of(cut.substr(0, cut.rfind(']') + 1));
  EXPECT_NE(e2.find("ends inside the top-level object"), std::string::npos) << e2;
  EXPECT_NE(error_of(R"({"schemaVersion": 1})").find("holds no \"traceEvents\" array"), std::string::npos);
  EXPECT_NE(error_of(cut + "{}").find("unexpected data after the end"), std::string::npos);
  EXPECT_NE(error_of("hello").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x00\x01\x02", 3)).find("unexpected byte 0x00 at byte 0"), std::string::npos);
  const std::string deep = "{\"traceEvents\": [" + std::string(5000, '[') + "]}";
  EXPECT_NE(error_of(deep).find("nested deeper than"), std::string::npos);
}

TEST(TraceReader, ValueLargerThanTheLimitIsAnError) {
  TraceReadOptions o;
  o.max_value_bytes = 1 << 20;
  const std::string big = trace({kernel(std::string(2u << 20, 'n'), 1, 2, 7)});
  try {
    read_trace_bytes(big, "t.json", o);
    FAIL() << "no error";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("larger than the 1 MiB limit"), std::string::npos) << e.what();
  }
}

TEST(TraceReader, MissingFileIsAnError) {
  try {
    read_trace_file("/nonexistent/trace.json");
    FAIL() << "no error";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open trace '/nonexistent/trace.json'"), std::string::npos);
    EXPECT_FALSE(e.remedy().empty());
  }
  try {
    read_trace_file("/tmp");
    FAIL() << "no error";
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos);
  }
}

TEST(TraceReader, WindowGrowsForAnEventLargerThanIt) {
  // Behind gzip the window starts at 4 MiB; a 9 MiB event makes it grow (twice) and is read whole.
  const std::string name(9u << 20, 'g');
  const Trace t = read_trace_bytes(gzip(trace({kernel("a", 1, 1, 7), kernel(name, 2, 1, 7), kernel("b", 3, 1, 7)})), "big.json.gz");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.name_of(t.events[1]).size(), name.size());
  EXPECT_EQ(t.name_of(t.events[2]), "b");
}

TEST(TraceReader, KernelLaunchShapesFromGridAndBlock) {
  const Trace t = read_trace_bytes(
      trace({kernel("gemm", 0, 10, 7, R"("grid": [128, 1, 1], "block": [384, 1, 1])"),
             kernel("no_shape", 20, 10, 7),
             kernel("grid_only", 40, 10, 7, R"("grid": [2, 3, 4])"),
             kernel("four_dims", 60, 10, 7, R"("grid": [1, 2, 3, 4], "block": [32, 1, 1])"),
             kernel("negative", 80, 10, 7, R"("grid": [-1, 1, 1], "block": [32, 1, 1])"),
             kernel("text", 100, 10, 7, R"("grid": "128,1,1", "block": [32, 1, 1])"),
             x_event("gpu_memcpy", "Memcpy HtoD", "0", "7", 120, 5, R"("grid": [1, 1, 1], "block": [1, 1, 1])")}),
      "shapes.json");
  ASSERT_EQ(t.events.size(), 7u);
  EXPECT_EQ(t.names[t.events[0].launch], "grid [128,1,1] block [384,1,1]");
  for (std::size_t i = 1; i < t.events.size(); ++i)  // absent, half given, malformed, or not a kernel
    EXPECT_EQ(t.events[i].launch, 0u) << t.name_of(t.events[i]);
}
