#include "diagnose/catalogue.h"

#include <algorithm>
#include <array>

namespace scalescope::diagnose {
namespace {

constexpr std::string_view kHw = "hardware and topology";
constexpr std::string_view kEnv = "environment and configuration";
constexpr std::string_view kWork = "workload and training code";

const std::array<CauseInfo, 25> kCatalogue = {{
    {"nvlink-degraded", kHw, "NVLink present but fewer links up (or slower) than the GPU model has",
     "A ring runs at its slowest hop: one GPU pair with fewer active NVLinks caps every collective of the job at that "
     "pair's bandwidth.",
     "`nvidia-smi nvlink -s` links <inactive> or slower than their peers; NV# counts in `nvidia-smi topo -m` lower for "
     "some pairs than the board gives all of them (NVSwitch boards: every pair equal); NVLink error or replay "
     "counters rising; a measured plateau at a fraction links-up/links of the expected ceiling",
     "every link active at its rated speed; uniform NV# on an NVSwitch board; the plateau at the ceiling",
     "the expected busbw × (1 − active links / the model's links) on the slowest pair",
     "`nvidia-smi nvlink -s` and `-e` on every GPU; reseat the bridge or board; replace the GPU or baseboard whose links "
     "stay down",
     "nvidia-smi nvlink -s && nvidia-smi nvlink -e",
     "NVIDIA datasheets (links per GPU); nccl-tests doc/PERFORMANCE.md (a ring's busbw is its slowest link's)",
     assess_nvlink_degraded},
    {"pcie-link-degraded", kHw, "a GPU's PCIe link runs below its capability (x4/x8 slot, older generation, trained down)",
     "Host↔device copies, SHM transport and PCIe peer-to-peer all cross the GPU's PCIe link: a x8 or Gen3 link "
     "halves them, a x4 link quarters them.",
     "`nvidia-smi -q` or lspci LnkSta below LnkCap / Device Max in width (idle GPUs lower the generation on purpose, "
     "so a lower generation counts only under load); the host's maximum below the GPU's",
     "the link at the GPU's full generation and width while busy",
     "link bandwidth lost = 1 − (current gen × width) / (maximum gen × width), on the traffic that uses PCIe",
     "move the GPU to a CPU-attached x16 slot; set the slot's link speed in the BIOS; reseat the card and riser",
     "nvidia-smi -q -d PCIE   (while a job runs)",
     "PCI-SIG base specifications (rates per lane); nvidia-smi documentation (Device Max vs Host Max)",
     assess_pcie_link_degraded},
    {"pcie-host-bridge-path", kHw, "GPU pairs of the job talk only through the CPU's root complex (PHB/NODE)",
     "Without NVLink or a shared PCIe switch, peer traffic crosses the CPU's host bridges, which forward it slower "
     "than a switch (NCCL charges Intel root complexes 6/5 of the bandwidth) and sometimes slower than staging "
     "through host memory; inherent to the platform, not a fault.",
     "`nvidia-smi topo -m` PHB or NODE between GPUs the job uses (CUDA_VISIBLE_DEVICES picks them), no NV# between "
     "them; NCCL's graph search type PHB/NODE",
     "NVLink or PIX/PXB between every pair of the job",
     "the ceiling of a PHB/NODE path against a switch path of the same link (hardware table)",
     "run the job on GPUs joined by NVLink or one PCIe switch; compare NCCL_P2P_LEVEL=PXB (P2P off across host "
     "bridges) against the default on this pair; accept the ceiling",
     "CUDA_VISIBLE_DEVICES=<the pair> ./all_reduce_perf -b 1M -e 1G -f 2 -g 2   (then again with NCCL_P2P_DISABLE=1)",
     "nvidia-smi topo -m legend; NCCL src/graph/topo.h (INTEL_P2P_OVERHEAD); github.com/NVIDIA/nccl/issues/428",
     assess_pcie_host_bridge_path},
    {"cross-socket-path", kHw, "GPU pairs of the job cross the CPU interconnect (SYS)",
     "Peer-to-peer across QPI/UPI/Infinity Fabric is slow or unavailable, so NCCL stages the traffic through host "
     "memory: about half the PCIe link.",
     "`nvidia-smi topo -m` SYS between GPUs the job uses, GPUs on different NUMA nodes, no NV# between them",
     "every job pair on one socket, or joined by NVLink",
     "the SYS ceiling (half the PCIe link) against a same-socket path",
     "keep a job's GPUs on one NUMA node (CUDA_VISIBLE_DEVICES); bind each rank's CPUs to its GPU's node",
     "nvidia-smi topo -m",
     "nvidia-smi topo -m legend; scalescope's H200 measurement of SHM through host memory (bench/RESULTS.md: 25.5 GB/s with P2P disabled)",
     assess_cross_socket_path},
    {"p2p-blocked-acs-iommu", kHw, "ACS redirection or the IOMMU forces peer traffic through the root complex, or breaks it",
     "With ACS request/completion redirect on a PCIe switch's downstream ports, peer requests between devices under "
     "that switch go up to the root complex (and the IOMMU) instead of across the switch: P2P and GPUDirect RDMA "
     "slow down, hang or corrupt data.",
     "lspci ACSCtl with ReqRedir+ / CmpltRedir+ on bridges in the GPU or NIC path; IOMMU in translated mode; P2P "
     "bandwidth below the staged copy's in p2pBandwidthLatencyTest",
     "ACSCtl bits all '-' on every bridge of the path; IOMMU off or passthrough; P2P at the link's rate",
     "P2P and GDR traffic at root-complex speed, or a hang",
     "clear ACS on the switch ports (BIOS, or `setpci` at every boot) or use IOMMU passthrough (iommu=pt); "
     "NCCL_P2P_DISABLE=1 only as a stop-gap",
     "sudo lspci -vvv | grep -i acsctl",
     "NCCL troubleshooting guide (PCI Access Control Services); github.com/NVIDIA/nccl/issues/304",
     assess_p2p_blocked_acs_iommu},
    {"virtualised-topology", kHw, "a VM shows NCCL a flattened or invented topology, so it mis-plans paths",
     "Inside a virtual machine NCCL reads a PCI tree the hypervisor invented (everything behind one host bridge, "
     "identical CPU affinities): it cannot see which GPUs and NICs share a switch, may not detect GPUDirect RDMA, and "
     "plans rings and NIC use by a wrong picture; a topology file (NCCL_TOPO_FILE) replaces it.",
     "a hypervisor named; NCCL_TOPO_FILE set; measured bandwidth moving by large factors with the topology "
     "description alone on the same hardware; a matrix no physical server has (≥ 4 GPUs all PHB with identical "
     "affinity)",
     "bare metal; a topology with real switches and per-socket affinities",
     "the bandwidth of the best topology description against the one in use",
     "use the provider's NCCL topology file (NCCL_TOPO_FILE) describing the real PCI switches and NIC speeds; make "
     "GPUDirect RDMA available in the guest (peer-memory module or DMA-BUF, ATS/ACS settings on the host)",
     "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET ./all_reduce_perf -b 1G -e 1G -g 1   (look for /GDRDMA)",
     "NCCL documentation (NCCL_TOPO_FILE); github.com/NVIDIA/nccl/issues/1303",
     assess_virtualised_topology},
    {"gpu-hidden", kHw, "fewer GPUs visible to CUDA/NCCL than exist",
     "The job or NCCL runs on fewer GPUs than the machine has (CUDA_VISIBLE_DEVICES, a container's device list, a GPU "
     "that fell off the bus), so the expected speedup cannot happen or the topology is planned without them.",
     "GPUs that exist (nvidia-smi -L, NVML) against those CUDA or NCCL see; Xid 79; local ranks fewer than the node's GPUs",
     "every GPU visible", "the GPUs missing from the job",
     "expose every GPU (CUDA_VISIBLE_DEVICES, --gpus all); check `nvidia-smi -L` and dmesg for Xid errors",
     "nvidia-smi -L; echo $CUDA_VISIBLE_DEVICES; dmesg | grep -i xid",
     "CUDA programming guide (CUDA_VISIBLE_DEVICES); NVIDIA Xid error catalogue (79: fallen off the bus)",
     assess_gpu_hidden},
    {"gdr-unavailable", kHw, "InfiniBand/RoCE used without GPUDirect RDMA",
     "Without GPUDirect RDMA the NIC cannot read or write GPU memory: NCCL stages every network message through host "
     "memory, which caps inter-node bandwidth far below the NICs and costs CPU time.",
     "NCCL INFO 'GPU Direct RDMA Disabled for HCA'; NET/IB connections without /GDRDMA",
     "NET/IB connections with /GDRDMA", "inter-node busbw against the NICs' ceiling",
     "load the peer-memory module (nvidia-peermem; nv_peer_mem on old drivers) or use DMA-BUF; NCCL ≤ 2.22.3 "
     "looks only for nv_peer_mem, so with nvidia-peermem upgrade NCCL; keep NICs and GPUs under one PCIe switch",
     "lsmod | grep -e nvidia_peermem -e nv_peer_mem; NCCL_DEBUG=INFO … | grep GDRDMA",
     "NCCL troubleshooting guide (GPU Direct RDMA); github.com/NVIDIA/nccl/issues/1676",
     assess_gdr_unavailable},
    {"nccl-env-override", kEnv, "an NCCL_* setting forces a slower path or choice",
     "A variable set by the user, a launcher script or /etc/nccl.conf turns a transport off (P2P, SHM, IB/RoCE, GDR, "
     "NVLS), pins an algorithm or protocol, or caps channels: NCCL then cannot use the fastest path the machine has.",
     "NCCL_* values that differ from NCCL's default and slow it (not those equal to the default); the transport the "
     "same log then shows; an A/B measurement with the feature on and off",
     "the setting absent or at its default; no slower transport where it applies",
     "the A/B difference when measured; else the path it forces against the one it disables",
     "remove the setting (job script, ~/.nccl.conf, /etc/nccl.conf), or keep it only where a measurement shows it helps",
     "env | grep ^NCCL_; cat /etc/nccl.conf ~/.nccl.conf",
     "NCCL environment variable documentation (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)",
     assess_nccl_env_override},
    {"net-socket-fallback", kEnv, "traffic between nodes goes over TCP sockets instead of IB/RoCE",
     "NCCL found no usable RDMA device (not visible in the container, rdma-core or the plugin missing, IB disabled) "
     "and uses its socket transport: a few GB/s per NIC, with the CPU copying every byte.",
     "'NET/IB : No device found', 'Using network Socket', NET/Socket connections between nodes; RDMA settings "
     "(NCCL_IB_HCA, GID index, traffic class) that show the job expected RDMA",
     "a single-node job (the socket network then carries only the bootstrap); NET/IB connections",
     "inter-node busbw over sockets (1–3 GB/s per NIC) against RDMA's (12–48 GB/s per port)",
     "make the RDMA devices visible (ibv_devinfo must list them; in containers pass /dev/infiniband and IPC_LOCK), load "
     "the RDMA modules, install the cloud's NCCL net plugin; keep NCCL_IB_DISABLE unset",
     "ibv_devinfo; ls /sys/class/infiniband; NCCL_DEBUG=INFO … | grep -e NET/IB -e 'Using network'",
     "NCCL troubleshooting guide (networking); github.com/hiyouga/LlamaFactory/issues/6111",
     assess_net_socket_fallback},
    {"container-ipc-shm", kEnv, "a container's /dev/shm too small, or no shared IPC namespace",
     "NCCL's SHM transport and proxy buffers are shared-memory segments of several MB per peer connection in "
     "/dev/shm; Docker's default 64 MB (or less) cannot hold them, and without --ipc=host the processes cannot share "
     "them: init fails with a system error or the collective hangs.",
     "NCCL WARN 'Error while creating shared memory segment', posix_fallocate / 'No space left on device'; an "
     "'unhandled system error' at init on one node with several GPUs (then likely, not proven)",
     "a multi-node failure with socket errors; /dev/shm large and IPC shared",
     "the job does not start, or hangs: all of its time",
     "start the container with --ipc=host or --shm-size=1g (Kubernetes: an emptyDir of medium Memory at /dev/shm); "
     "do not use NCCL_SHM_DISABLE=1 as the fix (it moves traffic to slower paths)",
     "df -h /dev/shm   (inside the container)",
     "NCCL troubleshooting guide (Docker: --shm-size, --ipc=host); github.com/NVIDIA/nccl/issues/473",
     assess_container_ipc_shm},
    {"collective-mismatch", kEnv, "ranks call different collectives, or one rank calls one the others never call",
     "NCCL pairs collectives by order: a collective issued by some ranks only (code under `if rank == 0`, a "
     "checkpoint or evaluation path on one rank) waits for partners that never come, until the watchdog fires.",
     "watchdog timeouts at the same SeqNum with different OpTypes; a timeout that ran its whole limit (no progress) "
     "on one rank only, in a 1-element all-reduce (a barrier's shape), after the training loop ended",
     "every rank reporting the same collective stuck by a slow or failed network (IB/socket errors)",
     "the whole watchdog timeout, per occurrence",
     "make every rank issue the same collectives in the same order: call collective-containing functions (checkpoint "
     "save, barrier, metrics sync) on all ranks, and restrict only the file write to rank 0",
     "TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_NCCL_TRACE_BUFFER_SIZE=2000 <the job>   (flight recorder: last collectives per rank)",
     "PyTorch distributed documentation (TORCH_DISTRIBUTED_DEBUG); github.com/alan-turing-institute/autocast/pull/386",
     assess_collective_mismatch},
    {"comm-bound-small-model", kWork, "compute per step too short to hide the gradient all-reduce",
     "Each step all-reduces the whole gradient; when forward and backward take less time than that (a small model, "
     "a small per-GPU batch), communication cannot overlap and the step waits for it: inherent to model size and batch.",
     "2-GPU speedup near 1 (or below) even on the fastest link; a slower link making it worse; comm ratio above 30 %; "
     "a small model (well under 1 B parameters) or a short step",
     "a large model whose all-reduce time equals gradient bytes / link bandwidth (bandwidth-bound instead); good "
     "scaling on the same link",
     "the measured step against the ideal (1-GPU step at equal work per GPU)",
     "raise the work per GPU (larger per-GPU batch or sequence), accumulate gradients with no_sync() over several "
     "micro-batches, or use fewer GPUs",
     "scalescope doctor   (or: time one step at batch ×2; a comm-bound job gains in efficiency)",
     "the project seed (TinyBERT: comm ratio); PyTorch DDP design notes (bucketing and overlap)",
     assess_comm_bound_small_model,
     "raise the work per rank (a larger per-rank batch), accumulate gradients with no_sync() over several micro-batches, "
     "or use fewer ranks",
     "run the job at one rank and at two with the same per-rank batch (weak scaling), and compare the step"},
    {"bandwidth-bound-gradients", kWork, "the gradient volume saturates the link",
     "The ring all-reduce moves 2(N−1)/N × gradient bytes per rank each step; when that over the link's bus bandwidth "
     "approaches the compute time, the link, not compute, sets the step.",
     "a large model (billions of parameters) with communication dominating the step; all-reduce time ≈ gradient "
     "bytes × 2(N−1)/N / busbw; a slow link (PCIe, sockets) under a large gradient",
     "communication well hidden; a fast link at its ceiling with compute dominating",
     "gradient bytes × 2(N−1)/N / the link's busbw against the compute time",
     "a faster link (NVLink, more NICs), bf16 gradients or compression hooks, a larger batch per step, ZeRO/FSDP "
     "sharding (reduce-scatter + all-gather)",
     "./all_reduce_perf -b 256M -e 4G -f 2 -g <GPUs>   (the link's busbw at the gradient's size)",
     "nccl-tests doc/PERFORMANCE.md (bus bandwidth); the project seed (7B over PCIe)",
     assess_bandwidth_bound_gradients},
    {"no-overlap", kWork, "the all-reduce does not run during backward",
     "DDP starts each bucket's all-reduce as soon as its gradients are ready, so most of the communication hides "
     "behind the rest of backward; a single bucket, manual all-reduce after backward, or a disabled overlap puts all "
     "of it after backward.",
     "exposed communication ≈ all-reduce time (overlap below 20 %); one bucket; an explicit all-reduce after backward",
     "overlap above 70 %", "the exposed communication per step",
     "use DDP's bucketed overlap (default bucket_cap_mb 25), or register the all-reduce as a gradient hook",
     "scalescope train --world-size 2 … (overlap column), or a profiler trace: NCCL kernels during backward",
     "PyTorch DDP design notes (gradient bucketing)",
     assess_no_overlap},
    {"ddp-unused-parameters", kWork, "find_unused_parameters=True (a graph traversal each step) or parameters without gradients",
     "With find_unused_parameters=True DDP walks the autograd graph after every forward to mark unused parameters, and "
     "buckets wait for that: a few % of the step usually, more with many small parameters or heavy Python.",
     "PyTorch's reducer warning 'find_unused_parameters=True was specified … but did not find any unused parameters'; "
     "DDP logging data with find_unused_parameters true; CPU time in DDP's forward",
     "find_unused_parameters false / static_graph=True",
     "typically a few % of the step (the traversal), stated as such",
     "construct DDP with find_unused_parameters=False (HF Trainer: --ddp_find_unused_parameters False), or "
     "static_graph=True when the set of used parameters never changes",
     "TORCH_DISTRIBUTED_DEBUG=INFO <the job>   (prints DDP's configuration), then time a step with the flag off",
     "PyTorch DistributedDataParallel documentation; github.com/huggingface/transformers/pull/9820",
     assess_ddp_unused_parameters},
    {"dataparallel-not-ddp", kWork, "torch.nn.DataParallel (one process, threads) instead of DistributedDataParallel",
     "DataParallel replicates the model onto every GPU on every forward, scatters inputs and gathers outputs from one "
     "process whose threads share the GIL: Python overhead that grows with the model's modules and the GPU count.",
     "DataParallel's warnings ('Was asked to gather along dimension 0'); HF Trainer with n_gpu > 1 and no distributed "
     "training; a Python profile full of Module.__setattr__ / named_modules calls (replicate) and lock waits "
     "(parallel_apply threads); a DP row slower than a DDP row",
     "one process per GPU (torchrun, local_rank set)", "the DP time against DDP's, when both were measured",
     "launch one process per GPU with DistributedDataParallel (torchrun --nproc_per_node N train.py)",
     "py-spy dump --pid <trainer> (threads in parallel_apply), or check the launcher: a plain `python train.py` with several GPUs visible",
     "PyTorch documentation ('Use DistributedDataParallel instead of DataParallel'); github.com/luyug/GC-DPR/issues/2",
     assess_dataparallel_not_ddp},
    {"host-sync", kWork, "the host waits for the GPU inside the step",
     ".item(), .cpu(), printing a tensor, torch.cuda.synchronize() or a blocking copy make the CPU wait until the GPU "
     "drains its queue; the GPU then idles until the CPU has launched the next kernels.",
     "GPU idle gaps right after synchronising calls in a trace; torch.cuda.set_sync_debug_mode warnings",
     "no synchronising call inside the step", "the GPU idle time those calls leave per step",
     "keep values on the GPU; log every N steps; use non_blocking copies from pinned memory",
     "torch.cuda.set_sync_debug_mode('warn') in the training script, or a profiler trace",
     "PyTorch CUDA semantics (asynchronous execution); PyTorch performance tuning guide",
     assess_host_sync},
    {"input-bound", kWork, "data loading or augmentation cannot keep up",
     "The GPU waits for the next batch: too few loader workers, workers re-created each epoch, slow storage or CPU "
     "decoding; more GPUs cannot help, they wait too.",
     "data time ≈ step time in the training log (ImageNet example's Data vs Time); DataLoader worker warnings; "
     "exposed host-to-device copies and idle time in data loading ranges of a trace",
     "data time near zero; one-off start-up reads (a few calls) are not per-step data loading",
     "the data wait per step and its share",
     "more workers (up to the cores), persistent_workers=True, pin_memory=True, pre-processed or cached data, faster "
     "storage (SSD, local NVMe)",
     "time the loop with synthetic data (same shapes) and compare; iostat -x 1 during training",
     "PyTorch performance tuning guide (data loading); github.com/pytorch/pytorch/issues/680",
     assess_input_bound},
    {"launch-bound", kWork, "kernels too short: the host's launch rate sets the step",
     "When kernels take a few µs, the CPU cannot launch them as fast as the GPU runs them; the GPU idles between "
     "kernels. A profiler inflates host time, so a profiled trace overstates it.",
     "GPU idle gaps between short kernels across the step (unprofiled step times confirm it)",
     "a profiled step much slower than the unprofiled one (the profiler's own overhead); long kernels",
     "the idle time between kernels per step, corrected by the unprofiled step when known",
     "larger batch per kernel, CUDA graphs, torch.compile, fused optimizers and ops",
     "nsys profile --trace=cuda <the job>   (kernel density without PyTorch's profiler overhead)",
     "PyTorch CUDA graphs documentation; Nsight Systems user guide",
     assess_launch_bound},
    {"straggler", kWork, "one rank, GPU or node slower than the others every step",
     "Collectives complete when the last rank arrives: one slow GPU (throttling, another model), node (NIC, PCIe, "
     "noisy neighbour) or process sets every step, and the others wait.",
     "pairwise tests where every slow pair shares one node; one rank late to every collective in traces; one GPU "
     "throttled or slower in the same GEMM; per-rank compute skew",
     "all pairs equal; ranks arriving together", "the others' wait per step, or the bandwidth lost on its pairs",
     "find and fix the slow member (NIC and PCIe link of the node, clocks and throttle reasons of the GPU), or exclude it",
     "for each suspect: ib_write_bw to a good node, nvidia-smi -q -d PERFORMANCE, an intra-node all_reduce_perf",
     "nccl-tests doc/PERFORMANCE.md; github.com/NVIDIA/nccl-tests/issues/106",
     assess_straggler,
     "find what slows the late rank's host: other processes on its cores (top, ps -eLo psr), its CPU frequency, its data; "
     "or pin each rank to its own cores",
     "top -H during the run (which threads share the late rank's cores); the rank's compute per step alone"},
    {"load-imbalance", kWork, "ranks get unequal work per step",
     "Variable input sizes or uneven shards give some ranks more work each step; the rank with the most sets the step "
     "and the others wait — a different rank each time, unlike a straggler.",
     "the slowest rank changing from step to step; uneven batch shapes", "the same rank slow every step (straggler)",
     "the mean wait of the other ranks per step",
     "equal work per step (length bucketing, padding to fixed shapes), balanced sharding (DistributedSampler)",
     "per-rank step times over many steps (scalescope analyze on every rank's trace)",
     "PyTorch DDP notes (uneven inputs, Join)",
     assess_load_imbalance},
    {"compile-ddp-interaction", kWork, "torch.compile with DDP breaks graphs or reorders the bucket all-reduces",
     "Compiled graphs split at DDP's bucket boundaries (DDPOptimizer) or at graph breaks; with too many breaks or "
     "recompilations the all-reduces lose their overlap.",
     "dynamo's graph-break and recompilation messages, DDPOptimizer lines in the log",
     "no graph breaks; overlap as in eager", "the step against the eager step",
     "compile the module inside DDP (torch.compile(DDP(model)) per PyTorch's guidance), fix graph breaks, or use "
     "compiled autograd",
     "TORCH_LOGS=graph_breaks,recompiles <the job>",
     "PyTorch torch.compile + DDP documentation (DDPOptimizer)",
     assess_compile_ddp_interaction},
    {"compute-contention", kWork, "ranks slow each other's compute (added by scalescope)",
     "Ranks that share a resource compute slower than one rank alone: CPU ranks sharing cores and memory bandwidth with "
     "their MPI progress and data-loader threads, two ranks on one GPU, or NCCL's kernels holding SMs beside "
     "compute.",
     "compute time per step at N ranks above the 1-rank compute time in the same run (scalescope's waterfall), with "
     "more ranks than cores or a kernel trace showing slowed kernels",
     "compute per rank equal to one rank alone", "compute at N − compute at 1, per step",
     "one rank per core or GPU, bound to it; fewer threads per rank; for GPUs, NCCL's channel count or stream "
     "priorities",
     "scalescope doctor --kernel-trace DIR   (which kernels slowed)",
     "scalescope's own measurements (bench/RESULTS.md: CPU doctor, 2 × H200 kernel traces)",
     assess_compute_contention},
    {"no-defect", kWork, "what was measured is what this hardware and workload should give",
     "Nothing to fix: the figures reach the ceiling of the path they use.",
     "measured figures at the ceiling the hardware table gives; a topology that is what the platform should have",
     "any cause above with enough evidence", "none",
     "nothing to fix; the ceiling stated is where more speed would have to come from",
     "", "the hardware table (topo/hardware.h)", nullptr},
}};

}  // namespace

std::span<const CauseInfo> cause_catalogue() { return kCatalogue; }

const CauseInfo* find_cause(std::string_view id) {
  auto it = std::find_if(kCatalogue.begin(), kCatalogue.end(), [&](const CauseInfo& c) { return c.id == id; });
  return it == kCatalogue.end() ? nullptr : &*it;
}

Assessment start(std::string_view id) {
  Assessment a;
  a.cause = std::string(id);
  if (const auto* c = find_cause(id)) {
    a.fix = std::string(c->fix);
    a.confirm = std::string(c->confirm);
  }
  return a;
}

}  // namespace scalescope::diagnose
