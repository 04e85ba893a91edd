#pragma once
// Facts: what one piece of evidence says, typed, with where it was read (file, line, the line's text). Every
// reader — NCCL debug logs, watchdog messages, nccl-tests outputs, `nvidia-smi topo -m`, profiler traces,
// scalescope's own JSON, training logs, tables, lspci, nvidia-smi, cProfile … — turns what it read into facts;
// the diagnosis engine (diagnose/engine.h) reasons over the facts of all files of one call together and never
// reads text itself. A fact states what the evidence shows, not what it means: "NCCL_IB_DISABLE=0 set by the
// environment" is a Setting; whether it matters is the engine's judgement.
//
// Units: seconds (_s), milliseconds (_ms), microseconds (_us), bytes, GB/s with GB = 1e9 bytes, Gb/s (gbit) for
// network line rates. Absent values are std::nullopt, never 0. Pure data; no I/O.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope::diagnose {

/// Where a fact was read: the file as given on the command line ("rank0.log"; "doctor" or "train" for a live
/// run), the 1-based line (0: the file as a whole, or a figure derived from several lines) and the line's text
/// (trimmed, at most 200 bytes, valid UTF-8).
struct Provenance {
  std::string source;
  std::size_t line = 0;
  std::string excerpt;
};

// ───────────────────────────── hardware and topology ─────────────────────────────

/// A GPU a file names: its product name as printed ("NVIDIA A100-SXM4-40GB", "Tesla T4", "GeForce RTX 2080 Ti"),
/// and what the file says of it.
struct GpuSeen {
  static constexpr const char* kKind = "gpu";
  std::string name;
  std::optional<int> index;            ///< device index on its host (CUDA/nvidia-smi numbering) when printed
  std::optional<std::string> bus_id;   ///< PCI bus id as printed ("0x86", "0000:3b:00.0", "1c0")
  std::optional<std::string> host;
  std::optional<int> rank;             ///< the rank using it (nccl-tests device list, traces)
};

/// How many GPUs something sees. `scope` says whose view: "exist" (NVML, nvidia-smi -L, /proc), "cuda" (visible
/// to CUDA, so to NCCL), "matrix" (rows of a topology matrix), "job" (GPUs the job uses, e.g. nccl-tests' nGpus ×
/// processes, a communicator's local ranks), "stated" (a count the text names), "task" (the GPUs a scheduler confines
/// each task to: `srun --gpus-per-task N`).
struct GpuCount {
  static constexpr const char* kKind = "gpu_count";
  int count = 0;
  std::string scope;
  std::optional<std::string> host;
};

/// One cell of a topology matrix (`nvidia-smi topo -m`, live discovery): the path class between two devices,
/// as nvidia-smi's token ("NV12", "PIX", "PXB", "PHB", "NODE", "SYS"). Devices by label ("GPU1", "NIC0", or a
/// NIC name such as "mlx5_0" when the matrix names it so). Each unordered pair once.
struct LinkClass {
  static constexpr const char* kKind = "link_class";
  std::string a, b;
  bool a_is_gpu = true, b_is_gpu = true;
  std::string token;   ///< "NV2", "NODE" …
  int nvlinks = 0;     ///< # of NV#, 0 for PCIe classes
};

/// A device's CPU and NUMA affinity as a topology matrix or live discovery shows it.
struct DeviceAffinity {
  static constexpr const char* kKind = "device_affinity";
  std::string device;                    ///< "GPU0", "NIC1", "mlx5_0"
  std::optional<std::string> cpus;       ///< cpulist as printed ("0-19,40-59")
  std::optional<int> cpu_count;          ///< CPUs in that list
  std::optional<std::string> numa;       ///< NUMA node list as printed ("0", "N/A" → absent)
  std::optional<std::string> nic_name;   ///< for NICs: the legend's name ("mlx5_0")
};

/// One NVLink of one GPU (`nvidia-smi nvlink -s` / `--status`, NVML): up or down, and its rate.
struct NvlinkState {
  static constexpr const char* kKind = "nvlink_state";
  std::string gpu;                  ///< "GPU 0" as the tool names it, or a bus id
  std::optional<std::string> gpu_name;
  int link = 0;
  bool active = false;
  std::optional<double> gbps;       ///< per direction as printed ("26.562 GB/s")
  std::optional<int> version;
};

/// An NVLink error or replay counter (`nvidia-smi nvlink -e`, NVML), e.g. "Replay Errors: 12".
struct NvlinkCounter {
  static constexpr const char* kKind = "nvlink_counter";
  std::string gpu;
  int link = 0;
  std::string counter;              ///< as printed: "Replay Errors", "Recovery Errors", "CRC Errors"
  std::uint64_t value = 0;
};

/// A device's PCIe link (`nvidia-smi -q` "GPU Link Info", lspci LnkCap/LnkSta, NVML live).
/// `device_max_*` is what the device itself supports (lspci LnkCap, nvidia-smi "Device Max"); `max_*` what the
/// host and device allow together (nvidia-smi "Max"); `current_*` what the link runs at now. `under_load`: read
/// while the GPU was busy (an idle GPU lowers its generation on purpose); nullopt when unknown.
struct PcieLinkState {
  static constexpr const char* kKind = "pcie_link";
  std::string device;               ///< "GPU 00000000:3B:00.0", "3b:00.0", "GPU0"
  std::optional<std::string> device_name;   ///< "NVIDIA A100-SXM4-80GB", "PLX Technology PEX 8747 …"
  std::optional<int> current_gen, max_gen, device_max_gen;
  std::optional<int> current_width, max_width, device_max_width;
  std::optional<bool> under_load;
  std::optional<bool> downgraded;   ///< lspci's "(downgraded)" marker
};

/// The ACS control register of a PCIe bridge or port (lspci -vvv "ACSCtl:"): each bit + or −.
struct AcsControl {
  static constexpr const char* kKind = "acs_control";
  std::string device;               ///< the bridge's bus id when the text gives it, else ""
  std::optional<std::string> device_name;
  bool src_valid = false, trans_blk = false, req_redir = false, cmplt_redir = false, upstream_fwd = false,
       egress_ctrl = false, direct_trans = false;
};

/// The IOMMU's mode: "translated" (DMA remapping on), "passthrough" (iommu=pt), "off"; from dmesg, the kernel
/// command line or sysfs.
struct IommuMode {
  static constexpr const char* kKind = "iommu";
  std::string mode;
};

/// `nvidia-smi topo -p2p r|w|n|a|p` cell: whether peer access works between two GPUs ("OK", "NS", "CNS", "GNS",
/// "TNS", "U"), and for which kind of access ("read", "write", "nvlink", "atomics", "prop").
struct P2pStatus {
  static constexpr const char* kKind = "p2p_status";
  std::string a, b;
  std::string status;
  std::string access;
};

/// A copy bandwidth or latency between two GPUs (p2pBandwidthLatencyTest and the like), peer access on or off.
struct P2pMeasurement {
  static constexpr const char* kKind = "p2p_measurement";
  int a = 0, b = 0;                 ///< device indices as the tool prints them
  bool peer_access = false;         ///< "P2P=Enabled" matrix, else staged through the host
  bool bidirectional = false;
  std::optional<double> gbps;       ///< GB/s
  std::optional<double> latency_us;
};

/// A GPU error the driver logged (dmesg "NVRM: Xid (PCI:0000:3b:00): 79, …").
struct XidEvent {
  static constexpr const char* kKind = "xid";
  std::string bus_id;
  int code = 0;
  std::string text;
};

/// A GPU's clocks, power and throttling (`nvidia-smi -q`): what slows one GPU against the others.
struct GpuClocks {
  static constexpr const char* kKind = "gpu_clocks";
  std::string gpu;
  std::optional<double> sm_mhz, max_sm_mhz;
  std::optional<double> power_w, power_limit_w;
  std::optional<double> temperature_c;
  std::vector<std::string> active_throttle_reasons;   ///< "SW Power Cap", "HW Slowdown", "SW Thermal Slowdown" …
};

/// A network adapter a file names: RDMA devices (`ibstat`, `ibv_devinfo`, NCCL's "NET/IB : Using [0]mlx5_0:1/RoCE"),
/// Ethernet interfaces NCCL uses ("NET/Socket : Using [0]eth0:…").
struct NicSeen {
  static constexpr const char* kKind = "nic";
  std::string name;                       ///< "mlx5_0", "eth0", "bond0"
  std::optional<double> line_gbit;        ///< "Rate: 200" (Gb/s)
  std::optional<std::string> link_layer;  ///< "IB", "RoCE", "Ethernet"
  std::optional<std::string> state;       ///< "Active", "Down"
  std::optional<std::string> used_by;     ///< "NCCL NET/IB", "NCCL NET/Socket" when NCCL named it
};

/// A sign of a virtual machine: a hypervisor named by dmesg / lscpu / DMI ("Hypervisor detected: KVM"),
/// a virtual PCI bridge, or a topology NCCL was told through NCCL_TOPO_FILE.
struct HypervisorSeen {
  static constexpr const char* kKind = "hypervisor";
  std::string what;
};

// ───────────────────────────── software and configuration ─────────────────────────────

/// A setting in force: an environment variable (NCCL_*, CUDA_VISIBLE_DEVICES, TORCH_*, OMP_NUM_THREADS …) or
/// NCCL's own report of one. `origin`: "environment" (an env dump or `export`), "command line" (VAR=value before a
/// command), "nccl: set by environment" ("NCCL_P2P_DISABLE set by environment to 1"), "nccl: set" ("NCCL_IB_HCA
/// set to …": NCCL's or a config file's value).
struct Setting {
  static constexpr const char* kKind = "setting";
  std::string name;
  std::string value;
  std::string origin;
};

/// An NCCL version ("NCCL version 2.18.3+cuda12.1", nccl-tests' "nccl 2.19.3", PyTorch's error text).
struct NcclVersion {
  static constexpr const char* kKind = "nccl_version";
  std::string version;  ///< "2.18.3"
};

/// How NCCL connects ranks: one transport as an NCCL log's channel lines show it, with how many connection lines
/// use it and one example pair. "P2P/IPC", "P2P/CUMEM", "P2P/direct pointer", "SHM", "NET/IB", "NET/Socket" …
struct TransportUse {
  static constexpr const char* kKind = "transport";
  std::string transport;
  std::string kind;                 ///< "p2p", "shm", "net", "collnet", "nvls", "other"
  bool gdrdma = false;              ///< "/GDRDMA" on these connections
  std::size_t connections = 0;
  int example_from = 0, example_to = 0;
  std::optional<std::string> host;  ///< the host that printed these lines, when the prefix names it
  std::string direction;            ///< "send" / "receive" for network connections, "" otherwise
};

/// The network NCCL chose ("Using network IB", "Using network Socket", "NET/OFI …") with the devices it listed.
struct NetworkChosen {
  static constexpr const char* kKind = "network";
  std::string network;              ///< "IB", "Socket", "AWS Libfabric" …
  std::vector<std::string> devices; ///< "mlx5_0:1/RoCE", "eth0:192.0.2.1<0>"
};

/// A network provider that found nothing ("NET/IB : No device found.").
struct NetNoDevice {
  static constexpr const char* kKind = "net_no_device";
  std::string provider;             ///< "IB"
};

/// GPUDirect RDMA state per HCA ("NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'", "… Enabled for HCA …").
struct GdrState {
  static constexpr const char* kKind = "gdr";
  std::string hca;
  bool enabled = false;
};

/// An NCCL warning (WARN line, or the "Last error:" text PyTorch quotes) sorted by what failed:
/// "shm-space" (posix_fallocate / ftruncate / "No space left" on a shared-memory segment), "shm-create" (creating or
/// opening a shared-memory segment), "socket" (connect/recv/bootstrap), "ib" (completion errors, ibv_*), "cuda"
/// (Cuda failure, CUDA errors), "p2p" (peer access, IPC handles), "proxy", "other".
struct NcclWarning {
  static constexpr const char* kKind = "nccl_warning";
  std::string category;
  std::optional<std::string> location;  ///< "include/shm.h:28"
  std::string message;
};

/// An NCCL call that failed: the ncclResult_t (2 = ncclSystemError "unhandled system error", 1 "unhandled cuda
/// error", 3 "internal error", 5 "invalid usage", 6 "remote error"), who reported it ("nccl-tests", "pytorch",
/// "nccl"), and when ("init" when it failed before any collective completed, "collective", or "unknown").
struct NcclFailure {
  static constexpr const char* kKind = "nccl_failure";
  std::optional<int> code;
  std::string name;                 ///< "unhandled system error"
  std::string reporter;
  std::string phase = "unknown";
};

/// NCCL's topology search result ("Pattern 4, crossNic 0, nChannels 2, speed 21/21, type NVL/PIX").
struct GraphSearch {
  static constexpr const char* kKind = "graph_search";
  std::optional<int> pattern, channels;
  std::optional<double> speed_intra_gbps, speed_inter_gbps;
  std::string type_intra, type_inter;
};

/// NCCL's P2P check ("intraNodeP2pSupport 0").
struct P2pSupport {
  static constexpr const char* kKind = "p2p_support";
  bool supported = false;
};

// ───────────────────────────── the job ─────────────────────────────

/// The shape of the job: ranks, nodes, ranks per node, GPUs per process, as one source knows them (a
/// communicator's "nranks 16 nNodes 2 localRanks 8", nccl-tests' preamble and device list, a launcher's flags).
/// `basis` says how ("NCCL communicator", "nccl-tests device list", "mpirun -np 24 --hostfile").
struct WorldShape {
  static constexpr const char* kKind = "world";
  std::optional<int> ranks, nodes, ranks_per_node, gpus_per_process, processes;
  std::vector<std::string> hosts;   ///< distinct host names seen, in order
  std::string basis;
};

/// How the job was started: "torchrun", "torch.distributed.launch", "mpirun", "srun", "deepspeed", "accelerate",
/// "python" (a plain interpreter: one process), "nccl-tests" (a test binary run directly) …
struct Launch {
  static constexpr const char* kKind = "launch";
  std::string launcher;
  std::optional<int> nproc_per_node, nnodes, np;
  bool hostfile = false;            ///< a hostfile / host list was given (several hosts)
  std::string program;              ///< "run_clm.py", "all_reduce_perf"
  std::vector<std::string> args;    ///< the program's arguments as written
};

/// A model the job trains, by name and, when known, parameter count.
struct ModelSeen {
  static constexpr const char* kKind = "model";
  std::string name;                 ///< "gpt2", "Llama-3.2-3B-Instruct", "alexnet", "tiny-14m"
  std::optional<double> parameters;
  std::optional<std::string> dtype; ///< training or gradient dtype when stated ("fp16", "bf16")
};

/// Batch size per device / global, as the job states it.
struct BatchSize {
  static constexpr const char* kKind = "batch";
  std::optional<double> per_device, global;
  std::optional<double> gradient_accumulation;
};

/// A framework's warning or message that names a scaling problem, by id from the reader's catalogue, e.g.
/// "ddp-find-unused-no-unused" (PyTorch reducer: find_unused_parameters=True but none found),
/// "ddp-unused-parameters" (parameters that received no gradient), "dataparallel" (nn.DataParallel in use),
/// "dataloader-workers" (more workers than cores, or 0), "persistent-workers", "bucket-view-strides",
/// "rebuilt-buckets", "nccl-async-error", "non-contiguous-grad" …
struct FrameworkMessage {
  static constexpr const char* kKind = "framework_message";
  std::string id;
  std::string framework;            ///< "pytorch", "lightning", "transformers", "accelerate", "deepspeed"
};

/// DDP's configuration as its logging data or TORCH_DISTRIBUTED_DEBUG output states it.
struct DdpConfig {
  static constexpr const char* kKind = "ddp_config";
  std::optional<bool> find_unused_parameters, static_graph, gradient_as_bucket_view;
  /// Whether bucket all-reduces start during backward (DDP's design; false: scalescope --no-overlap, or a manual
  /// all-reduce after backward).
  std::optional<bool> overlap;
  std::optional<double> bucket_cap_mb;
  std::vector<std::uint64_t> bucket_bytes;
  std::optional<int> world_size;
  std::optional<std::string> dtype;
  /// DDP's own per-iteration averages when logged (avg_forward_compute_time …), ms.
  std::optional<double> forward_ms, backward_compute_ms, backward_comm_ms, backward_comm_compute_overlap_ms;
};

/// A collective that a watchdog reported as timed out on one rank.
struct WatchdogTimeout {
  static constexpr const char* kKind = "watchdog_timeout";
  std::optional<int> rank;                   ///< global or group rank as printed
  std::optional<std::string> process_group;
  std::optional<std::string> op;             ///< "ALLREDUCE"
  std::optional<std::uint64_t> seq;
  std::optional<std::uint64_t> numel_in, numel_out;
  std::optional<std::uint64_t> timeout_ms, elapsed_ms;
};

/// The watchdog analysis across ranks: whether ranks were in different collectives or at different sequence
/// numbers, and which rank is behind.
struct WatchdogSummary {
  static constexpr const char* kKind = "watchdog_summary";
  bool op_mismatch = false;                  ///< different collectives (or sizes) at one SeqNum
  bool seq_mismatch = false;                 ///< ranks stuck at different SeqNums
  std::optional<int> behind_rank;
  int reporting_ranks = 0;                   ///< ranks that printed a timeout
  std::string verdict;
};

/// The training loop ended normally before what follows ("`Trainer.fit` stopped: `max_epochs=N` reached.",
/// "Training completed.", a train-metrics block).
struct TrainingEnded {
  static constexpr const char* kKind = "training_ended";
  std::string framework;
};

/// Output that stops after start-up without a result or an error: an nccl-tests run that printed its device list
/// and nothing more, a training log whose last line is init. What the text shows; whether it hung or was cut is for the
/// engine to weigh with the other facts.
struct Stall {
  static constexpr const char* kKind = "stall";
  std::string what;
};

/// A process or job that died, and how ("Aborted (core dumped)", "srun: error", "exit code 1", a Python
/// exception type).
struct ProcessFailure {
  static constexpr const char* kKind = "process_failure";
  std::string what;
};

/// A job that ended by itself with an error (`scalescope profile`'s record, job.json): its first exception — the
/// likeliest cause; what follows it in the output is mostly its consequence —, the rank that raised it, and whether
/// the launcher's own code raised it before any worker ran (torchrun failing on its own arguments).
struct JobFailed {
  static constexpr const char* kKind = "job_failed";
  std::string ended;             ///< how it ended: "exited with status 1", "was killed by signal 9 (SIGKILL)"
  std::string exception;         ///< "RuntimeError: planted failure on rank 1"; "" when the output shows none
  std::optional<int> rank;       ///< the rank whose output held it ("[rank1]:", "[default1]:")
  std::vector<int> failed_ranks; ///< ranks the launcher's failure summary lists
  std::string frame;             ///< the traceback's last frame ("File \".../api.py\", line 162, in to_map")
  bool launcher_crash = false;   ///< the launcher's own code raised it, no rank's
};

/// One row of a Python profile (cProfile / pstats text): calls (primitive calls after '/'), seconds.
struct ProfileRow {
  static constexpr const char* kKind = "profile_row";
  std::string function;             ///< "__setattr__", ":0(acquire)" → "acquire"
  std::string file;                 ///< "module.py", "" for built-ins
  std::optional<int> file_line;
  std::uint64_t calls = 0, primitive_calls = 0;
  double tottime_s = 0, cumtime_s = 0;
};

/// What the poster says in their own words (an issue's text, a report pasted beside the logs), one claim per
/// statement, with the sentence as provenance. Weaker than a measured or logged fact: the engine uses claims to choose
/// between causes the other facts allow, never alone for a figure. `kind`:
///   "hang"           the job hangs / deadlocks / makes no progress (detail: where, when known: "first all-reduce")
///   "works-with"     it works (or the problem goes away) with a setting or change (detail: "NCCL_P2P_DISABLE=1",
///                    "--ipc=host", "DDP instead of DataParallel")
///   "slow-with"      it works but slowly with a setting (detail as above)
///   "fails-with"     it fails or hangs only with a setting or change (detail as above)
///   "works-on-path"  it works between GPUs joined by a path class (detail: "SYS", "NVLink", "PIX" …)
///   "fails-on-path"  it hangs or fails between GPUs joined by a path class (detail as above; "others than SYS")
///   "container"      it runs in a container (detail: "docker", "kubernetes", and the flags stated: "--ipc=host")
///   "nodes"          how many nodes (detail: "2"), or "multi-node"
///   "slow"           it is slower than expected (detail: the figures stated, e.g. "4-5x slower", "1.2 GB/s")
///   "cpus"           the host's CPU count as stated (detail: the number: "32" of "32 cpu and 8 gpu", "CPU(s): 32")
struct Claim {
  static constexpr const char* kKind = "claim";
  std::string kind;
  std::string detail;
};

/// A construct the training code uses, read from Python source (a file, or a code block of a post). `construct` is
/// one of: "DataParallel", "DistributedDataParallel", "find_unused_parameters" (detail: its value), "static_graph",
/// "no_sync", "torch.compile", "host-sync" (detail: the call as written — ".item()", ".cpu()", ".tolist()", ".numpy()",
/// "torch.cuda.synchronize()", ".nonzero()", "torch.where(cond)", a boolean-mask index, "print(" of a tensor),
/// "blocking-copy" (".to(…)"/".cuda()" without non_blocking inside the loop), "dataloader" (detail: "num_workers=N",
/// "pin_memory=False", "persistent_workers=False"), "manual-all-reduce" (dist.all_reduce in the loop), "barrier",
/// "set_num_threads" (detail: the value), "empty_cache", "gc.collect". `in_loop`: inside a for/while body, so it
/// runs every step. `value` is the numeric argument where one matters (num_workers, threads).
struct CodeUse {
  static constexpr const char* kKind = "code";
  std::string construct;
  std::string detail;
  bool in_loop = false;
  std::optional<double> value;
};

// ───────────────────────────── measurements ─────────────────────────────

/// A collective's sustained bus bandwidth (a sweep's plateau, scalescope comm or an nccl-tests output), with the
/// sweep's shape: what the largest messages reach, not nccl-tests' average line.
struct BusbwPlateau {
  static constexpr const char* kKind = "busbw_plateau";
  std::string collective;           ///< "all_reduce" …
  double gbps = 0;
  std::uint64_t from_bytes = 0, to_bytes = 0;
  std::size_t sizes = 0;
  bool saturated = false;           ///< ≥ 3 sizes within 10 % of the peak at the large end
  double peak_gbps = 0;
  std::optional<int> ranks;
  std::optional<double> latency_us; ///< small-message time
  std::optional<double> reported_average_gbps;  ///< nccl-tests' "# Avg bus bandwidth" when printed
  std::size_t wrong_rows = 0;       ///< rows with #wrong > 0
};

/// One measured figure of a run or a variant of it, from a table, a pair list, a timing line or a report:
/// `value` in `unit` of `quantity`, under the conditions `dims` ("gpus" → "2", "mode" → "DDP", "link" → "no
/// NVLink", "pair" → "host-a,host-b", "nccl_version" → "2.19.3", "topology" → "topo1", "network" → "RoCE
/// disabled" …) — what distinguishes it from the other rows of its table. `members` lists the hosts or devices
/// a measurement involves (a pair's two nodes). `row` is the row's label as printed.
struct Measurement {
  static constexpr const char* kKind = "measurement";
  std::string quantity;             ///< "step time", "run time", "epoch time", "busbw", "throughput", "GPU busy time", "GPU idle share" …
  std::string unit;                 ///< "s", "ms", "GB/s", "samples/s", "it/s", "%"
  double value = 0;
  bool higher_is_better = false;
  std::map<std::string, std::string> dims;
  std::vector<std::string> members;
  std::string row;
  std::string table;                ///< which table of the file ("" when one), so rows of one table group
};

/// Where one step's time goes, from a report, a trace or a log line: seconds per step. Absent parts were not
/// measured. `profiled`: the figures come from a profiled window (its host time is inflated by the profiler).
struct StepPhases {
  static constexpr const char* kKind = "step_phases";
  std::optional<int> world_size, rank;
  std::optional<double> step_s, compute_s, forward_s, backward_s, optimizer_s;
  std::optional<double> all_reduce_s, exposed_comm_s, data_wait_s, host_sync_s, launch_gap_s, other_s;
  std::optional<double> gpu_busy_s;
  std::optional<double> step_unprofiled_s;  ///< the same job's step without the profiler, when known
  bool profiled = false;
  bool cpu_rank = false;            ///< a rank that computes on the CPU (a gloo job's): its "GPU" fields are CPU time
  std::string basis;                ///< "scalescope train", "profiler trace, mean of 5 steps", "log: Time/Data"
};

/// Data-parallel scaling at one world size against one rank (scalescope doctor, a baseline trace).
struct ScalingPoint {
  static constexpr const char* kKind = "scaling";
  int world_size = 0;
  double speedup = 0, efficiency = 0;
  std::optional<double> comm_ratio, overlap;
  std::optional<std::string> verdict;  ///< "healthy", "watch", "investigate"
  std::string mode = "weak";
};

/// A rank or node slower than the others (cross-rank trace analysis, per-rank timings).
struct Straggler {
  static constexpr const char* kKind = "straggler";
  std::string who;                  ///< "rank 3", "host-a"
  std::optional<double> late_ms_per_step;
  std::optional<double> compute_skew;  ///< slowest / fastest rank compute time − 1
  std::string basis;
};

/// Host synchronisation inside the step (traces): the GPU drained because the CPU waited.
struct HostSync {
  static constexpr const char* kKind = "host_sync";
  std::string label;                ///< "aten::item", "cudaStreamSynchronize" …
  double per_step = 0;              ///< calls per step
  double gpu_idle_ms_per_step = 0;
  double blocked_ms_per_step = 0;
};

/// Kernel launch gaps (traces): idle time between consecutive compute kernels with no GPU work at all.
struct LaunchGaps {
  static constexpr const char* kKind = "launch_gaps";
  double per_step = 0;
  double idle_ms_per_step = 0;
  double median_us = 0;
  double mean_kernel_us = 0;        ///< mean compute-kernel duration: short kernels leave the host in charge
  bool profiled = true;             ///< from a profiler trace (host time inflated)
};

/// Host-side time of a named CPU operation per step (traces): e.g. DDP's forward, the reducer's preparation for
/// backward, where find_unused_parameters' graph traversal runs.
struct CpuOpTime {
  static constexpr const char* kKind = "cpu_op";
  std::string name;
  double ms_per_step = 0;
  double calls_per_step = 0;
};

// ───────────────────────────── the fact itself ─────────────────────────────

using FactValue =
    std::variant<GpuSeen, GpuCount, LinkClass, DeviceAffinity, NvlinkState, NvlinkCounter, PcieLinkState,
                 AcsControl, IommuMode, P2pStatus, P2pMeasurement, XidEvent, GpuClocks, NicSeen, HypervisorSeen,
                 Setting, NcclVersion, TransportUse, NetworkChosen, NetNoDevice, GdrState, NcclWarning, NcclFailure,
                 GraphSearch, P2pSupport, WorldShape, Launch, ModelSeen, BatchSize, FrameworkMessage, DdpConfig,
                 WatchdogTimeout, WatchdogSummary, TrainingEnded, Stall, ProcessFailure, JobFailed, ProfileRow, Claim, CodeUse, BusbwPlateau,
                 Measurement, StepPhases, ScalingPoint, Straggler, HostSync, LaunchGaps, CpuOpTime>;

/// One fact and where it was read.
struct Fact {
  FactValue value;
  Provenance where;
};

/// A fact of type T as a query returns it: the fact and its provenance (references into the FactSet).
template <class T>
struct Seen {
  const T& fact;
  const Provenance& where;
};

/// The facts of one call (every file together), in the order they were added.
class FactSet {
 public:
  void add(FactValue value, Provenance where) { facts_.push_back({std::move(value), std::move(where)}); }
  void add(Fact fact) { facts_.push_back(std::move(fact)); }
  void append(const FactSet& other) { facts_.insert(facts_.end(), other.facts_.begin(), other.facts_.end()); }
  void append(FactSet&& other);

  const std::vector<Fact>& all() const { return facts_; }
  std::size_t size() const { return facts_.size(); }
  bool empty() const { return facts_.empty(); }

  /// Every fact of type T, in order.
  template <class T>
  std::vector<Seen<T>> of() const {
    std::vector<Seen<T>> out;
    for (const auto& f : facts_)
      if (const T* t = std::get_if<T>(&f.value)) out.push_back({*t, f.where});
    return out;
  }
  /// How many facts of type T.
  template <class T>
  std::size_t count() const {
    std::size_t n = 0;
    for (const auto& f : facts_) n += std::holds_alternative<T>(f.value) ? 1 : 0;
    return n;
  }

 private:
  std::vector<Fact> facts_;
};

/// The kind name of a fact ("gpu", "setting" …): T::kKind of the alternative it holds.
std::string kind_of(const FactValue& value);

/// Makes a Provenance: the excerpt is `line_text` trimmed, cut to 200 bytes, made valid UTF-8.
Provenance at(const std::string& source, std::size_t line, std::string_view line_text);

/// JSON: {"kind": kind_of(value), <the fact's fields, absent values null>, "source", "line", "excerpt"}. Every
/// string is valid UTF-8 (input text is repaired), so dump() never throws.
void to_json(nlohmann::json& j, const Fact& fact);
void to_json(nlohmann::json& j, const Provenance& p);
/// {"facts": [...]} of every fact in order.
void to_json(nlohmann::json& j, const FactSet& facts);

/// What a reader returns: the facts it read, and notes on how it read damaged or ambiguous text (each naming its
/// line), for the report.
struct Reading {
  FactSet facts;
  std::vector<std::string> notes;
};

}  // namespace scalescope::diagnose
