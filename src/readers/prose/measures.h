#pragma once
// The measurements and mentions of one sentence of prose, by a grammar of the field rather than phrases of cases:
//  - figures: a number (or a range "40-50", its middle taken) with a unit of time (ms, s, min, h), rate (it/s, s/it,
//    samples/s, images/s, tokens/s), bandwidth (GB/s, MB/s; Gb/s is a network line rate) or share (%), named by the
//    words around it: step / iteration / batch time, epoch time, run time, busbw, algbw, bandwidth, GPU utilisation,
//    communication share;
//  - its condition: the GPU (or process) count the sentence gives nearest to it ("with 1 GPU", "on 2 GPUs",
//    "8 processes", "2x RTX 2080 Ti", "single GPU"), kept as dims["gpus"] so that rows of different counts compare
//    as scaling (diagnose/variants.h);
//  - speedups stated as such ("1.13x faster with 2 GPUs", "no speedup", "not faster", "2x slower on 4 GPUs") as a
//    ScalingPoint at that count;
//  - models by name (knowledge/models.h: "BERT-base", "resnet50", "Llama-2-7b" …) with their parameter counts;
//  - links ("NVLink", "no NVLink", "PCIe", "10 Gbps Ethernet", "InfiniBand") as Claim{"link", …} and stated network
//    rates as NicSeen;
//  - batch sizes and precision; training-code words in prose (DataParallel, .item(), cudaStreamSynchronize with its
//    time, num_workers=0, find_unused_parameters=True, torch.compile) as CodeUse / HostSync facts.
// Facts go to `out` with `where` as provenance. Pure; never throws.

#include <optional>
#include <string>
#include <string_view>

#include "facts/facts.h"

namespace scalescope::analyze {

/// What earlier sentences of one text said, for the later ones: what its times measured ("epoch time"), for a time with
/// no noun of its own ("… it also takes 21 seconds"); the GPU count the text gave last, for a bandwidth of a
/// collective stated without one ("the algbw is about 250 GB/s" after "8 H100s").
struct MeasureState {
  std::string last_time_quantity;
  std::optional<int> last_gpu_count;
  std::string last_bw_quantity;   ///< "busbw" or "algbw": what the text's last named bandwidth was
  /// GPUs per machine as the text gave them ("2 servers, each with 4 GPUs"): machines a later figure names are GPUs.
  std::optional<int> gpus_per_machine;
  /// The text runs nccl-tests (all_reduce_perf …): a bandwidth it states at a GPU count is that test's bus bandwidth.
  bool tests_text = false;
};

/// Reads one sentence; `state` (optional) carries what earlier sentences said and is updated.
void read_sentence_measures(std::string_view sentence, const diagnose::Provenance& where, diagnose::FactSet& out,
                            MeasureState* state = nullptr);

}  // namespace scalescope::analyze
