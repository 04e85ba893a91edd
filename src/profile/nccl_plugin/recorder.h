#pragma once
// scalescope's NCCL profiler plugin, its logic without NCCL: one Recorder per communicator keeps each collective
// (and send/recv) NCCL enqueues in a ring of records, adds the GPU start and end that NCCL's proxy reports per
// channel (ncclProfileKernelCh events, GPU globaltimer ns), and writes one JSON line per operation — about 200 bytes
// — to the communicator's file. The format is docs/profile.md's "scalescope.nccl-profile/1"; analyze reads it
// (readers/nccl/nccl_profile.h).
//
// Threads: start_op and flush_all are called by the thread that enqueues (under the recorder's mutex); the
// kernel_* calls come from NCCL's proxy thread and touch only atomics of a record. A record is written out when
// its slot is reused `capacity` operations later (long finished by then) or at flush_all.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace scalescope::nccl_plugin {

/// The communicator a recorder belongs to, as NCCL's init hands it over.
struct CommInfo {
  std::uint64_t comm_id = 0;
  std::string comm_name;  ///< may be empty
  int nnodes = 0, nranks = 0, rank = 0;
  std::string host;
  long pid = 0;
};

/// What NCCL says of an operation when it is enqueued. Strings are NCCL's names ("AllReduce", "ncclBfloat16",
/// "RING", "LL128"); null pointers are allowed.
struct OpStart {
  bool p2p = false;
  std::uint64_t seq = 0;  ///< NCCL's per-communicator sequence number of that collective (0 for p2p)
  const char* func = nullptr;
  const char* datatype = nullptr;
  std::size_t count = 0;  ///< elements, as passed to NCCL (per rank for AllGather's send, ReduceScatter's receive)
  int root_or_peer = -1;
  int channels = 0;
  const char* algo = nullptr;
  const char* proto = nullptr;
};

/// One operation's record. Aligned to 8 so that the plugin can tag a pointer to it in its low bit.
struct alignas(8) OpRecord {
  bool used = false;
  bool p2p = false;
  std::uint64_t seq = 0;
  std::uint64_t index = 0;  ///< order of enqueue within the communicator
  char func[24] = {}, datatype[24] = {}, algo[24] = {}, proto[16] = {};
  std::size_t count = 0;
  int root_or_peer = -1;
  int channels = 0;
  std::int64_t host_start_ns = 0;  ///< CLOCK_REALTIME when NCCL enqueued it
  std::int64_t host_stop_ns = 0;   ///< CLOCK_REALTIME when NCCL finished enqueuing it (0: not seen)
  std::atomic<std::uint64_t> gpu_start{UINT64_MAX};  ///< earliest channel start (GPU globaltimer, ns)
  std::atomic<std::uint64_t> gpu_stop{0};            ///< latest channel end
  std::atomic<std::uint32_t> channels_started{0}, channels_stopped{0};
};

class Recorder {
 public:
  /// Opens `path` for writing (truncating it) and writes the header line at once; records follow when the buffer
  /// passes `flush_bytes` or a second has passed since the last write. `capacity` ≥ 1 records are kept before
  /// the oldest is written out; buffered lines are written once they exceed `flush_bytes`. ok() says whether the
  /// file could be opened; error() why not.
  Recorder(CommInfo comm, std::string path, std::size_t capacity = 8192, std::size_t flush_bytes = 256 * 1024);
  ~Recorder();  ///< flush_all()
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

  /// A new record for an operation NCCL enqueues (writing out the record its slot held). Never null.
  OpRecord* start_op(const OpStart& op);
  /// NCCL finished enqueuing the operation (host time).
  static void stop_op(OpRecord* r);
  /// A channel of the operation's kernel started / ended at `gpu_ns` (GPU globaltimer). Lock-free.
  static void kernel_start(OpRecord* r, std::uint64_t gpu_ns);
  static void kernel_stop(OpRecord* r, std::uint64_t gpu_ns);

  /// Writes every record still held, oldest first, and the buffer. Safe to call more than once.
  void flush_all();

  /// The file's first line (a JSON object with "schema": "scalescope.nccl-profile/1") and one record's line
  /// (no newline). Fields: docs/profile.md.
  static std::string header_line(const CommInfo& comm);
  static std::string record_line(const OpRecord& r);

 private:
  void write_out(const OpRecord& r);  // to buffer_; caller holds mutex_
  void flush_buffer();                // caller holds mutex_

  CommInfo comm_;
  std::string path_, error_;
  int fd_ = -1;
  std::size_t flush_bytes_;
  std::mutex mutex_;
  std::vector<OpRecord> ring_;
  std::uint64_t next_ = 0;
  std::string buffer_;
  std::int64_t last_flush_ns_ = 0;
};

/// The file name of a communicator's record: "nccl-profile.<host>.<pid>.<comm id, 16 hex>.r<rank>.jsonl".
std::string profile_file_name(const CommInfo& comm);

}  // namespace scalescope::nccl_plugin
