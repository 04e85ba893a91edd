#include "knowledge/hardware.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "topo/bandwidth.h"

namespace scalescope::topo {

std::string_view to_string(GpuForm form) {
  switch (form) {
    case GpuForm::sxm: return "sxm";
    case GpuForm::pcie: return "pcie";
    case GpuForm::workstation: return "workstation";
    case GpuForm::consumer: return "consumer";
    case GpuForm::superchip: return "superchip";
  }
  return "pcie";
}

namespace {

// Peer-to-peer over PCIe, the evidence used for the pcie_p2p column (quoted in the rows' sources):
//  - GeForce RTX 20 (without a bridge), 30, 40, 50: not allowed by the stock driver. `nvidia-smi topo -p2p p`
//    prints NS for 2 x RTX 2080 Ti (../shared/corpus/topo/autodl_2x2080ti_pix_with_p2p_matrix.txt);
//    p2pBandwidthLatencyTest "CANNOT Access Peer" on 8 x 2080 Ti (github.com/NVIDIA/nccl-tests/issues/117, "the
//    2080ti has never supported p2p"); RTX 3090 "does not support peer access" (github.com/efeslab/Nanoflow/
//    issues/22); RTX 4090 and 5090 reach P2P only with patched kernel modules
//    (github.com/tinygrad/open-gpu-kernel-modules, github.com/aikitoria/open-gpu-kernel-modules).
//  - Pascal GeForce: allowed: deviceQuery on 10 x GTX 1080 Ti prints "Peer access … : Yes" between all GPUs
//    of one PCIe tree (server-gear.com/shop/index.php/blog/10x1080ti-smi-query/).
//  - Datacenter and workstation boards: allowed (NCCL uses P2P between PCIe T4s in
//    ../shared/corpus/cases/nccl428-t4-p2p-across-host-bridges-slow; "workstation cards (e.g. Ada 6000) or V100,
//    A100, H100 have this feature", github.com/efeslab/Nanoflow/issues/22).
// Product names as drivers print them: NVIDIA open-gpu-kernel-modules README.md, "Compatible GPUs" table
// (driver 595.45.04), which also gives the PCI device ids that tie "A100-PG509-200" (20B0) to the A100-SXM4-40GB
// and "PG509-210" (20B2) to the A100-SXM4-80GB.
std::vector<GpuSpec> build_gpu_table() {
  const double nv1 = nvlink_link_gbps(1), nv2 = nvlink_link_gbps(2), nv3 = nvlink_link_gbps(3),
               nv4 = nvlink_link_gbps(4), nv5 = nvlink_link_gbps(5), ga102 = kGa102BridgeLinkGbps;
  using F = GpuForm;
  return {
      // ---- Kepler and Maxwell datacenter boards (still in old threads): PCIe only, no 16-bit tensor path ----
      {.model = "Tesla K80", .architecture = "Kepler", .compute_major = 3, .compute_minor = 7, .form = F::pcie,
       .pcie_gen = 3, .memory_gb = 12, .dense_bf16_tflops = 0,
       .source = "NVIDIA Tesla K80 datasheet: two GK210 GPUs on one board behind a PCIe switch, 12 GB GDDR5 each, "
                 "PCIe Gen3 x16, no NVLink; no fast FP16 path, so 0",
       .match = "k 80"},
      {.model = "Tesla M40", .architecture = "Maxwell", .compute_major = 5, .compute_minor = 2, .form = F::pcie,
       .pcie_gen = 3, .memory_gb = 12, .dense_bf16_tflops = 0,
       .source = "NVIDIA Tesla M40 datasheet: GM200, 12 GB (a 24 GB version exists) GDDR5, PCIe Gen3 x16, no NVLink; "
                 "no fast FP16 path, so 0",
       .match = "m 40"},
      {.model = "Tesla M60", .architecture = "Maxwell", .compute_major = 5, .compute_minor = 2, .form = F::pcie,
       .pcie_gen = 3, .memory_gb = 8, .dense_bf16_tflops = 0,
       .source = "NVIDIA Tesla M60 datasheet: two GM204 GPUs on one board, 8 GB GDDR5 each, PCIe Gen3 x16, no NVLink; "
                 "no fast FP16 path, so 0",
       .match = "m 60"},
      // ---- Pascal ----
      {.model = "Tesla P100 SXM2 16GB", .architecture = "Pascal", .compute_major = 6, .compute_minor = 0,
       .form = F::sxm, .pcie_gen = 3, .nvlink_gen = 1, .nvlink_links = 4, .nvlink_link_gbps = nv1,
       .memory_gb = 16, .dense_bf16_tflops = 21.2,
       .source = "NVIDIA Tesla P100 datasheet: SXM2 NVLink 160 GB/s bidirectional over 4 links, 16 GB HBM2, PCIe "
                 "Gen3; 21.2 TFLOPS FP16 on the CUDA cores (Pascal has no tensor cores)",
       .match = "p 100, sxm"},
      {.model = "Tesla P100 PCIe 16GB", .architecture = "Pascal", .compute_major = 6, .compute_minor = 0,
       .form = F::pcie, .pcie_gen = 3, .memory_gb = 16, .dense_bf16_tflops = 18.7,
       .source = "NVIDIA Tesla P100 datasheet: PCIe Gen3 x16, no NVLink, 18.7 TFLOPS FP16 on the CUDA cores",
       .match = "p 100, pcie, 16 gb"},
      {.model = "Tesla P100 PCIe 12GB", .architecture = "Pascal", .compute_major = 6, .compute_minor = 0,
       .form = F::pcie, .pcie_gen = 3, .memory_gb = 12, .dense_bf16_tflops = 18.7,
       .source = "NVIDIA Tesla P100 datasheet: the 12 GB PCIe card, otherwise as the 16 GB one",
       .match = "p 100, pcie, 12 gb"},
      {.model = "Tesla P40", .architecture = "Pascal", .compute_major = 6, .compute_minor = 1, .form = F::pcie,
       .pcie_gen = 3, .memory_gb = 24, .dense_bf16_tflops = 0,
       .source = "NVIDIA Tesla P40 datasheet: 24 GB GDDR5, PCIe Gen3 x16, 12 TFLOPS FP32; no tensor cores and "
                 "FP16 at 1/64 rate on GP102, so 0",
       .match = "p 40"},
      {.model = "Tesla P4", .architecture = "Pascal", .compute_major = 6, .compute_minor = 1, .form = F::pcie,
       .pcie_gen = 3, .memory_gb = 8, .dense_bf16_tflops = 0,
       .source = "NVIDIA Tesla P4 datasheet: 8 GB GDDR5, PCIe Gen3 x16, 5.5 TFLOPS FP32; no fast FP16 (GP104), "
                 "so 0",
       .match = "p 4"},
      {.model = "GeForce GTX 1080", .architecture = "Pascal", .compute_major = 6, .compute_minor = 1,
       .form = F::consumer, .pcie_gen = 3, .memory_gb = 8, .dense_bf16_tflops = 0,
       .source = "NVIDIA GeForce GTX 1080 specifications: 8 GB GDDR5X, PCIe 3.0 x16, SLI (not NVLink); no fast "
                 "FP16 (GP104), so 0; P2P allowed on Pascal GeForce (GTX 1080 Ti deviceQuery, see file notes)",
       .match = "gtx 1080, !1080 ti"},
      {.model = "GeForce GTX 1080 Ti", .architecture = "Pascal", .compute_major = 6, .compute_minor = 1,
       .form = F::consumer, .pcie_gen = 3, .memory_gb = 11, .dense_bf16_tflops = 0,
       .source = "NVIDIA GeForce GTX 1080 Ti specifications: 11 GB GDDR5X, PCIe 3.0 x16; no fast FP16 (GP102), "
                 "so 0; P2P: deviceQuery on 10 x GTX 1080 Ti prints 'Peer access … Yes' (server-gear.com)",
       .match = "1080 ti"},
      {.model = "TITAN Xp", .architecture = "Pascal", .compute_major = 6, .compute_minor = 1, .form = F::consumer,
       .pcie_gen = 3, .memory_gb = 12, .dense_bf16_tflops = 0,
       .source = "NVIDIA TITAN Xp specifications: 12 GB GDDR5X, PCIe 3.0 x16; no fast FP16 (GP102), so 0; P2P "
                 "as the other Pascal GeForce boards (assumed, same driver policy)",
       .match = "titan xp"},
      // ---- Volta ----
      {.model = "Tesla V100 SXM2 16GB", .architecture = "Volta", .compute_major = 7, .compute_minor = 0,
       .form = F::sxm, .pcie_gen = 3, .nvlink_gen = 2, .nvlink_links = 6, .nvlink_link_gbps = nv2,
       .memory_gb = 16, .dense_bf16_tflops = 125,
       .source = "NVIDIA Tesla V100 datasheet: SXM2 125 tensor TFLOPS (FP16), NVLink 300 GB/s bidirectional over 6 "
                 "links, PCIe Gen3",
       .match = "v 100, sxm 2, 16 gb"},
      {.model = "Tesla V100 SXM2 32GB", .architecture = "Volta", .compute_major = 7, .compute_minor = 0,
       .form = F::sxm, .pcie_gen = 3, .nvlink_gen = 2, .nvlink_links = 6, .nvlink_link_gbps = nv2,
       .memory_gb = 32, .dense_bf16_tflops = 125,
       .source = "NVIDIA Tesla V100 datasheet: the 32 GB SXM2 module, otherwise as the 16 GB one",
       .match = "v 100, sxm 2, 32 gb"},
      {.model = "Tesla V100 SXM3 32GB", .architecture = "Volta", .compute_major = 7, .compute_minor = 0,
       .form = F::sxm, .pcie_gen = 3, .nvlink_gen = 2, .nvlink_links = 6, .nvlink_link_gbps = nv2,
       .memory_gb = 32, .dense_bf16_tflops = 125,
       .source = "NVIDIA DGX-2 datasheet: 16 x V100 32 GB on NVSwitch, 2 PFLOPS tensor (125 per GPU), 6 NVLinks "
                 "per GPU (nvidia-smi shows NV6, ../shared/corpus/topo/nccl-tests-78_DGX-2_*); the 450 W DGX-2H "
                 "part (-32GB-H) is not included",
       .match = "v 100, sxm 3, 32 gb, !gb h"},
      {.model = "Tesla V100 PCIe 16GB", .architecture = "Volta", .compute_major = 7, .compute_minor = 0,
       .form = F::pcie, .pcie_gen = 3, .memory_gb = 16, .dense_bf16_tflops = 112,
       .source = "NVIDIA Tesla V100 datasheet: PCIe 112 tensor TFLOPS, PCIe Gen3 x16 (32 GB/s), no NVLink",
       .match = "v 100, pcie, 16 gb, !v 100 s"},
      {.model = "Tesla V100 PCIe 32GB", .architecture = "Volta", .compute_major = 7, .compute_minor = 0,
       .form = F::pcie, .pcie_gen = 3, .memory_gb = 32, .dense_bf16_tflops = 112,
       .source = "NVIDIA Tesla V100 datasheet: the 32 GB PCIe card, otherwise as the 16 GB one",
       .match = "v 100, pcie, 32 gb, !v 100 s"},
      {.model = "Tesla V100S PCIe 32GB", .architecture = "Volta", .compute_major = 7, .compute_minor = 0,
       .form = F::pcie, .pcie_gen = 3, .memory_gb = 32, .dense_bf16_tflops = 130,
       .source = "NVIDIA Tesla V100S datasheet: 130 tensor TFLOPS, 32 GB HBM2, PCIe Gen3 x16, no NVLink",
       .match = "v 100 s, pcie"},
      {.model = "TITAN V", .architecture = "Volta", .compute_major = 7, .compute_minor = 0, .form = F::consumer,
       .pcie_gen = 3, .memory_gb = 12, .dense_bf16_tflops = 110,
       .source = "NVIDIA TITAN V specifications: 110 deep-learning (tensor) TFLOPS, 12 GB HBM2, PCIe 3.0 x16, no "
                 "NVLink bridge; P2P assumed allowed (pre-RTX GeForce driver policy, not confirmed); the 32 GB "
                 "CEO Edition is not included",
       .match = "titan v, !ceo"},
      // ---- Turing ----
      {.model = "Tesla T4", .architecture = "Turing", .compute_major = 7, .compute_minor = 5, .form = F::pcie,
       .pcie_gen = 3, .memory_gb = 16, .dense_bf16_tflops = 65,
       .source = "NVIDIA T4 datasheet: 65 TFLOPS FP16 mixed precision, 16 GB GDDR6, PCIe Gen3 x16, no NVLink; P2P "
                 "in use between T4s in ../shared/corpus/cases/nccl428-*",
       .match = "t 4, !t 4 g, !t 4 32"},
      {.model = "GeForce RTX 2080", .architecture = "Turing", .compute_major = 7, .compute_minor = 5,
       .form = F::consumer, .pcie_gen = 3, .nvlink_gen = 2, .nvlink_links = 1, .nvlink_link_gbps = nv2,
       .bridge_links = 1, .pcie_p2p = false, .memory_gb = 8, .dense_bf16_tflops = 40.3,
       .source = "NVIDIA Turing architecture whitepaper: TU104 has one x8 NVLink, 25 GB/s each way (50 GB/s "
                 "bidirectional); FP16 tensor 40.3 TFLOPS with FP32 accumulate (80.5 with FP16 accumulate), "
                 "reference clocks; no PCIe P2P without a bridge, as the RTX 2080 Ti",
       .match = "rtx 2080, !2080 ti, !2080 super"},
      {.model = "GeForce RTX 2080 Ti", .architecture = "Turing", .compute_major = 7, .compute_minor = 5,
       .form = F::consumer, .pcie_gen = 3, .nvlink_gen = 2, .nvlink_links = 2, .nvlink_link_gbps = nv2,
       .bridge_links = 2, .pcie_p2p = false, .memory_gb = 11, .dense_bf16_tflops = 53.8,
       .source = "NVIDIA Turing architecture whitepaper: TU102 has two x8 NVLinks, 50 GB/s each way (100 GB/s "
                 "bidirectional); FP16 tensor 53.8 TFLOPS with FP32 accumulate (107.6 with FP16 accumulate); no "
                 "PCIe P2P: topo -p2p NS (corpus autodl_2x2080ti), nccl-tests#117, tensorflow#24677",
       .match = "2080 ti"},
      {.model = "TITAN RTX", .architecture = "Turing", .compute_major = 7, .compute_minor = 5,
       .form = F::consumer, .pcie_gen = 3, .nvlink_gen = 2, .nvlink_links = 2, .nvlink_link_gbps = nv2,
       .bridge_links = 2, .pcie_p2p = false, .memory_gb = 24, .dense_bf16_tflops = 130,
       .source = "NVIDIA TITAN RTX specifications: 130 tensor TFLOPS, 24 GB GDDR6, NVLink bridge 100 GB/s "
                 "bidirectional (TU102: 2 links); PCIe P2P not sourced: assumed absent as on the RTX 2080 Ti "
                 "(same TU102 GeForce driver branch)",
       .match = "titan rtx"},
      {.model = "Quadro RTX 6000", .architecture = "Turing", .compute_major = 7, .compute_minor = 5,
       .form = F::workstation, .pcie_gen = 3, .nvlink_gen = 2, .nvlink_links = 2, .nvlink_link_gbps = nv2,
       .bridge_links = 2, .memory_gb = 24, .dense_bf16_tflops = 130.5,
       .source = "NVIDIA Quadro RTX 6000 datasheet: 130.5 tensor TFLOPS, 24 GB GDDR6, NVLink 100 GB/s "
                 "bidirectional (2 links), PCIe 3.0 x16; the passive server board of the same name lists 119.4 "
                 "(Leadtek product page)",
       .match = "quadro rtx 6000"},
      {.model = "Quadro RTX 8000", .architecture = "Turing", .compute_major = 7, .compute_minor = 5,
       .form = F::workstation, .pcie_gen = 3, .nvlink_gen = 2, .nvlink_links = 2, .nvlink_link_gbps = nv2,
       .bridge_links = 2, .memory_gb = 48, .dense_bf16_tflops = 130.5,
       .source = "NVIDIA Quadro RTX 8000 datasheet: 130.5 tensor TFLOPS, 48 GB GDDR6, NVLink 100 GB/s "
                 "bidirectional (2 links), PCIe 3.0 x16",
       .match = "rtx 8000"},
      // ---- Ampere ----
      {.model = "A100 SXM4 40GB", .architecture = "Ampere", .compute_major = 8, .compute_minor = 0,
       .form = F::sxm, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 12, .nvlink_link_gbps = nv3,
       .memory_gb = 40, .dense_bf16_tflops = 312,
       .source = "NVIDIA A100 datasheet: BF16 312 TFLOPS dense (624 sparse), NVLink 600 GB/s bidirectional over 12 "
                 "links, PCIe Gen4; 'A100-PG509-200' is the same device (PCI id 20B0, driver README)",
       .match = "a 100, sxm, 40 gb; a 100, pg 509 200"},
      {.model = "A100 SXM4 80GB", .architecture = "Ampere", .compute_major = 8, .compute_minor = 0,
       .form = F::sxm, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 12, .nvlink_link_gbps = nv3,
       .memory_gb = 80, .dense_bf16_tflops = 312,
       .source = "NVIDIA A100 datasheet: the 80 GB HBM2e SXM4 module, otherwise as the 40 GB one; 'PG509-210' is "
                 "the same device (PCI id 20B2, driver README)",
       .match = "a 100, sxm, 80 gb; pg 509 210"},
      {.model = "A100 PCIe 40GB", .architecture = "Ampere", .compute_major = 8, .compute_minor = 0,
       .form = F::pcie, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 12, .nvlink_link_gbps = nv3,
       .bridge_links = 12, .memory_gb = 40, .dense_bf16_tflops = 312,
       .source = "NVIDIA A100 40GB PCIe product brief PB-10137 (NVLink bridge support, table 'A100 NVLink Speed "
                 "and Bandwidth'): three bridges join two cards with 12 links, 600 GB/s bidirectional; BF16 312 "
                 "dense (A100 datasheet)",
       .match = "a 100, pcie, 40 gb"},
      {.model = "A100 PCIe 80GB", .architecture = "Ampere", .compute_major = 8, .compute_minor = 0,
       .form = F::pcie, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 12, .nvlink_link_gbps = nv3,
       .bridge_links = 12, .memory_gb = 80, .dense_bf16_tflops = 312,
       .source = "NVIDIA A100 datasheet: 80 GB PCIe, NVLink bridge for 2 GPUs 600 GB/s (12 links), BF16 312 dense",
       .match = "a 100, pcie, 80 gb"},
      {.model = "A800 SXM4 80GB", .architecture = "Ampere", .compute_major = 8, .compute_minor = 0,
       .form = F::sxm, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 8, .nvlink_link_gbps = nv3,
       .memory_gb = 80, .dense_bf16_tflops = 312,
       .source = "NVIDIA A800 datasheet / Reuters 2022-11-07: an A100 with NVLink cut from 600 to 400 GB/s "
                 "bidirectional (8 links of 25 GB/s), compute unchanged (BF16 312 dense)",
       .match = "a 800, sxm, 80 gb"},
      {.model = "A800 PCIe 80GB", .architecture = "Ampere", .compute_major = 8, .compute_minor = 0,
       .form = F::pcie, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 8, .nvlink_link_gbps = nv3,
       .bridge_links = 8, .memory_gb = 80, .dense_bf16_tflops = 312,
       .source = "NVIDIA A800 datasheet: PCIe card with an NVLink bridge of 400 GB/s bidirectional (8 links), BF16 "
                 "312 dense",
       .match = "a 800, pcie, 80 gb"},
      {.model = "A800 40GB Active", .architecture = "Ampere", .compute_major = 8, .compute_minor = 0,
       .form = F::workstation, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 8, .nvlink_link_gbps = nv3,
       .bridge_links = 8, .memory_gb = 40, .dense_bf16_tflops = 312,
       .source = "NVIDIA A800 40GB Active datasheet: workstation GA100 card, 40 GB HBM2, 2-way NVLink bridge 400 "
                 "GB/s bidirectional (8 links), FP16/BF16 tensor 623.8 sparse (312 dense); not re-checked here",
       .match = "a 800, 40 gb, active"},
      {.model = "A30", .architecture = "Ampere", .compute_major = 8, .compute_minor = 0, .form = F::pcie,
       .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 4, .nvlink_link_gbps = nv3, .bridge_links = 4,
       .memory_gb = 24, .dense_bf16_tflops = 165,
       .source = "NVIDIA A30 datasheet: BF16 165 TFLOPS dense (330 sparse), 24 GB HBM2, PCIe Gen4, third-generation "
                 "NVLink bridge 200 GB/s bidirectional (4 links of 25 GB/s)",
       .match = "a 30"},
      {.model = "A40", .architecture = "Ampere", .compute_major = 8, .compute_minor = 6, .form = F::pcie,
       .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 4, .nvlink_link_gbps = ga102, .bridge_links = 4,
       .memory_gb = 48, .dense_bf16_tflops = 149.7,
       .source = "NVIDIA A40 datasheet / product brief PB-09976: NVLink 112.5 GB/s bidirectional (GA102: 4 links x "
                 "14.0625), PCIe Gen4 64 GB/s, 48 GB GDDR6, BF16 149.7 dense (299.4 sparse)",
       .match = "a 40"},
      {.model = "A10", .architecture = "Ampere", .compute_major = 8, .compute_minor = 6, .form = F::pcie,
       .pcie_gen = 4, .memory_gb = 24, .dense_bf16_tflops = 125,
       .source = "NVIDIA A10 datasheet: BF16 125 TFLOPS dense (250 sparse), 24 GB GDDR6, PCIe Gen4 x16, no NVLink; "
                 "the AWS A10G and A10M differ and are not included",
       .match = "a 10, !a 10 g, !a 10 m"},
      {.model = "A16", .architecture = "Ampere", .compute_major = 8, .compute_minor = 6, .form = F::pcie,
       .pcie_gen = 4, .memory_gb = 16, .dense_bf16_tflops = 0,
       .source = "NVIDIA A16 product brief PB-10518: four GPUs of 16 GB GDDR6 on one PCIe Gen4 x16 board (the x16 "
                 "is the board's, shared by its four GPUs); per-GPU tensor figure not sourced (third-party pages "
                 "disagree), so 0",
       .match = "a 16"},
      {.model = "A2", .architecture = "Ampere", .compute_major = 8, .compute_minor = 6, .form = F::pcie,
       .pcie_gen = 4, .pcie_width = 8, .memory_gb = 16, .dense_bf16_tflops = 18,
       .source = "NVIDIA A2 datasheet: FP16 tensor 18 TFLOPS dense (36 sparse), 16 GB GDDR6, PCIe Gen4 x8",
       .match = "a 2"},
      {.model = "GeForce RTX 3080", .architecture = "Ampere", .compute_major = 8, .compute_minor = 6,
       .form = F::consumer, .pcie_gen = 4, .pcie_p2p = false, .memory_gb = 10, .dense_bf16_tflops = 59.5,
       .source = "NVIDIA Ampere GA102 whitepaper: RTX 3080 FP16/BF16 tensor 59.5 TFLOPS with FP32 accumulate (119 "
                 "with FP16 accumulate), 10 GB, PCIe Gen4, no NVLink; no PCIe P2P on GeForce RTX 30",
       .match = "rtx 3080, !3080 ti"},
      {.model = "GeForce RTX 3090", .architecture = "Ampere", .compute_major = 8, .compute_minor = 6,
       .form = F::consumer, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 4, .nvlink_link_gbps = ga102,
       .bridge_links = 4, .pcie_p2p = false, .memory_gb = 24, .dense_bf16_tflops = 71,
       .source = "NVIDIA Ampere GA102 whitepaper: four x4 NVLinks of 14.0625 GB/s each way (112.5 GB/s total), BF16 "
                 "tensor 71 TFLOPS with FP32 accumulate (142 sparse); no PCIe P2P (Nanoflow#22)",
       .match = "rtx 3090, !3090 ti"},
      {.model = "GeForce RTX 3090 Ti", .architecture = "Ampere", .compute_major = 8, .compute_minor = 6,
       .form = F::consumer, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 4, .nvlink_link_gbps = ga102,
       .bridge_links = 4, .pcie_p2p = false, .memory_gb = 24, .dense_bf16_tflops = 0,
       .source = "NVIDIA GeForce RTX 3090 Ti specifications: 24 GB GDDR6X, PCIe Gen4, NVLink bridge as the GA102 "
                 "RTX 3090; tensor TFLOPS not in a sourced table, so 0; no PCIe P2P on GeForce RTX 30",
       .match = "3090 ti"},
      {.model = "RTX A6000", .architecture = "Ampere", .compute_major = 8, .compute_minor = 6,
       .form = F::workstation, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 4, .nvlink_link_gbps = ga102,
       .bridge_links = 4, .memory_gb = 48, .dense_bf16_tflops = 154.8,
       .source = "NVIDIA RTX A6000 datasheet: NVLink 112.5 GB/s bidirectional (4 x 14.0625), 48 GB GDDR6, PCIe "
                 "Gen4 x16, tensor 309.7 TFLOPS sparse (154.8 dense; GA102 whitepaper)",
       .match = "a 6000"},
      {.model = "RTX A5000", .architecture = "Ampere", .compute_major = 8, .compute_minor = 6,
       .form = F::workstation, .pcie_gen = 4, .nvlink_gen = 3, .nvlink_links = 4, .nvlink_link_gbps = ga102,
       .bridge_links = 4, .memory_gb = 24, .dense_bf16_tflops = 111.1,
       .source = "NVIDIA RTX A5000 datasheet: 2-way NVLink bridge 112.5 GB/s bidirectional, 24 GB GDDR6, PCIe Gen4 "
                 "x16, tensor 222.2 TFLOPS sparse (111.1 dense); not re-checked here",
       .match = "a 5000"},
      {.model = "RTX A4000", .architecture = "Ampere", .compute_major = 8, .compute_minor = 6,
       .form = F::workstation, .pcie_gen = 4, .memory_gb = 16, .dense_bf16_tflops = 76.7,
       .source = "NVIDIA RTX A4000 datasheet: single slot, no NVLink, 16 GB GDDR6, PCIe Gen4 x16, tensor 153.4 "
                 "TFLOPS sparse (76.7 dense); the A4000H is not included",
       .match = "a 4000, !4000 h"},
      // ---- Ada Lovelace ----
      {.model = "L4", .architecture = "Ada Lovelace", .compute_major = 8, .compute_minor = 9, .form = F::pcie,
       .pcie_gen = 4, .memory_gb = 24, .dense_bf16_tflops = 121,
       .source = "NVIDIA L4 datasheet: BF16 121 TFLOPS dense (242 sparse), 24 GB GDDR6, PCIe Gen4 x16, no NVLink",
       .match = "l 4"},
      {.model = "L40", .architecture = "Ada Lovelace", .compute_major = 8, .compute_minor = 9, .form = F::pcie,
       .pcie_gen = 4, .memory_gb = 48, .dense_bf16_tflops = 181.05,
       .source = "NVIDIA L40 datasheet: BF16 181.05 TFLOPS dense (362.1 sparse), 48 GB GDDR6, PCIe Gen4 x16, no "
                 "NVLink",
       .match = "l 40, !l 40 s"},
      {.model = "L40S", .architecture = "Ada Lovelace", .compute_major = 8, .compute_minor = 9, .form = F::pcie,
       .pcie_gen = 4, .memory_gb = 48, .dense_bf16_tflops = 362.05,
       .source = "NVIDIA L40S datasheet: BF16 362.05 TFLOPS dense (733 sparse), 48 GB GDDR6, PCIe Gen4 x16, no "
                 "NVLink",
       .match = "l 40 s"},
      {.model = "L20", .architecture = "Ada Lovelace", .compute_major = 8, .compute_minor = 9, .form = F::pcie,
       .pcie_gen = 4, .memory_gb = 48, .dense_bf16_tflops = 0,
       .source = "NVIDIA L20 (China part) as listed by spec databases: 48 GB GDDR6, PCIe 4.0 x16, 59.35 TFLOPS FP32 "
                 "(topcpu.net, technical.city); tensor figure not sourced, so 0",
       .match = "l 20"},
      {.model = "GeForce RTX 4080", .architecture = "Ada Lovelace", .compute_major = 8, .compute_minor = 9,
       .form = F::consumer, .pcie_gen = 4, .pcie_p2p = false, .memory_gb = 16, .dense_bf16_tflops = 97.5,
       .source = "NVIDIA Ada Lovelace architecture whitepaper: RTX 4080 FP16/BF16 tensor 97.5 TFLOPS with FP32 "
                 "accumulate, 16 GB, PCIe Gen4, no NVLink; no PCIe P2P on GeForce RTX 40; the 4080 SUPER is not "
                 "included",
       .match = "rtx 4080, !4080 super"},
      {.model = "GeForce RTX 4090", .architecture = "Ada Lovelace", .compute_major = 8, .compute_minor = 9,
       .form = F::consumer, .pcie_gen = 4, .pcie_p2p = false, .memory_gb = 24, .dense_bf16_tflops = 165.2,
       .source = "NVIDIA Ada Lovelace architecture whitepaper: RTX 4090 FP16/BF16 tensor 165.2 TFLOPS with FP32 "
                 "accumulate (330.3 with FP16 accumulate), 24 GB, PCIe Gen4, no NVLink; no PCIe P2P without "
                 "patched kernel modules (tinygrad/open-gpu-kernel-modules); the 4090 D is not included",
       .match = "rtx 4090, !4090 d"},
      {.model = "RTX 6000 Ada", .architecture = "Ada Lovelace", .compute_major = 8, .compute_minor = 9,
       .form = F::workstation, .pcie_gen = 4, .memory_gb = 48, .dense_bf16_tflops = 364.2,
       .source = "NVIDIA RTX 6000 Ada Generation datasheet (1457 TFLOPS FP8 sparse) and Ada whitepaper: FP16/BF16 "
                 "tensor 364.2 dense with FP32 accumulate, 48 GB GDDR6, PCIe Gen4 x16, no NVLink",
       .match = "rtx 6000 ada"},
      // ---- Hopper ----
      {.model = "H100 SXM5", .architecture = "Hopper", .compute_major = 9, .compute_minor = 0, .form = F::sxm,
       .pcie_gen = 5, .nvlink_gen = 4, .nvlink_links = 18, .nvlink_link_gbps = nv4, .memory_gb = 80,
       .dense_bf16_tflops = 989,
       .source = "NVIDIA H100 datasheet: SXM BF16 1979 TFLOPS sparse (989 dense), NVLink 900 GB/s bidirectional = "
                 "18 links x 25 GB/s each way (nvidia-smi nvlink -s shows 26.562, the signalling rate), PCIe Gen5; "
                 "the driver prints 'NVIDIA H100 80GB HBM3'",
       .match = "h 100, hbm 3|sxm, !pcie, !nvl"},
      {.model = "H100 PCIe", .architecture = "Hopper", .compute_major = 9, .compute_minor = 0, .form = F::pcie,
       .pcie_gen = 5, .nvlink_gen = 4, .nvlink_links = 12, .nvlink_link_gbps = nv4, .bridge_links = 12,
       .memory_gb = 80, .dense_bf16_tflops = 756,
       .source = "NVIDIA H100 datasheet: PCIe BF16 1513 TFLOPS sparse (756 dense), 80 GB, PCIe Gen5 x16, NVLink "
                 "bridge 600 GB/s bidirectional (12 links)",
       .match = "h 100, pcie"},
      {.model = "H100 NVL", .architecture = "Hopper", .compute_major = 9, .compute_minor = 0, .form = F::pcie,
       .pcie_gen = 5, .nvlink_gen = 4, .nvlink_links = 12, .nvlink_link_gbps = nv4, .bridge_links = 12,
       .memory_gb = 94, .dense_bf16_tflops = 835,
       .source = "NVIDIA H100 datasheet: H100 NVL 94 GB, BF16 1671 TFLOPS sparse (835 dense), PCIe Gen5 x16, NVLink "
                 "bridge 600 GB/s bidirectional (12 links)",
       .match = "h 100, nvl"},
      {.model = "H800 SXM5", .architecture = "Hopper", .compute_major = 9, .compute_minor = 0, .form = F::sxm,
       .pcie_gen = 5, .nvlink_gen = 4, .nvlink_links = 8, .nvlink_link_gbps = nv4, .memory_gb = 80,
       .dense_bf16_tflops = 989,
       .source = "NVIDIA H800 (China part): H100 SXM with NVLink cut to 400 GB/s bidirectional (8 links; NV8 in "
                 "../shared/corpus/topo/nccl-933_*), BF16 as the H100 SXM (989 dense); the driver prints "
                 "'NVIDIA H800'; H800 PCIe and NVL are not included",
       .match = "h 800, !pcie, !nvl"},
      {.model = "H20", .architecture = "Hopper", .compute_major = 9, .compute_minor = 0, .form = F::sxm,
       .pcie_gen = 5, .nvlink_gen = 4, .nvlink_links = 18, .nvlink_link_gbps = nv4, .memory_gb = 96,
       .dense_bf16_tflops = 148,
       .source = "NVIDIA H20 (China part) as published by resellers (willitrunai.com/gpus/h20-96gb): 96 GB HBM3, "
                 "FP16/BF16 148 TFLOPS dense, NVLink 900 GB/s, PCIe Gen5; H20-3e and H20 NVL16 are not included",
       .match = "h 20, !h 20 3, !nvl"},
      {.model = "H200 SXM", .architecture = "Hopper", .compute_major = 9, .compute_minor = 0, .form = F::sxm,
       .pcie_gen = 5, .nvlink_gen = 4, .nvlink_links = 18, .nvlink_link_gbps = nv4, .memory_gb = 141,
       .dense_bf16_tflops = 989,
       .source = "NVIDIA H200 datasheet: SXM 141 GB HBM3e, BF16 1979 TFLOPS sparse (989 dense), NVLink 900 GB/s "
                 "(18 links), PCIe Gen5; the driver prints 'NVIDIA H200' (the anchors machine, ../shared/anchors.md)",
       .match = "h 200, !nvl"},
      {.model = "H200 NVL", .architecture = "Hopper", .compute_major = 9, .compute_minor = 0, .form = F::pcie,
       .pcie_gen = 5, .nvlink_gen = 4, .nvlink_links = 18, .nvlink_link_gbps = nv4, .bridge_links = 18,
       .memory_gb = 141, .dense_bf16_tflops = 835,
       .source = "NVIDIA H200 datasheet: NVL 141 GB, BF16 1671 TFLOPS sparse (835 dense), 2- or 4-way NVLink bridge "
                 "900 GB/s per GPU (18 links; a 4-way bridge spreads them over 3 peers), PCIe Gen5 x16",
       .match = "h 200, nvl"},
      {.model = "GH200 96GB", .architecture = "Hopper", .compute_major = 9, .compute_minor = 0,
       .form = F::superchip, .pcie_gen = 0, .pcie_width = 0, .nvlink_gen = 4, .nvlink_links = 18,
       .nvlink_link_gbps = nv4, .memory_gb = 96, .dense_bf16_tflops = 989,
       .source = "NVIDIA GH200 Grace Hopper datasheet: H100 GPU with 96 GB HBM3, BF16 989 dense, NVLink 900 GB/s to "
                 "other superchips, NVLink-C2C (not PCIe) to Grace; the driver names it by the CPU memory: 'GH200 "
                 "480GB' and 'GH200 120GB' (device 2342)",
       .match = "gh 200, 480 gb|120 gb|96 gb"},
      {.model = "GH200 144GB", .architecture = "Hopper", .compute_major = 9, .compute_minor = 0,
       .form = F::superchip, .pcie_gen = 0, .pcie_width = 0, .nvlink_gen = 4, .nvlink_links = 18,
       .nvlink_link_gbps = nv4, .memory_gb = 144, .dense_bf16_tflops = 989,
       .source = "NVIDIA GH200 datasheet: the 144 GB HBM3e version ('GH200 144G HBM3e', device 2348), otherwise as "
                 "the 96 GB one",
       .match = "gh 200, 144"},
      // ---- Blackwell ----
      {.model = "B100", .architecture = "Blackwell", .compute_major = 10, .compute_minor = 0, .form = F::sxm,
       .pcie_gen = 5, .nvlink_gen = 5, .nvlink_links = 18, .nvlink_link_gbps = nv5, .memory_gb = 192,
       .dense_bf16_tflops = 1750,
       .source = "NVIDIA HGX B100 specifications (GTC 2024): FP16/BF16 28 PFLOPS sparse per 8 GPUs (1750 dense "
                 "each), up to 1.5 TB (192 GB each), NVLink 1.8 TB/s per GPU (18 x 50 GB/s each way), drop-in for "
                 "HGX H100 (PCIe Gen5) hosts; not re-checked here",
       .match = "b 100"},
      {.model = "B200", .architecture = "Blackwell", .compute_major = 10, .compute_minor = 0, .form = F::sxm,
       .pcie_gen = 5, .nvlink_gen = 5, .nvlink_links = 18, .nvlink_link_gbps = nv5, .memory_gb = 180,
       .dense_bf16_tflops = 2250,
       .source = "NVIDIA HGX B200 datasheet: FP16/BF16 36 PFLOPS sparse per 8 GPUs (2250 dense each, "
                 "glennklockwood.com/garden/processors/B200), 1.4 TB (180 GB each), NVLink 1.8 TB/s per GPU (18 x "
                 "50 GB/s; topo NV18); the GPU can run PCIe Gen6 but HGX B200 hosts are Gen5",
       .match = "b 200"},
      {.model = "B300", .architecture = "Blackwell", .compute_major = 10, .compute_minor = 3, .form = F::sxm,
       .pcie_gen = 6, .nvlink_gen = 5, .nvlink_links = 18, .nvlink_link_gbps = nv5, .memory_gb = 288,
       .dense_bf16_tflops = 2250,
       .source = "NVIDIA HGX B300 specifications: FP16/BF16 36 PFLOPS sparse per 8 GPUs (2250 dense each, "
                 "glennklockwood.com/garden/processors/B300), 2.3 TB (288 GB each), NVLink 1.8 TB/s, PCIe Gen6; the "
                 "driver prints 'NVIDIA B300 SXM6 AC'",
       .match = "b 300"},
      {.model = "GB200", .architecture = "Blackwell", .compute_major = 10, .compute_minor = 0,
       .form = F::superchip, .pcie_gen = 0, .pcie_width = 0, .nvlink_gen = 5, .nvlink_links = 18,
       .nvlink_link_gbps = nv5, .memory_gb = 186, .dense_bf16_tflops = 2500,
       .source = "NVIDIA GB200 NVL72 datasheet: 13.4 TB HBM3e over 72 GPUs (186 GB each), NVLink 1.8 TB/s per GPU, "
                 "NVLink-C2C (not PCIe) to Grace; BF16 2500 dense for the 1200 W GB200 variant of B200 "
                 "(glennklockwood.com/garden/processors/B200)",
       .match = "gb 200"},
      {.model = "GeForce RTX 5080", .architecture = "Blackwell", .compute_major = 12, .compute_minor = 0,
       .form = F::consumer, .pcie_gen = 5, .pcie_p2p = false, .memory_gb = 16, .dense_bf16_tflops = 112.6,
       .source = "NVIDIA GeForce RTX 5080 specifications: 16 GB GDDR7, PCIe Gen5, no NVLink, 1801 AI TOPS (FP4, "
                 "sparse); dense FP16/BF16 with FP32 accumulate derived as 1801 / 16, the ratio the RTX 5090's "
                 "3352 AI TOPS to 209.5 shows; no PCIe P2P on GeForce RTX 50",
       .match = "rtx 5080"},
      {.model = "GeForce RTX 5090", .architecture = "Blackwell", .compute_major = 12, .compute_minor = 0,
       .form = F::consumer, .pcie_gen = 5, .pcie_p2p = false, .memory_gb = 32, .dense_bf16_tflops = 209.5,
       .source = "NVIDIA RTX Blackwell whitepaper / GeForce RTX 5090 specifications: 32 GB GDDR7, PCIe Gen5 x16, no "
                 "NVLink, FP16 tensor 838 TFLOPS sparse with FP16 accumulate, 209.5 dense with FP32 accumulate "
                 "(codesota.com/hardware/rtx-5090); no PCIe P2P without patched kernel modules "
                 "(aikitoria/open-gpu-kernel-modules); the 5090 D is not included",
       .match = "rtx 5090, !5090 d"},
      {.model = "RTX PRO 6000 Blackwell", .architecture = "Blackwell", .compute_major = 12, .compute_minor = 0,
       .form = F::workstation, .pcie_gen = 5, .memory_gb = 96, .dense_bf16_tflops = 0,
       .source = "NVIDIA RTX PRO 6000 Blackwell datasheet: 96 GB GDDR7, PCIe Gen5 x16, no NVLink, 4000 AI TOPS (FP4, "
                 "sparse); dense BF16 not published, so 0; Workstation and Server Edition match, the 300 W Max-Q "
                 "does not",
       .match = "rtx pro 6000"},
      {.model = "GB10", .architecture = "Blackwell", .compute_major = 12, .compute_minor = 1,
       .form = F::superchip, .pcie_gen = 0, .pcie_width = 0, .memory_gb = 128, .dense_bf16_tflops = 0,
       .source = "NVIDIA DGX Spark: GB10 superchip, 128 GB unified LPDDR5X, NVLink-C2C to the CPU (no PCIe link of "
                 "its own, no GPU-to-GPU NVLink), 2 x ConnectX-7 200 GbE between units, 1 PFLOP FP4 with sparsity; "
                 "dense BF16 not published, so 0",
       .match = "gb 10"},
  };
}

// ---- name matching ----

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Lower-cased runs of letters and runs of digits; everything else separates.
std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  int kind = 0;  // 0 none, 1 letters, 2 digits
  for (char c : text) {
    const int k = is_alpha(c) ? 1 : is_digit(c) ? 2 : 0;
    if (k != kind && !cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
    kind = k;
    if (k == 1) cur.push_back(static_cast<char>(c | 0x20));
    if (k == 2) cur.push_back(c);
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool has_phrase(const std::vector<std::string>& name, const std::vector<std::string>& phrase) {
  if (phrase.empty() || phrase.size() > name.size()) return false;
  for (std::size_t i = 0; i + phrase.size() <= name.size(); ++i)
    if (std::equal(phrase.begin(), phrase.end(), name.begin() + static_cast<std::ptrdiff_t>(i))) return true;
  return false;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// One clause: "a|b|c" (one must appear) or "!a|b" (none may appear).
bool clause_holds(const std::vector<std::string>& name, std::string_view clause) {
  clause = trim(clause);
  const bool negated = !clause.empty() && clause.front() == '!';
  if (negated) clause.remove_prefix(1);
  bool any = false;
  for (std::string_view phrase : split(clause, '|'))
    if (has_phrase(name, tokenize(phrase))) any = true;
  return negated ? !any : any;
}

bool rule_holds(const std::vector<std::string>& name, std::string_view rule) {
  for (std::string_view alternative : split(rule, ';')) {
    bool all = !trim(alternative).empty();
    for (std::string_view clause : split(alternative, ','))
      if (!clause_holds(name, clause)) {
        all = false;
        break;
      }
    if (all) return true;
  }
  return false;
}

// Variants whose figures are not the board's: laptop and Max-Q parts, embedded modules, MIG slices.
constexpr std::string_view kNotABoard = "laptop|max q|mobile|embedded|mig";

// ---- networks ----

// InfiniBand rates per 4x port: InfiniBand Trade Association, as tabulated by
// advancedclustering.com/act_kb/infiniband-types-speeds and infiniband.jp/2022/06/01 (signalling rate, line
// code and data rate per generation); HDR100/NDR200 are 2-lane ports of HDR/NDR. Ethernet: the IEEE 802.3
// clause named in each row, whose nominal speed is the data rate.
#define SCALESCOPE_IB_SOURCE "InfiniBand Trade Association rates (advancedclustering.com, infiniband.jp): "
const std::vector<NicSpec>& nic_rows() {
  static const std::vector<NicSpec> rows = {
      {"InfiniBand SDR", "InfiniBand", 10, 8, SCALESCOPE_IB_SOURCE "SDR 4x, 10 Gb/s signalling, 8b/10b, 8 Gb/s data"},
      {"InfiniBand DDR", "InfiniBand", 20, 16, SCALESCOPE_IB_SOURCE "DDR 4x, 20 Gb/s, 8b/10b, 16 Gb/s data"},
      {"InfiniBand QDR", "InfiniBand", 40, 32, SCALESCOPE_IB_SOURCE "QDR 4x, 40 Gb/s, 8b/10b, 32 Gb/s data"},
      {"InfiniBand FDR", "InfiniBand", 56, 4 * 14.0625 * 64 / 66,
       SCALESCOPE_IB_SOURCE "FDR 4x, 4 x 14.0625 Gb/s, 64b/66b, 54.5 Gb/s data"},
      {"InfiniBand EDR", "InfiniBand", 100, 100, SCALESCOPE_IB_SOURCE "EDR 4x, 4 x 25.78125 Gb/s, 64b/66b, 100 Gb/s"},
      {"InfiniBand HDR100", "InfiniBand", 100, 100, SCALESCOPE_IB_SOURCE "HDR100, a 2-lane HDR port, 100 Gb/s"},
      {"InfiniBand HDR", "InfiniBand", 200, 200, SCALESCOPE_IB_SOURCE "HDR 4x, 4 x 53.125 Gb/s PAM4, 200 Gb/s"},
      {"InfiniBand NDR200", "InfiniBand", 200, 200, SCALESCOPE_IB_SOURCE "NDR200, a 2-lane NDR port, 200 Gb/s"},
      {"InfiniBand NDR", "InfiniBand", 400, 400, SCALESCOPE_IB_SOURCE "NDR 4x, 4 x 106.25 Gb/s PAM4, 400 Gb/s"},
      {"InfiniBand XDR", "InfiniBand", 800, 800,
       SCALESCOPE_IB_SOURCE "XDR 4x, 800 Gb/s (IBTA roadmap; NVIDIA Quantum-X800 switches, ConnectX-8)"},
      {"Ethernet 1G", "Ethernet", 1, 1, "IEEE 802.3ab/z 1000BASE-T/X"},
      {"Ethernet 10G", "Ethernet", 10, 10, "IEEE 802.3ae 10GBASE-R (64b/66b, 10 Gb/s data)"},
      {"Ethernet 25G", "Ethernet", 25, 25, "IEEE 802.3by 25GBASE-R"},
      {"Ethernet 40G", "Ethernet", 40, 40, "IEEE 802.3ba 40GBASE-R4"},
      {"Ethernet 50G", "Ethernet", 50, 50, "IEEE 802.3cd 50GBASE-R"},
      {"Ethernet 100G", "Ethernet", 100, 100, "IEEE 802.3ba/bm/cd 100GBASE-R"},
      {"Ethernet 200G", "Ethernet", 200, 200, "IEEE 802.3bs/cd 200GBASE-R"},
      {"Ethernet 400G", "Ethernet", 400, 400, "IEEE 802.3bs/ck 400GBASE-R"},
      {"Ethernet 800G", "Ethernet", 800, 800, "IEEE 802.3df 800GBASE-R"},
  };
  return rows;
}
#undef SCALESCOPE_IB_SOURCE

std::string fmt_gbps(double v) { return fmt::format("{:.4g}", v); }
// A result: whole GB/s from 100 up, one decimal below.
std::string fmt_result(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v); }

}  // namespace

std::span<const GpuSpec> gpu_table() {
  static const std::vector<GpuSpec> table = build_gpu_table();
  return table;
}

const GpuSpec* find_gpu(std::string_view product_name) {
  const std::vector<std::string> name = tokenize(product_name);
  if (name.empty() || clause_holds(name, kNotABoard)) return nullptr;
  const GpuSpec* found = nullptr;
  for (const GpuSpec& g : gpu_table()) {
    if (!rule_holds(name, g.match)) continue;
    if (found) return nullptr;  // two entries fit: ambiguous, do not guess
    found = &g;
  }
  return found;
}

std::span<const NicSpec> nic_table() { return nic_rows(); }

const NicSpec* find_nic(double line_gbit, bool infiniband) {
  if (!(line_gbit > 0)) return nullptr;
  const std::string_view kind = infiniband ? "InfiniBand" : "Ethernet";
  for (const NicSpec& n : nic_rows())
    if (n.kind == kind && std::abs(n.line_gbit - line_gbit) <= 0.01 * n.line_gbit) return &n;
  return nullptr;
}

double nic_busbw_gbps(double line_gbit) { return line_gbit > 0 ? line_gbit / 8 * kNicBusbwEfficiency : 0; }

PathCeiling expected_path_busbw(const GpuSpec* gpu, const Link& link) {
  const std::string who = gpu ? fmt::format("between {}", gpu->model) : "between GPUs of an unknown model";
  const std::string token = to_string(link);
  switch (link.cls) {
    case LinkClass::self: return {0, "X: the same GPU, no transfer"};
    case LinkClass::unknown: return {0, "path class not read: no ceiling"};
    case LinkClass::nvlink: {
      if (link.nvlinks <= 0) return {0, "NVLink without a link count: no ceiling"};
      double per = kAssumedNvlinkGbps;
      std::string note;
      if (!gpu)
        note = fmt::format(" ({} GB/s per link assumed)", fmt_gbps(per));
      else if (gpu->nvlink_link_gbps > 0)
        per = gpu->nvlink_link_gbps;
      else
        note = fmt::format(" (no NVLink in the table for this model; {} GB/s per link assumed)", fmt_gbps(per));
      const double gbps = link.nvlinks * per * kNvlinkShare;
      return {gbps, fmt::format("{} {}{}: {} link{} × {} GB/s × {:.2f} (the share NCCL reaches on NVLink) ≈ {} "
                                "GB/s",
                                token, who, note, link.nvlinks, link.nvlinks == 1 ? "" : "s", fmt_gbps(per),
                                kNvlinkShare, fmt_result(gbps))};
    }
    case LinkClass::pix:
    case LinkClass::pxb:
    case LinkClass::phb:
    case LinkClass::node:
    case LinkClass::sys: break;
  }
  int gen = kAssumedPcieGen, width = kAssumedPcieWidth;
  std::string note;
  if (!gpu)
    note = fmt::format(" (PCIe Gen{} x{} assumed)", gen, width);
  else if (gpu->pcie_gen > 0 && gpu->pcie_width > 0) {
    gen = gpu->pcie_gen;
    width = gpu->pcie_width;
  } else
    note = fmt::format(" (no PCIe link of its own in the table; Gen{} x{} assumed)", gen, width);
  const double line = pcie_link_gbps(gen, width);
  const bool p2p = gpu ? gpu->pcie_p2p : true;
  if (!p2p) {
    const double gbps = line * kSysFactor * kPcieShare;
    return {gbps, fmt::format("{} {}{}: no PCIe peer-to-peer on this model, so NCCL stages through host memory "
                              "(SHM): PCIe Gen{} x{} {:.1f} GB/s × {:.2f} × {:.2f} (the share NCCL reaches) ≈ "
                              "{:.1f} GB/s",
                              token, who, note, gen, width, line, kSysFactor, kPcieShare, gbps)};
  }
  const double factor = path_factor(link.cls);
  std::string_view why;
  switch (link.cls) {
    case LinkClass::pix:
    case LinkClass::pxb: why = "through PCIe switches"; break;
    case LinkClass::phb: why = "through the CPU's root complex, NCCL's 6/5 penalty"; break;
    case LinkClass::node: why = "between host bridges of one socket, as PHB"; break;
    default: why = "staged through host memory across sockets"; break;
  }
  const double gbps = line * factor * kPcieShare;
  return {gbps, fmt::format("{} {}{}: PCIe Gen{} x{} {:.1f} GB/s × {:.2f} ({}) × {:.2f} (the share NCCL reaches) ≈ "
                            "{:.1f} GB/s",
                            token, who, note, gen, width, line, factor, why, kPcieShare, gbps)};
}

PathCeiling expected_network_busbw(int nics_per_node, double line_gbit) {
  if (nics_per_node <= 0 || !(line_gbit > 0))
    return {0, fmt::format("no network ceiling: {} port(s) of {} Gb/s", nics_per_node, fmt_gbps(line_gbit))};
  const double per = nic_busbw_gbps(line_gbit);
  const double gbps = nics_per_node * per;
  return {gbps, fmt::format("{} × {} Gb/s port{}: {} / 8 × {:.2f} = {:.1f} GB/s each (NCCL's ~12 GB/s per 100 Gb/s) "
                            "≈ {} GB/s",
                            nics_per_node, fmt_gbps(line_gbit), nics_per_node == 1 ? "" : "s", fmt_gbps(line_gbit),
                            kNicBusbwEfficiency, per, fmt_result(gbps))};
}

PathCeiling expected_network_busbw(int nics_per_node, const NicSpec& nic) {
  if (nics_per_node <= 0 || !(nic.data_gbit > 0))
    return {0, fmt::format("no network ceiling: {} port(s) of {}", nics_per_node, nic.name)};
  const double per = nic_busbw_gbps(nic.data_gbit);
  const double gbps = nics_per_node * per;
  return {gbps, fmt::format("{} × {} ({} Gb/s data): {} / 8 × {:.2f} = {:.1f} GB/s each ≈ {} GB/s",
                            nics_per_node, nic.name, fmt_gbps(nic.data_gbit), fmt_gbps(nic.data_gbit),
                            kNicBusbwEfficiency, per, fmt_result(gbps))};
}

}  // namespace scalescope::topo
