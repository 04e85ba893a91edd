#pragma once
// Reads PyTorch profiler (Kineto) Chrome-trace JSON files, plain or gzip-compressed, of any size, keeping only
// the events and fields that the trace analysis (analysis/trace_analysis.h) needs.
//
// Sources: the Trace Event Format (Google, "Trace Event Format" document: complete events ph "X", metadata
// events ph "M", ts and dur in microseconds, the JSON Object Format {"traceEvents": [...]} and the JSON Array
// Format [...] whose closing ']' is optional); Kineto's ChromeTraceLogger output (pytorch/kineto: categories
// kernel, gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver, cpu_op, user_annotation, the args "External id",
// "correlation", "stream", "device", a kernel's "grid" and "block", and the top-level distributedInfo, deviceProperties, baseTimeNanoseconds);
// PyTorch's record_param_comms / ParamCommsUtils args on NCCL kernels ("Collective name", "In msg nelems", …).
//
// How it streams: simdjson 3.0.1's On-Demand API needs the whole document in one padded buffer, and its
// iterate_many() only splits whitespace-separated documents (not the comma-separated elements of an array), so
// a multi-GB trace cannot be handed to it at once. The reader therefore runs its own byte scanner over a
// sliding window (4 MiB, grown only for a single larger element): it walks the top-level object, streams
// through the "traceEvents" array, cuts out one event at a time and parses that event with simdjson On-Demand
// in place (the window keeps SIMDJSON_PADDING bytes after its end). Memory grows with the events kept, not with
// the file. gzip input (detected by its magic bytes, not the file name) is inflated by zlib in 1 MiB chunks.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::analyze {

/// What kind of activity an event records, from its "cat" (case-insensitive; Kineto's current names and the
/// older ones in parentheses).
enum class EventKind : std::uint8_t {
  kernel,           ///< "kernel" ("Kernel"): a GPU kernel
  memcpy,           ///< "gpu_memcpy" ("Memcpy"): a GPU copy
  memset,           ///< "gpu_memset" ("Memset")
  cuda_runtime,     ///< "cuda_runtime" ("Runtime"): a CUDA runtime API call on a CPU thread
  cuda_driver,      ///< "cuda_driver": a CUDA driver API call on a CPU thread
  cpu_op,           ///< "cpu_op" ("Operator"): an ATen operator
  user_annotation,  ///< "user_annotation": record_function ranges (ProfilerStep#N, nccl:all_reduce, DataLoader)
  other,            ///< anything else (not kept)
};

/// "kernel", "memcpy", "memset", "cuda_runtime", "cuda_driver", "cpu_op", "user_annotation", "other".
std::string_view to_string(EventKind k) noexcept;

/// True for the kinds that run on a GPU (kernel, memcpy, memset): what the GPU's busy time is made of.
constexpr bool is_gpu_activity(EventKind k) noexcept {
  return k == EventKind::kernel || k == EventKind::memcpy || k == EventKind::memset;
}

/// NCCL collective metadata of one event, as PyTorch records it (ParamCommsUtils: args of record_param_comms
/// and, since PyTorch 2.1, of the NCCL kernel itself), or as derived from an older "nccl:<op>" annotation's
/// "Input Dims" / "Input type". Every field is optional: absent means the trace did not say.
struct CollectiveArgs {
  std::string collective;                ///< "Collective name" ("allreduce", "allgather", …) or the annotation's op
  std::optional<std::int64_t> in_nelems;   ///< "In msg nelems" (or the product of the first "Input Dims")
  std::optional<std::int64_t> out_nelems;  ///< "Out msg nelems"
  std::optional<std::int64_t> group_size;  ///< "Group size": ranks in the process group
  std::optional<std::int64_t> seq;         ///< "Seq" / "seq": the process group's collective sequence number
  std::string dtype;                     ///< "dtype" (c10 names: "Float", "BFloat16", …) or "Input type" ("float")
  std::string pg_name;                   ///< "Process Group Name" ("0")
  std::string pg_desc;                   ///< "Process Group Description" ("default_pg")
  bool from_input_dims = false;          ///< sizes come from an annotation's "Input Dims", not from NCCL metadata
};

/// One kept event. Times are integer nanoseconds: ts and dur are written in microseconds, often with a
/// fractional part ("4458677009853.422"), and are converted from their decimal text exactly (three decimals
/// are nanoseconds; further digits are rounded), so no precision is lost at 1e12 µs.
struct TraceEvent {
  std::int64_t ts_ns = 0;           ///< start, ns (the trace's ts × 1000)
  std::int64_t dur_ns = 0;          ///< duration, ns (0 when the event has no "dur")
  std::int64_t correlation = -1;    ///< args "correlation" (links a runtime launch to its GPU activity), -1 absent
  std::int64_t external_id = -1;    ///< args "External id" (links a GPU activity to the CPU op), -1 absent
  std::int64_t bytes = -1;          ///< args "bytes" of a copy or memset, -1 absent
  std::uint32_t name = 0;           ///< index into Trace::names
  /// A kernel's launch configuration from args "grid" and "block" (arrays of 1 to 3 non-negative integers, as
  /// Kineto writes [x, y, z]), interned into Trace::names as "grid [x,y,z] block [x,y,z]"; 0 ("") when the trace
  /// does not give both, or either is malformed.
  std::uint32_t launch = 0;
  std::uint32_t pid = 0;            ///< index into Trace::ids (pid may be an integer or a string)
  std::uint32_t tid = 0;            ///< index into Trace::ids
  std::int32_t device = -1;         ///< args "device", -1 absent
  std::int32_t stream = -1;         ///< args "stream", -1 absent
  std::int32_t collective = -1;     ///< index into Trace::collectives, -1 when the event carries none
  EventKind kind = EventKind::other;
};

/// A pid or tid as written: an integer, or a string such as "Spans" or "PyTorch Profiler".
struct TraceId {
  bool is_string = false;
  std::int64_t number = 0;  ///< the integer when !is_string
  std::string text;         ///< the string when is_string
  /// The integer, or the text.
  std::string to_string() const;
};

/// One process group of distributedInfo.pg_config.
struct ProcessGroupConfig {
  std::string name;                  ///< "pg_name"
  std::string desc;                  ///< "pg_desc"
  std::string backend_config;        ///< "backend_config" ("cuda:nccl")
  std::optional<std::int64_t> size;  ///< "pg_size"
  std::vector<std::int64_t> ranks;   ///< "ranks"
};

/// The top-level "distributedInfo" object Kineto writes for torch.distributed jobs.
struct DistributedInfo {
  std::optional<std::int64_t> rank;
  std::optional<std::int64_t> world_size;
  std::string backend;       ///< "nccl", "gloo", … ("" absent)
  std::string nccl_version;  ///< "2.17.1" ("" absent)
  std::vector<ProcessGroupConfig> pg_config;
};

/// One entry of the top-level "deviceProperties" array.
struct DeviceProperties {
  std::int64_t id = -1;
  std::string name;
  std::optional<std::int64_t> total_global_mem;  ///< bytes
  std::optional<std::int64_t> num_sms;
  std::optional<std::int64_t> compute_major;
  std::optional<std::int64_t> compute_minor;
};

/// What was read from one trace file: metadata, the kept events, and counts of everything seen.
struct Trace {
  std::string source;                     ///< the path or name given to the reader
  bool gzip = false;                      ///< the input was gzip-compressed
  bool array_format = false;              ///< the file is a bare event array (JSON Array Format)
  std::uint64_t json_bytes = 0;           ///< uncompressed JSON bytes read
  std::uint64_t file_bytes = 0;           ///< bytes of the file as stored (compressed size for gzip)
  std::optional<std::int64_t> schema_version;
  std::optional<std::int64_t> base_time_ns;  ///< "baseTimeNanoseconds": unix ns = base + ts × 1000
  std::string trace_name;                    ///< "traceName"
  std::optional<DistributedInfo> distributed;
  /// "deviceProperties": absent (nullopt) is not the same as present and empty (a CPU-only rank).
  std::optional<std::vector<DeviceProperties>> device_properties;
  std::vector<std::string> names;            ///< interned event names; index 0 is ""
  std::vector<TraceId> ids;                  ///< interned pids and tids
  std::vector<CollectiveArgs> collectives;   ///< NCCL metadata referenced by TraceEvent::collective
  std::vector<TraceEvent> events;            ///< kept events, in file order
  /// Per CPU thread (tid index), the union of its operators' intervals [begin, end) in ns, sorted and disjoint:
  /// every cpu_op event (kept or not) except record_function ranges that only enclose operators and collectives
  /// (see trace_analysis.h, CPU ranks). What a CPU rank computes when it has no GPU.
  std::map<std::uint32_t, std::vector<std::pair<std::int64_t, std::int64_t>>> cpu_work;
  /// Metadata events: process labels ("GPU 0", "CPU") and names, thread names, by pid/tid index.
  std::map<std::uint32_t, std::string> process_labels;
  std::map<std::uint32_t, std::string> process_names;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> thread_names;
  std::uint64_t events_read = 0;             ///< elements of the event array(s), kept or not
  std::map<std::string, std::uint64_t> events_by_category;  ///< every event read, by "cat" ("" when absent)
  std::map<std::string, std::uint64_t> events_by_phase;     ///< every event read, by "ph" ("" when absent)
  /// Events skipped for a reason worth telling (no ts, negative dur, unparsable number…), one line per reason
  /// with its count; and other notes (B/E events ignored, missing closing bracket).
  std::vector<std::string> warnings;

  /// The name of event `e`.
  std::string_view name_of(const TraceEvent& e) const { return names[e.name]; }
};

/// A collective run by a CPU backend, as the profiler names it: "gloo:all_reduce", "mpi:…", "ucc:…" (the
/// backend's own range, on its worker thread, for as long as the transfer runs).
bool is_cpu_collective_name(std::string_view name);

/// Options of the reader.
struct TraceReadOptions {
  /// Largest single JSON value the reader holds in memory at once (one event, or a top-level value such as
  /// distributedInfo), bytes. A larger event is an error; a larger top-level metadata value is skipped with a
  /// warning. Default 256 MiB.
  std::size_t max_value_bytes = std::size_t{256} << 20;
  /// Largest trace read, in bytes of JSON (decompressed for gzip input): past it the read ends with core::Error
  /// naming the bound, so a decompression bomb costs time and memory up to it only. Default 4 GiB (the largest real
  /// trace recorded here, 1.5 GB, reads in 27 s and 1.0 GB). `analyze --max-trace-bytes`.
  std::uint64_t max_json_bytes = std::uint64_t{4} << 30;
  /// Most elements of the event array(s) read: past it the read ends with core::Error naming the bound. Memory grows
  /// with the events kept (about 100 bytes each), so this bounds it near 2 GB. Default 20 M (the 1.5 GB trace holds
  /// 9.6 M). `analyze --max-trace-events`.
  std::uint64_t max_events = 20'000'000;
  /// Most bytes of distinct event names kept (each is held twice: in Trace::names and its index). Real traces have
  /// a few thousand names of tens of bytes; a trace of millions of long unique names would otherwise hold GBs that
  /// the event bound does not see. Default 256 MiB.
  std::uint64_t max_name_bytes = std::uint64_t{256} << 20;
};

/// Reads the trace at `path` (.json, or gzip-compressed whatever its name) in one streaming pass.
/// Throws core::Error (cause and remedy) when the file cannot be opened or read, is empty, is not a valid
/// gzip stream, is not JSON (naming the byte offset, line and column of the first invalid byte and what it looks
/// like, e.g. "unquoted hex value 0x262ca50 at byte 251 (line 7, column 82): not a Kineto trace (an NCCL
/// profiler-plugin dump?)"), ends before the JSON is complete, holds no event array, or is larger than
/// options.max_json_bytes or options.max_events allow. Events of kept kinds
/// that lack a field the analysis needs are skipped and counted in Trace::warnings, never guessed.
Trace read_trace_file(const std::string& path, const TraceReadOptions& options = {});

/// As read_trace_file() over bytes in memory (plain JSON or gzip). `source_name` names them in messages.
Trace read_trace_bytes(std::string_view bytes, std::string source_name, const TraceReadOptions& options = {});

}  // namespace scalescope::analyze
