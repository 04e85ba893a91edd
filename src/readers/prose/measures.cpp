#include "readers/prose/measures.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "knowledge/models.h"
#include "readers/prose/sentence_numbers.h"

namespace scalescope::analyze {
namespace {

/// Whether the words just before `pos` (30 characters) make the figure there a goal, not a result: "hoping for a 3.8x
/// speedup", "the goal is to get 90%", "we aim for 90%", "our objective: 90%", "we need at least 90%", "we want 90%".
bool goal_before(const std::string& s, std::size_t pos) {
  const std::string b = s.substr(pos > 30 ? pos - 30 : 0, pos > 30 ? 30 : pos);
  for (const char* w : {"goal is", "our goal", "my goal", "the goal", "target is", "targeting", "target of", "aim to", "aim for",
                        "aiming", "want to get", "want to reach", "hope to", "hoping", "hope for", "would like", "objective",
                        "need at least", "we want", "i want", "expecting", "expect to", "should get", "should reach"})
    if (b.find(w) != std::string::npos) return true;
  return false;
}

/// The first match of `re` in `s` that is no goal (goal_before); false when every match is one.
bool search_result(const std::string& s, const std::regex& re, std::smatch& m) {
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it)
    if (!goal_before(s, static_cast<std::size_t>(it->position(0)))) {
      m = *it;
      return true;
    }
  return false;
}

using namespace sentence;
using diagnose::Claim;
using diagnose::CodeUse;
using diagnose::Measurement;

}  // namespace

// Longest sentence and word the grammar reads (read_sentence_measures).
constexpr std::size_t kMaxSentenceBytes = 4000, kMaxTokenBytes = 160;

void read_sentence_measures(std::string_view sentence, const diagnose::Provenance& where, diagnose::FactSet& out,
                            MeasureState* state) {
  std::string* last_time_quantity = state ? &state->last_time_quantity : nullptr;
  try {
    // Runs of blanks as one blank. A "sentence" of thousands of characters, or with a word of hundreds, is no
    // sentence a person wrote (pasted data, padding): the grammar's regular expressions (std::regex, which recurses
    // per character) are not run on it.
    std::string collapsed;
    collapsed.reserve(sentence.size());
    std::size_t token = 0, longest = 0;
    for (const char c : sentence) {
      const bool blank = c == ' ' || c == '\t' || c == '\r' || c == '\n';
      if (blank) {
        token = 0;
        if (!collapsed.empty() && collapsed.back() == ' ') continue;
        collapsed += ' ';
      } else {
        longest = std::max(longest, ++token);
        collapsed += c;
      }
    }
    if (collapsed.size() > kMaxSentenceBytes || longest > kMaxTokenBytes) return;
    sentence = collapsed;
    const std::string raw(sentence);
    const std::string s = lower(sentence);
    const auto cs = counts(s, state);
    if (state)
      for (const auto& c : cs)
        if (c.n >= 1) state->last_gpu_count = c.n;
    // The sentence speaks of a collective: a bandwidth in it is the collective's (busbw unless it says algbw).
    const bool collective = has(s, "allreduce") || has(s, "all-reduce") || has(s, "all_reduce") || word(s, "ar") ||
                            has(s, "nccl") || has(s, "nvls") || has(s, "all_gather") || has(s, "allgather") ||
                            has(s, "reduce_scatter") || has(s, "bus bw") || has(s, "busbw") || has(s, "algbw");
    if (state && (has(s, "_perf") || has(s, "nccl-tests") || has(s, "nccl tests"))) state->tests_text = true;

    // ---- models ----
    for (const auto& m : knowledge::models_in_text(raw)) {
      diagnose::ModelSeen seen;
      seen.name = m.model->name;
      seen.parameters = m.model->params;
      out.add(std::move(seen), where);
    }
    // ---- a model's size without its name: "a ~1.2 B-parameter policy", "1.3 billion parameters", "a 7B model",
    // "350M params" — what its gradients weigh ----
    {
      static const std::regex size_re(
          R"((?:^|[^a-z0-9.])(\d{1,4}(?:\.\d{1,3})?)\s?(b|bn|billion|m|million)[\s-]{0,2}(?:parameters?|params?|parameter)\b|(?:^|[^a-z0-9.-])(\d{1,4}(?:\.\d{1,3})?)(b|m)\s(?:model|llm|network|transformer|policy)\b)");
      std::smatch zm;
      // (The regex needs one of these words: a sentence without them is not searched.)
      const bool size_words = has(s, "param") || has(s, "model") || has(s, "llm") || has(s, "network") ||
                              has(s, "transformer") || has(s, "policy");
      if (size_words && std::regex_search(s, zm, size_re)) {
        const bool first = zm[1].matched;
        const double v = std::stod(first ? zm[1].str() : zm[3].str());
        const std::string u = first ? zm[2].str() : zm[4].str();
        const double params = v * (u[0] == 'b' ? 1e9 : 1e6);
        if (params >= 1e6 && params <= 2e12) {
          diagnose::ModelSeen seen;
          seen.parameters = params;
          out.add(std::move(seen), where);
        }
      }
    }
    // ---- a GPU named without a count ("all_reduce_perf in H100", "on our A100 server") ----
    {
      static const std::regex gpu_re(R"(\b(gh200|gb200|h100|h200|h800|h20|a100|a800|a10g|a10|a30|a40|a6000|v100|p100|t4|l4|l40s|l40|b200|b100|rtx ?[2-5]0[5-9]0( ?ti)?|gtx ?10[5-8]0( ?ti)?)\b( ?(sxm[0-9]?|pcie|pci-e|nvl)\b)?)");
      std::smatch gm;
      // A GPU named as the thing compared with ("little difference compared to 8×RTX 4090 GPUs") is not the job's.
      static const std::regex compared(R"((compared (to|with)|than|versus|\bvs\.?|similar to)\s+\S*\s*$)");
      if (std::regex_search(s, gm, gpu_re) &&
          !std::regex_search(s.substr(0, static_cast<std::size_t>(gm.position(0))), compared)) {
        std::string name = raw.substr(static_cast<std::size_t>(gm.position(0)), static_cast<std::size_t>(gm.length(0)));
        out.add(diagnose::GpuSeen{name, std::nullopt, std::nullopt, std::nullopt, std::nullopt}, where);
      }
    }
    // ---- precision ----
    for (auto [w, v] : {std::pair{"bf16", "bf16"}, {"bfloat16", "bf16"}, {"fp16", "fp16"}, {"float16", "fp16"},
                        {"mixed precision", "fp16"}, {"amp", "fp16"}, {"fp32", "fp32"}, {"float32", "fp32"}})
      if (word(s, w)) {
        out.add(Claim{"precision", v}, where);
        break;
      }
    // ---- batch ----
    {
      static const std::regex re(R"((?:batch[ _-]?size|bs|per[ _-]device[ _-]train[ _-]batch[ _-]size|batch of)\s*(?:of|=|:|is)?\s*(\d{1,5}))");
      std::smatch m;
      if (std::regex_search(s, m, re)) {
        diagnose::BatchSize b;
        const double v = std::stod(m[1].str());
        if (has(s, "global") || has(s, "total batch") || has(s, "effective")) b.global = v;
        else b.per_device = v;
        out.add(b, where);
      }
    }
    // ---- links ----
    const bool negated_nvlink = has(s, "no nvlink") || has(s, "without nvlink") || has(s, "nvlink is not") ||
                                has(s, "not connected by nvlink") || has(s, "nvlink inactive") || has(s, "<inactive>") ||
                                has(s, "no nv-link") || has(s, "don't have nvlink") || has(s, "do not have nvlink") ||
                                has(s, "doesn't have nvlink") || has(s, "without an nvlink") || has(s, "no nvlink bridge");
    if (negated_nvlink) out.add(Claim{"link", "no-nvlink"}, where);
    else if (word(s, "nvlink") || word(s, "nvswitch")) out.add(Claim{"link", word(s, "nvswitch") ? "nvswitch" : "nvlink"}, where);
    if (word(s, "pcie") || word(s, "pci-e") || word(s, "pci express")) out.add(Claim{"link", "pcie"}, where);
    if (word(s, "infiniband") || word(s, "ib") || word(s, "roce") || word(s, "rdma")) out.add(Claim{"link", "infiniband"}, where);
    if (word(s, "ethernet") || word(s, "tcp") || word(s, "gbe")) out.add(Claim{"link", "ethernet"}, where);

    // ---- resources in words ----
    // The CPU saturated: "one CPU is stuck at 100%", "CPU usage is maxed out", "the CPU is the bottleneck".
    if ((word(s, "cpu") || word(s, "cpus") || word(s, "core") || word(s, "cores")) &&
        (has(s, "100%") || has(s, "100 %") || has(s, "maxed") || has(s, "saturat") || has(s, "pegged") ||
         has(s, "bottleneck") || has(s, "fully used") || has(s, "fully loaded") || has(s, "full load")) &&
        !has(s, "gpu is the bottleneck"))
      out.add(Claim{"cpu-saturated", ""}, where);
    // The GPUs underused: "GPU utilization is very low", "low GPU util", "GPUs are idle most of the time".
    if ((word(s, "gpu") || word(s, "gpus") || word(s, "utilization") || word(s, "utilisation") || word(s, "util")) &&
        (has(s, "util") || has(s, "idle") || has(s, "usage")) &&
        (has(s, "low") || has(s, "idle") || has(s, "drops") || has(s, "fluctuat") || has(s, "not fully") ||
         has(s, "underutil") || has(s, "under-util")) &&
        !has(s, "not low"))
      out.add(Claim{"gpu-underused", ""}, where);
    // Data loading named as a suspect or a wait: "waiting for the dataloader", "data loading is slow".
    if ((has(s, "dataloader") || has(s, "data loader") || has(s, "data loading") || has(s, "augmentation") ||
         has(s, "preprocessing") || has(s, "i/o") || word(s, "io") || has(s, "disk")) &&
        (has(s, "slow") || has(s, "wait") || has(s, "bottleneck") || has(s, "stall") || has(s, "long")))
      out.add(Claim{"input-suspected", ""}, where);
    // Poor scaling said in words ("scales poorly across nodes", "does not scale"): slower than it should be.
    if ((has(s, "scales poorly") || has(s, "scale poorly") || has(s, "scaling poorly") || has(s, "poor scaling") ||
         has(s, "doesn't scale") || has(s, "does not scale") || has(s, "scales badly") || has(s, "scale badly") ||
         has(s, "bad scaling") || has(s, "scales far worse") || has(s, "scales much worse") || has(s, "scales worse")) &&
        !has(s, "not poor"))
      out.add(Claim{"slow", "poor scaling, as the text says"}, where);
    // DDP spoken of as something to try: the job runs without it ("Will DDP improve …?", "should I switch to DDP").
    if ((has(s, "will ddp") || has(s, "would ddp") || has(s, "should i use ddp") || has(s, "switch to ddp") ||
         has(s, "try ddp") || has(s, "use ddp instead") || has(s, "does ddp help") || has(s, "would distributeddataparallel") ||
         has(s, "will distributeddataparallel")))
      out.add(Claim{"not-ddp", ""}, where);
    // One process driving several GPUs, said in words ("train.py is one Python process; the -gpus list makes that
    // process drive all listed GPUs"): DataParallel's shape, whatever the framework calls it. Not one process per GPU.
    {
      static const std::regex one_proc(R"(\b(?:one|a single|single|only one)\s+(?:python\s+)?process\b(?!\s+(?:per|for each|on each|each))(?!-per))");
      static const std::regex many_gpus(R"(\b(?:all|several|multiple|both|every|the listed|all listed|all the|many)\s+(?:(?:listed|visible|the|of the)\s+)?(?:gpus|cards|devices)\b)");
      if ((has(s, "process") && std::regex_search(s, one_proc) && std::regex_search(s, many_gpus) && !has(s, "per gpu") && !has(s, "per device") &&
           !has(s, "one process per") && !has(s, "process per gpu")) ||
          has(s, "single-process multi-gpu") || has(s, "single process multi-gpu") || has(s, "single-process multi-device"))
        out.add(Claim{"not-ddp", "one process drives several GPUs"}, where);
    }

    // A change said to have made the job faster, or to have made it work as it should: the state before it was the cost.
    // "I have changed DP to DDP, which leads to about 18% speedup", "this MR enables DistributedDataParallel training,
    // training time is 10 times faster than before", "re-implement our wrapper with the official DDP, which speeds up
    // training", "if we add self.no_sync() around the forward, it works as intended". Claim{"faster-with", change}:
    // "ddp" (DDP in place of one process driving every GPU), "framework-ddp" (PyTorch's own DDP in place of a
    // hand-written wrapper), "no-sync" (no gradient all-reduce on accumulation micro-batches). The diagnosis reads each
    // as the cause that change removes (diagnose/causes_*.cpp, fixed_by).
    {
      static const std::regex gain(R"(\b(faster|speed ?-?ups?|speeds? up|sped up|quicker|accelerat\w*)\b|\bworks? as (intended|expected)\b)");
      // Denied, asked or supposed: "does not work as intended", "did not make it any faster", "without no_sync()
      // everything works", "would DDP be faster?" (a tried "if we add X, then it works" is a result).
      const bool denied = has(s, "not ") || has(s, "n't") || has(s, "no longer") || has(s, "without") || has(s, "no faster") ||
                          has(s, "no speedup") || has(s, "no speed up") || has(s, "slower") || has(s, "?") || has(s, "would") ||
                          has(s, "could");
      if (!denied && std::regex_search(s, gain)) {
        // The change itself: DataParallel left for DDP, or DDP turned on.
        static const std::regex from_dp(R"(\b(chang\w*|switch\w*|mov\w*|replac\w*|convert\w*|migrat\w*|port\w*)\s+(from\s+)?(the\s+)?(dp|nn\.dataparallel|dataparallel|data\s?parallel)\s+(to|with|by|into|for)\b|\binstead of\s+(dp|nn\.dataparallel|dataparallel)\b)");
        static const std::regex to_ddp(R"(\b(enabl\w*|switch\w* to|mov\w* to|chang\w* to|migrat\w* to)\s+(the\s+)?(pytorch\s+|torch\s+)?(ddp|distributeddataparallel|distributed data parallel)\b)");
        // PyTorch's own DDP put in place of a hand-written wrapper ("re-implement MMDDP with the official DDP",
        // "replace our gradient-averaging wrapper with the native DistributedDataParallel").
        static const std::regex framework_ddp(R"(\b(official|pytorch'?s?|torch'?s?|native|built-in|upstream)\s+(ddp|distributeddataparallel)\b)");
        const bool in_place = has(s, "re-implement") || has(s, "reimplement") || has(s, "replac") || has(s, "instead of") ||
                              has(s, "in place of");
        if (std::regex_search(s, framework_ddp) && in_place) out.add(Claim{"faster-with", "framework-ddp"}, where);
        else if (std::regex_search(s, from_dp) || std::regex_search(s, to_ddp)) out.add(Claim{"faster-with", "ddp"}, where);
        // no_sync() added around accumulation micro-batches ("if we add self.no_sync() … it works as intended").
        if ((has(s, "no_sync") || has(s, "no sync()")) &&
            (has(s, "add") || has(s, "wrap") || has(s, "use") || has(s, "with") || has(s, "around")))
          out.add(Claim{"faster-with", "no-sync"}, where);
      }
    }

    // The all-reduce serialised after backward: "the NCCL collectives follow the backward kernels", "gradients are reduced
    // after the backward pass", "all-reduce/compute overlap was 0.0%".
    {
      const bool comm = has(s, "all-reduce") || has(s, "allreduce") || has(s, "all_reduce") || has(s, "nccl") ||
                        has(s, "collective") || has(s, "communication") || has(s, "gradients are reduced") ||
                        has(s, "gradient reduction") || has(s, "reduce the gradients") || has(s, "gradient sync");
      static const std::regex zero_overlap(R"(overlap\D{0,30}\b0(\.0+)?\s*%|\b0(\.0+)?\s*%\s*overlap|no overlap|not overlap|doesn't overlap|does not overlap)");
      const bool after = has(s, "after the backward") || has(s, "after backward") || has(s, "follow the backward") ||
                         has(s, "after loss.backward") || has(s, "not during") || has(s, "serialized") || has(s, "serialised") ||
                         std::regex_search(s, zero_overlap);
      // (not where the sentence says the overlap is good: "overlaps the computation almost completely; only the first
      // and last blocks cannot overlap")
      const bool good = has(s, "almost completely") || has(s, "almost fully") || has(s, "fully overlap") ||
                        has(s, "overlaps well") || has(s, "well overlapped") || has(s, "nearly completely") ||
                        has(s, "completely overlap") || has(s, "mostly overlap");
      if (comm && after && !good) out.add(Claim{"no-overlap", ""}, where);
    }
    // A hang or timeout at a point where ranks' code paths can part: evaluation, validation, the end of an epoch, a save.
    {
      const bool hang = has(s, "hang") || has(s, "timeout") || has(s, "timed out") || has(s, "time out") || has(s, "stuck") ||
                        has(s, "freez") || has(s, "deadlock");
      const char* at = has(s, "evaluat") ? "evaluation" : has(s, "validat") ? "validation" : has(s, "end of the first epoch") || has(s, "end of first epoch") || has(s, "end of an epoch") || has(s, "end of the epoch") || has(s, "end of each epoch") || has(s, "epoch end") ? "the end of an epoch" : has(s, "checkpoint") || has(s, "saving") ? "a checkpoint save" : nullptr;
      // (Not a timeout named as a setting or asked about: "we raised the watchdog timeout because checkpoints take long".)
      const bool set_words = has(s, "raised") || has(s, "increase") || has(s, "set the") || has(s, "setting");
      const bool timeout_setting = set_words && (has(s, "timeout") || has(s, "time out")) && !has(s, "hang") && !has(s, "stuck");
      if (hang && at && !timeout_setting) out.add(Claim{"hang-at-boundary", at}, where);
      // The watchdog ending the job, said in words ("rank 0 waits out the 600 s NCCL watchdog and aborts with
      // SIGABRT"): a collective that never completed — a hang, whatever the text calls it. Not where the sentence
      // speaks of the watchdog only as a setting ("we raised the watchdog timeout").
      const bool watchdog_fired = has(s, "watchdog") && (has(s, "abort") || has(s, "sigabrt") || has(s, "timed out") ||
                                                         has(s, "fired") || has(s, "waits out") || has(s, "killed") ||
                                                         has(s, "terminat") || has(s, "tear down") || has(s, "crash"));
      const bool as_setting = set_words || has(s, "?") || s.rfind("if ", 0) == 0 || has(s, " if a ") || has(s, " if the ") ||
                              has(s, "would ") || has(s, "does the") || has(s, "can the") || has(s, "could ");
      if (watchdog_fired && !as_setting && !hang) out.add(Claim{"hang", "the collective watchdog ended the job"}, where);
    }
    // One member slower than the others: "one faulty GPU", "one node is slower", "rank 3 is always the slowest".
    {
      // (not a pair compared: "between GPU2 and GPU3 is much slower")
      static const std::regex one_slow(R"(\b(one|a single|a|1)\s+(faulty|slow|slower|bad|broken|defective|degraded|sick)\s+(gpu|node|machine|rank|card|host|worker)\b|\b(rank|gpu|node)\s*#?\d+\s+(is|was|runs|seems)\s+(always\s+|much\s+|consistently\s+)?(slow|slower|the slowest|lagging|behind))");
      std::smatch m1;
      if (std::regex_search(s, m1, one_slow)) {
        const std::size_t at = static_cast<std::size_t>(m1.position(0));
        const std::string before = s.substr(at > 40 ? at - 40 : 0, at > 40 ? 40 : at);
        if (!has(before, "between") && !has(before, " and ") && !has(before, "<->") && !has(before, "<-->"))
          out.add(Claim{"one-slow-member", m1.str(0)}, where);
      }
    }
    // A setting that makes it slower: "with NCCL_SHM_DISABLE=1 I see a large drop in performance".
    {
      static const std::regex setting_re(R"((NCCL_[A-Z0-9_]+)\s*=\s*([A-Za-z0-9_.,:-]+))");
      std::smatch sm2;
      if (std::regex_search(raw, sm2, setting_re) &&
          (has(s, "drop in performance") || has(s, "performance drop") || has(s, "slower") || has(s, "slows") ||
           has(s, "slow down") || has(s, "slowdown") || has(s, "degrad") || has(s, "worse") || has(s, "drops")))
        out.add(Claim{"slow-with", sm2[1].str() + "=" + sm2[2].str()}, where);
    }
    // Communication named as the bottleneck: "communication between machines becomes the bottleneck".
    if ((has(s, "communication") || has(s, "all-reduce") || has(s, "allreduce") || has(s, "network") || has(s, "interconnect") ||
         has(s, "bandwidth")) &&
        (has(s, "bottleneck") || has(s, "limits") || has(s, "dominat") || has(s, "saturat")))
      out.add(Claim{"comm-suspected", ""}, where);
    // Several machines: "between machines", "the number of machines", "multiple nodes", "across nodes".
    {
      static const std::regex many(R"(\b(between|across|multiple|several|many|more|number of|increase the number of|two|2)\s+(the\s+)?((?!numa\b)[a-z0-9.-]+\s+)?(machines|nodes|hosts|servers|instances)\b|\bmulti-?(node|machine)\b)");
      if (std::regex_search(s, many)) out.add(Claim{"nodes", "multi-node"}, where);
    }
    // Ranks given unequal work: variable lengths or sizes, uneven shards, some ranks doing more.
    // ("imbalance on GPU utility" is what the GPUs show, not what they were given: no claim of its own.)
    static const std::regex different_work(R"(different amounts? of (work|data|samples|tokens|comput|sequences))");
    const bool util_imbalance = (has(s, "imbalanc") || has(s, "unbalanced")) && (has(s, "util") || has(s, "usage")) &&
                                !has(s, "work") && !has(s, "data") && !has(s, "sample") && !has(s, "batch");
    if (has(s, "variable length") || has(s, "variable-length") || has(s, "different length") || has(s, "varying length") ||
        has(s, "random size") || has(s, "random image size") || has(s, "different size") || has(s, "uneven") ||
        ((has(s, "imbalanc") || has(s, "unbalanced")) && !util_imbalance) || has(s, "more work than") ||
        std::regex_search(s, different_work))
      out.add(Claim{"uneven-work", ""}, where);
    // The data read from slow storage: "stored on an HDD", "a network file system", "a spinning disk".
    if (word(s, "hdd") || word(s, "hdds") || has(s, "hard disk") || has(s, "hard drive") || has(s, "spinning disk") ||
        has(s, "mechanical disk") || word(s, "nfs") || has(s, "network file system") || has(s, "network storage"))
      out.add(Claim{"slow-storage", ""}, where);
    // The host's CPUs as the text counts them ("we use 32 cpu and 8 gpu", "a 368-core host", "64 vCPUs", "96 CPU cores",
    // lscpu's "CPU(s): 32"): Claim{"cpus", N}. The diagnosis sets the job's CPU-side demand (ranks, loader workers,
    // threads) against it. Not a count per GPU or per task ("4 cores per GPU"), nor CUDA or tensor cores.
    {
      static const std::regex cpus_re(
          R"(\b(\d{1,4})[\s-]*(?:(?:physical|logical|cpu|x86)\s+)?(cores?|cpus?|vcpus?|cpu cores|cpu threads)\b)");
      static const std::regex lscpu_re(R"(^cpu\(s\):\s*(\d{1,4})\b)");
      std::smatch cm;
      std::optional<int> n;
      const bool cpu_words = has(s, "cpu") || has(s, "core");  // what either regex needs
      if (cpu_words && std::regex_search(s, cm, lscpu_re)) {
        n = std::stoi(cm[1].str());
      } else if (cpu_words && std::regex_search(s, cm, cpus_re)) {
        const std::string after = s.substr(static_cast<std::size_t>(cm.position(0) + cm.length(0)),
                                           std::min<std::size_t>(16, s.size() - static_cast<std::size_t>(cm.position(0) + cm.length(0))));
        const bool per = has(after, " per ") || has(after, "/gpu") || has(after, " each") || after.rfind(" per", 0) == 0;
        const int v = std::stoi(cm[1].str());
        if (!per && v >= 1) n = v;
      }
      if (n) out.add(Claim{"cpus", std::to_string(*n)}, where);
    }
    // A PCIe link below its width or generation, said in words: "the GPU runs at x8 instead of x16", "Gen3 x4".
    {
      static const std::regex width_re(R"(\bx\s?(1|2|4|8)\b(?!\d))");
      static const std::regex gen_re(R"(\b(?:gen|pcie)\s?([1-6])(?:\.0)?\b)");
      std::smatch wm, gm2;
      const bool pcie_word = word(s, "pcie") || has(s, "pci-e") || has(s, "lnksta") || has(s, "link width") || has(s, "slot");
      if (pcie_word && std::regex_search(s, wm, width_re) &&
          (has(s, "instead of x16") || has(s, "not x16") || has(s, "of x16") || has(s, "downgrad") || has(s, "only x") ||
           has(s, "should be x16") || has(s, "x16 slot") || has(s, "degraded") || has(s, "running at x") || has(s, "runs at x"))) {
        diagnose::PcieLinkState st;
        st.device = "a GPU (as the text states)";
        st.current_width = std::stoi(wm[1].str());
        st.device_max_width = 16;
        if (std::regex_search(s, gm2, gen_re)) st.current_gen = std::stoi(gm2[1].str());
        st.under_load = true;
        out.add(st, where);
      }
    }
    // A PCIe generation (and width) a link runs at, said in words or as the tools print it: "the GPUs report PCIe Gen 1",
    // "operating at 2.5GT/s", "negotiating as low as Gen2 x1 … the other three Gen3 at x16". What the link can do comes
    // from the same sentence: the slot's generation ("PCIe 5.0 slots"), or the best link it names beside the worst.
    {
      static const std::regex gen_at(R"(\b(?:pcie\s*)?gen\s?([1-6])(?:\.0)?(?:\s*(?:at\s+)?x\s?(1|2|4|8|16)\b)?)");
      static const std::regex gts_re(R"(\b(2\.5|5|8|16|32|64)\s?gt/s)");
      static const std::regex slot_re(R"(\b(?:pcie|pci-e)\s?([3-6])(?:\.0)?\s+(?:x16\s+)?slots?\b|\bgen\s?([3-6])\s+(?:x16\s+)?slots?\b)");
      const bool link_words = word(s, "pcie") || has(s, "pci-e") || has(s, "gt/s") || has(s, "lnksta") || has(s, "link") ||
                              has(s, "negotiat");
      const bool now_words = has(s, "report") || has(s, "operating at") || has(s, "running at") || has(s, "runs at") ||
                             has(s, "negotiat") || has(s, "trained at") || has(s, "shows") || has(s, "showed") ||
                             has(s, "show ") || has(s, "as low as") || has(s, "stuck at") || has(s, "only at") ||
                             has(s, "downgrad") || has(s, "currently") || has(s, "current link") || has(s, "current:");
      if (link_words && now_words && !has(s, "instead of x16")) {
        std::vector<std::pair<int, int>> seen;  // (generation, width or 0)
        for (auto it = std::sregex_iterator(s.begin(), s.end(), gen_at); it != std::sregex_iterator(); ++it)
          seen.push_back({std::stoi((*it)[1].str()), (*it)[2].matched ? std::stoi((*it)[2].str()) : 0});
        for (auto it = std::sregex_iterator(s.begin(), s.end(), gts_re); it != std::sregex_iterator(); ++it) {
          const double gts = std::stod((*it)[1].str());
          seen.push_back({gts < 3 ? 1 : gts < 6 ? 2 : gts < 10 ? 3 : gts < 20 ? 4 : gts < 40 ? 5 : 6, 0});
        }
        std::smatch slot;
        std::optional<int> slot_gen;
        if (std::regex_search(s, slot, slot_re)) slot_gen = std::stoi(slot[1].matched ? slot[1].str() : slot[2].str());
        if (!seen.empty()) {
          auto worst = *std::min_element(seen.begin(), seen.end());
          auto best = *std::max_element(seen.begin(), seen.end());
          // A slot's generation said as a link ("PCIe 5.0 slots … report Gen 1"): the capability, not a reading.
          if (slot_gen && worst.first == *slot_gen) worst = best;
          diagnose::PcieLinkState st;
          st.device = "a GPU (as the text states)";
          st.current_gen = worst.first;
          if (worst.second > 0) st.current_width = worst.second;
          if (slot_gen && *slot_gen > worst.first) st.device_max_gen = *slot_gen;
          else if (best.first > worst.first) st.device_max_gen = best.first;
          if (best.second > worst.second && worst.second > 0) st.device_max_width = best.second;
          if (st.device_max_gen || st.device_max_width) out.add(st, where);
        }
      }
    }
    // A bus bandwidth said to exceed the network's ("the reported busbw exceeds 100 Gbps", "busbw higher than the NIC").
    if ((has(s, "busbw") || has(s, "bus bandwidth") || has(s, "bus bw")) &&
        (has(s, "exceed") || has(s, "above") || has(s, "higher than") || has(s, "more than") || has(s, "faster than")) &&
        (has(s, "network") || word(s, "nic") || has(s, "link") || has(s, "line rate") || has(s, "gbps") || has(s, "gb/s")))
      out.add(Claim{"busbw-above-link", ""}, where);
    // A pause at every epoch's start (or between epochs), not a hang: "at the beginning of every epoch the loader takes
    // about 3 min before the first batch", "a 4 min pause between epochs".
    {
      const bool hang = has(s, "hang") || has(s, "timeout") || has(s, "timed out") || has(s, "deadlock") || has(s, "stuck");
      const bool epoch = has(s, "every epoch") || has(s, "each epoch") || has(s, "between epochs") || has(s, "between two epochs") ||
                         has(s, "new epoch") || has(s, "next epoch") || has(s, "epoch start");
      const bool at_start = has(s, "beginning") || has(s, "start") || has(s, "between") || has(s, "before the first");
      const bool pause = has(s, "pause") || has(s, "stall") || has(s, "wait") || has(s, "idle") || has(s, "wastes") ||
                         has(s, "takes about") || has(s, "delay") || has(s, "gap") || has(s, "before the first batch");
      if (epoch && at_start && pause && !hang) out.add(Claim{"epoch-start-stall", ""}, where);
    }
    // When a reading was taken: with the GPUs idle ("no job was running", "during routine monitoring") or busy ("with
    // the models loaded and running", "under load", "during training").
    if (has(s, "idle") || has(s, "no job") || has(s, "no workload") || has(s, "nothing running") || has(s, "not running"))
      out.add(Claim{"read-idle", ""}, where);
    else if (has(s, "under load") || has(s, "loaded and running") || has(s, "while training") || has(s, "during training") ||
             has(s, "during the job") || has(s, "while the job") || has(s, "under stress") || has(s, "during a benchmark") ||
             has(s, "during the training") || has(s, "during a training") || has(s, "while it trains") ||
             has(s, "while running") || has(s, "at 100 % util") || has(s, "at 100% util"))
      out.add(Claim{"read-busy", ""}, where);
    // GPU utilisation that swings between idle and busy ("jumping between 0% and 100%"): the GPU waits for something
    // every step and then runs flat out.
    {
      static const std::regex pct(R"((\d{1,3})\s*%)");
      bool low = false, high = false;
      for (auto it = std::sregex_iterator(s.begin(), s.end(), pct); it != std::sregex_iterator(); ++it) {
        const int v = std::stoi((*it)[1].str());
        low = low || v <= 10;
        high = high || (v >= 70 && v <= 100);
      }
      const bool util = has(s, "util") || has(s, "usage") || word(s, "gpu") || word(s, "gpus");
      if (util && ((low && high) || has(s, "jumping") || has(s, "jumps between") || has(s, "oscillat") ||
                   has(s, "spik") || has(s, "fluctuat") || has(s, "intermittent")))
        out.add(Claim{"util-swings", ""}, where);
    }
    // Shared memory that could not be had, said in words ("failed to create a shared-memory segment: could not allocate
    // enough space under /dev/shm", PyTorch's "insufficient shared memory (shm)"): what NCCL's WARN lines would say, told
    // by the poster — not where it says it works now, or that nothing is wrong with it.
    {
      const bool shm = has(s, "/dev/shm") || has(s, "shared memory segment") || has(s, "shared-memory segment") ||
                       has(s, "shm_open") || has(s, "shm segment") || has(s, "shared memory (shm)") ||
                       ((has(s, "shared memory") || has(s, "shared-memory")) && (has(s, "nccl") || has(s, "docker") ||
                                                                                 has(s, "container") || has(s, "dataloader")));
      const bool failed = has(s, "failed") || has(s, "fails") || has(s, "failure") || has(s, "could not") ||
                          has(s, "couldn't") || has(s, "cannot") || has(s, "can't") || has(s, "unable to") ||
                          has(s, "not enough") || has(s, "no space") || has(s, "too small") || has(s, "insufficient") ||
                          has(s, "ran out") || has(s, "runs out") || has(s, "bus error");
      const bool fine = has(s, "now ") || has(s, " fine") || has(s, "is gone") || has(s, "no error") || has(s, "not too small") ||
                        has(s, "works") || has(s, "worked") || has(s, "resolved") || has(s, "fixed") || has(s, "failover") ||
                        has(s, "no longer") || has(s, "?");
      if (shm && failed && !fine) out.add(Claim{"shm-failed", ""}, where);
    }
    // The input pipeline named at all (a suspect or not): "DataLoader with CPU-side transforms", "data loading time".
    if (has(s, "dataloader") || has(s, "data loader") || has(s, "data loading") || has(s, "loading time") ||
        has(s, "transforms") || has(s, "augment") || has(s, "preprocessing") || has(s, "num_workers") ||
        has(s, "dataflow") || has(s, "data pipeline") || has(s, "input pipeline") || has(s, "prefetch") || has(s, "lmdb") ||
        has(s, "tfrecord") || has(s, "imread") || has(s, "loading data") || has(s, "load data") || has(s, "load the data") ||
        has(s, "data batch") || has(s, "reading data") || has(s, "read the data") || has(s, "reading speed") ||
        has(s, "read speed") || has(s, "data reading") || has(s, "imagefolder") || has(s, "image decod") ||
        has(s, "jpeg decod") || has(s, "data upload") || has(s, "upload the data") || has(s, "data is loaded") ||
        has(s, "data is being loaded") || has(s, "data gets loaded"))
      out.add(Claim{"input-mentioned", ""}, where);
    // P2P turned off by something, said in words ("why do you disable p2p when detecting RTX 3090", "the launcher sets P2P
    // off"): NCCL_P2P_DISABLE=1 as the text states it — not when the text says turning it off was the fix.
    {
      static const std::regex p2p_off(R"(\b(disabl\w*|turn\w*\s+off|switch\w*\s+off|sets?\s+off|overrid\w*)\s+(the\s+)?(nccl\s+)?p2p\b|\bp2p\s+(is\s+|was\s+|gets\s+|being\s+)?(disabled|turned off|switched off|forced off))");
      const bool as_fix = has(s, "fix") || has(s, "solve") || has(s, "workaround") || has(s, "helped") || has(s, "try ") ||
                          has(s, "tried") || has(s, "works now") || has(s, "worked");
      if (!as_fix && std::regex_search(s, p2p_off)) out.add(diagnose::Setting{"NCCL_P2P_DISABLE", "1", "said in the text"}, where);
    }
    // torch.compile (TorchDynamo, Inductor) under DDP said to be slower than eager.
    if ((has(s, "dynamo") || has(s, "torch.compile") || has(s, "inductor") || has(s, "compiled")) &&
        (word(s, "ddp") || has(s, "distributeddataparallel")) &&
        (has(s, "slower") || has(s, "slow down") || has(s, "slowdown") || has(s, "regress")))
      out.add(Claim{"compile-ddp-slower", ""}, where);
    // GPU counts of different views: "nvidia-smi shows 8 GPUs but torch.cuda.device_count() returns 4".
    {
      static const std::regex cuda_count(R"((device_count\(\)|cuda\.device_count|visible to (cuda|pytorch|torch|nccl))\D{0,40}?(\d{1,2})\b)");
      static const std::regex smi_count(R"(nvidia-smi\D{0,30}?(\d{1,2})\s*(gpus|cards|devices))");
      std::smatch cm, sm3;
      if (std::regex_search(s, cm, cuda_count)) out.add(diagnose::GpuCount{std::stoi(cm[3].str()), "cuda", std::nullopt}, where);
      if (std::regex_search(s, sm3, smi_count)) out.add(diagnose::GpuCount{std::stoi(sm3[1].str()), "exist", std::nullopt}, where);
    }
    // GPUDirect RDMA off in words: "nvidia-peermem is not loaded", "GPUDirect RDMA is disabled / not working".
    if (((has(s, "peermem") || has(s, "peer_mem") || has(s, "peer mem")) &&
         (has(s, "not loaded") || has(s, "missing") || has(s, "not installed") || has(s, "wasn't loaded") || has(s, "was not loaded") ||
          has(s, "failed to load") || has(s, "not present"))) ||
        ((has(s, "gpudirect") || word(s, "gdr") || has(s, "gdrdma")) &&
         (has(s, "disabled") || has(s, "not working") || has(s, "not enabled") || has(s, "not supported") ||
          has(s, "unavailable") || has(s, "how to enable") || has(s, "problem with enabling") || has(s, "cannot enable") ||
          has(s, "can't enable") || has(s, "unable to enable") || has(s, "fail to enable") || has(s, "failed to enable"))))
      out.add(diagnose::GdrState{"(as the text states)", false}, where);
    // torch.compile recompiling or breaking its graph.
    if ((has(s, "torch.compile") || has(s, "dynamo") || has(s, "inductor")) &&
        (has(s, "recompil") || has(s, "graph break") || has(s, "graph-break") || has(s, "recompiles")))
      out.add(diagnose::FrameworkMessage{"compile-graph-break", "pytorch"}, where);
    // Two paths compared: "within NUMA (GPU0 <--> GPU1) is much slower than across NUMA", "the PIX pair is slower than the
    // SYS pair". Detail: "<slower path class><<faster path class>" with classes local (PIX/PXB/one switch/same NUMA) and
    // far (SYS/NODE/PHB/across NUMA or sockets).
    {
      auto cls_at = [&](std::size_t from, std::size_t to) -> std::string {
        const std::string part = s.substr(from, to - from);
        if (has(part, "within numa") || has(part, "same numa") || has(part, "pix") || has(part, "pxb") || has(part, "same switch") ||
            has(part, "same pcie switch") || has(part, "same socket") || has(part, "same cpu"))
          return "local";
        if (has(part, "across numa") || has(part, "cross numa") || has(part, "cross-numa") || has(part, "different numa") ||
            has(part, "sys") || has(part, "across sockets") || has(part, "different socket") || has(part, "different cpu") ||
            has(part, "node") || has(part, "phb"))
          return "far";
        return "";
      };
      for (const char* cmp : {" slower than ", " lower than ", " faster than ", " higher than "}) {
        const auto at = s.find(cmp);
        if (at == std::string::npos) continue;
        const std::string left = cls_at(0, at), right = cls_at(at, s.size());
        if (left.empty() || right.empty() || left == right) continue;
        const bool slower = std::string(cmp) == " slower than " || std::string(cmp) == " lower than ";
        const std::string slow = slower ? left : right, fast = slower ? right : left;
        out.add(Claim{"slower-path", slow + "<" + fast}, where);
        break;
      }
    }
    // A cloud instance: the GPUs are a virtual machine's (AWS, Azure, GCP instance types).
    {
      static const std::regex cloud(R"(\b(aws|ec2|azure|gcp|google cloud|oracle cloud|lambda cloud|(g4dn|g5|g6|p3|p3dn|p4d|p4de|p5|p5e)\.[0-9]*x?large|nd[0-9a-z_]*v[0-9]|nc[0-9a-z_]*v[0-9]|a2-(high|ultra)gpu|a3-(high|mega)gpu)\b)");
      std::smatch cm2;
      if (std::regex_search(s, cm2, cloud)) out.add(diagnose::HypervisorSeen{"a cloud instance (" + cm2.str(0) + "): its GPUs are a virtual machine's"}, where);
    }
    // The workload called small: "small model", "tiny dataset", CIFAR or MNIST images (32×32 and 28×28: a fraction of an
    // ImageNet image's compute per sample).
    if (has(s, "small model") || has(s, "small models") || has(s, "enough small") || has(s, "tiny model") || has(s, "toy model") ||
        has(s, "small network") || word(s, "cifar10") || word(s, "cifar-10") || word(s, "cifar100") || word(s, "cifar") ||
        word(s, "mnist"))
      out.add(Claim{"small-workload", ""}, where);
    // NCCL's network named in words: "NCCL reports that it is using network Socket", "falls back to sockets".
    if (has(s, "nccl") && (has(s, "socket") || has(s, "tcp")) &&
        (has(s, "using network") || has(s, "uses network") || has(s, "using socket") || has(s, "fall back") ||
         has(s, "falls back") || has(s, "fallback") || has(s, "net/socket")))
      out.add(diagnose::NetworkChosen{"Socket", {}}, where);
    if (has(s, "empty_cache"))
      out.add(CodeUse{"empty_cache", "torch.cuda.empty_cache() named in the text",
                      has(s, "every step") || has(s, "each step") || has(s, "per step") || has(s, "every iteration") ||
                          has(s, "each iteration") || has(s, "training step") || has(s, "training_step"),
                      std::nullopt},
              where);
    // Kernel launches named as what limits the step.
    if (has(s, "launch overhead") || has(s, "kernel launch") || has(s, "cpu overhead") || has(s, "python overhead") ||
        has(s, "small kernels") || has(s, "cpu-bound") || has(s, "cpu bound") || has(s, "host-bound") || has(s, "cuda graph"))
      out.add(Claim{"launch-suspected", ""}, where);

    // ---- code words in prose ----
    const bool every_step = has(s, "every step") || has(s, "each step") || has(s, "per step") || has(s, "every iteration") ||
                            has(s, "each iteration") || has(s, "per iteration") || has(s, "every batch") || has(s, "each batch");
    if ((word(s, "dataparallel") || has(s, "nn.dataparallel") || has(s, "data parallel (dp)") || has(s, "dataparallel(")) &&
        !has(s, "distributeddataparallel") && !has(s, "not dataparallel"))
      out.add(CodeUse{"DataParallel", "named in the text", false, std::nullopt}, where);
    // "DP" as the mode a job runs in, as Lightning and accelerate name DataParallel ("2 GPUs with DP", "dp mode",
    // strategy='dp'): not DP as one dimension of 3-D parallelism ("TP=2, PP=4, DP=8", "dp size", "8 DP replicas"), nor
    // another DP (differential privacy, DisplayPort, double precision, dynamic programming), nor DP declined.
    else if (static const std::regex dp_mode(
                 R"(\b(?:with|using|use|in|under|via|multi-?gpu)\s+(?:the\s+)?dp\b(?!\s*[-=(])|\bdp\s+(?:mode|strategy|backend)\b|(?:strategy|accelerator|distributed_backend)\s*=\s*['"]dp['"])");
             std::regex_search(s, dp_mode) && !word(s, "ddp") && !has(s, "distributeddataparallel") && !word(s, "tp") &&
             !word(s, "pp") && !has(s, "tensor parallel") && !has(s, "pipeline") && !has(s, "dp size") && !has(s, "dp degree") &&
             !has(s, "fsdp") && !has(s, "hsdp") && !has(s, "zero") && !has(s, "replica") && !has(s, "privacy") &&
             !has(s, "dp-sgd") && !has(s, "display") && !has(s, "precision") && !has(s, "dynamic programming") &&
             !has(s, "not to use dp") && !has(s, "not use dp") && !has(s, "instead of dp") && !has(s, "no dp"))
      out.add(CodeUse{"DataParallel", "named in the text (DP)", false, std::nullopt}, where);
    for (auto w : {".item()", ".cpu()", ".tolist()", ".numpy()", "cuda.synchronize", "cudastreamsynchronize", "cudadevicesynchronize",
                   ".nonzero("})
      if (has(s, w)) out.add(CodeUse{"host-sync", w, every_step || has(s, "loop"), std::nullopt}, where);
    if (has(s, "num_workers=0") || has(s, "num_workers = 0") || has(s, "num_workers 0") || has(s, "num_workers is 0"))
      out.add(CodeUse{"dataloader", "num_workers=0", false, 0.0}, where);
    if (has(s, "find_unused_parameters=true") || has(s, "find_unused_parameters = true"))
      out.add(CodeUse{"find_unused_parameters", "True", false, std::nullopt}, where);
    if (has(s, "torch.compile")) out.add(CodeUse{"torch.compile", "named in the text", false, std::nullopt}, where);

    // ---- figures ----
    const auto fs = figures(s, raw);
    const bool sync_words = has(s, "cudastreamsynchronize") || has(s, "cudadevicesynchronize") || has(s, "cuda.synchronize") ||
                            has(s, ".item()") || has(s, "synchroniz");
    for (const auto& f : fs) {
      // Network line rates: Gb/s, or GB/s said of a port/NIC/network.
      if (f.unit == "Gb/s") {
        // A collective's bandwidth written in bits ("busbw of 125 Gbps", "all_reduce_perf reports 80 Gb/s"): its bytes.
        const std::size_t from = f.pos > 40 ? f.pos - 40 : 0;
        const std::string before = s.substr(from, f.pos - from);
        // (not a bound: "the reported busbw exceeds 100 Gbps" compares with the link, it measures nothing)
        const bool bound = has(before, "exceed") || has(before, "above") || has(before, "more than") ||
                           has(before, "higher than") || has(before, "over ") || has(before, "beyond");
        if (!bound && (has(before, "busbw") || has(before, "bus bandwidth") || has(before, "algbw") ||
                       has(before, "all_reduce_perf") || has(before, "reported by") || has(before, "reports"))) {
          Measurement m;
          m.quantity = has(before, "algbw") ? "algbw" : "busbw";
          m.unit = "GB/s";
          m.value = f.value / 8;
          m.higher_is_better = true;
          m.table = "prose";
          m.row = std::string(sentence.substr(f.pos, f.end - f.pos)) + " (in bits)";
          if (m.quantity == "busbw") {
            diagnose::BusbwPlateau p;
            p.collective = has(s, "all_gather") || has(s, "allgather") ? "all_gather" : "all_reduce";
            p.gbps = p.peak_gbps = m.value;
            if (auto c = nearest(cs, s, f.pos)) p.ranks = c->n;
            else if (state && state->last_gpu_count) p.ranks = state->last_gpu_count;
            out.add(p, where);
          }
          out.add(std::move(m), where);
          continue;
        }
        // Ports of a rate, with their count when it precedes them: "8 100Gbps Mellanox CX-6", "2 x 200 Gb/s".
        int ports = 1;
        {
          static const std::regex count_before(R"((\d{1,2})\s*(?:x|×|\*)?\s*$)");
          std::smatch cm3;
          const std::string lead = s.substr(f.pos > 8 ? f.pos - 8 : 0, f.pos > 8 ? 8 : f.pos);
          if (std::regex_search(lead, cm3, count_before)) ports = std::clamp(std::stoi(cm3[1].str()), 1, 16);
        }
        for (int k = 0; k < ports; ++k) {
          diagnose::NicSeen n;
          n.name = ports == 1 ? "stated in the text" : fmt::format("port {} of {} (stated in the text)", k + 1, ports);
          n.line_gbit = f.value;
          n.link_layer = word(s, "infiniband") || word(s, "ib") ? "IB" : word(s, "ethernet") || word(s, "gbe") ? "Ethernet" : "";
          if (n.link_layer->empty()) n.link_layer.reset();
          out.add(std::move(n), where);
        }
        continue;
      }
      std::string q = quantity_of(s, f);
      // A figure of a specification, not a measurement: "the specs say 900 GB/s", "capable of 600 GB/s", "NVIDIA claims
      // 450 GB/s", "theoretical", "up to", "aggregate". Kept out: the diagnosis brings its own expectation.
      {
        const std::size_t from = f.pos > 50 ? f.pos - 50 : 0;
        const std::string near = s.substr(from, f.pos - from) + " " + s.substr(f.end, std::min<std::size_t>(25, s.size() - f.end));
        bool reference = false;
        for (auto w : {"spec", "datasheet", "theoretical", "rated", "capable of", "claim", "advertis", "official", "nominal",
                       "up to", "aggregate", "should be", "should reach", "should get", "expected", "supposed to", "peak of",
                       "maximum of", "max of", "promised", "marketing", "slide", "according to", "whitepaper", "presentation",
                       "gtc", "announced", "brochure"})
          if (has(near, w)) reference = true;
        // A figure aimed at: "how to achieve 35 GB/s with 8 GPUs", "we want 40 GB/s".
        for (auto w : {"achieve", "how to get", "how can i get", "want to reach", "we want", "target", "goal"})
          if (has(near, w)) reference = true;
        if (reference && (f.unit == "GB/s" || f.unit == "MB/s")) continue;
        // A figure of one link ("an nvlink bandwidth is defined as 20GB/s", "25 GB/s per link"): a link's rate, not the
        // job's bus bandwidth.
        if (f.unit == "GB/s" || f.unit == "MB/s") {
          const std::string just_before = s.substr(f.pos > 14 ? f.pos - 14 : 0, f.pos > 14 ? 14 : f.pos);
          const std::string just_after = s.substr(f.end, std::min<std::size_t>(14, s.size() - f.end));
          bool one_link = false;
          for (auto w : {"links at", "link at", "per link", "each link"}) one_link = one_link || has(just_before, w);
          for (auto w : {" each", "per link", "/link", "per lane", "per nvlink", "a link"}) one_link = one_link || has(just_after, w);
          for (auto w : {"an nvlink bandwidth", "one link", "a single link", "a link's", "link bandwidth is"})
            one_link = one_link || has(near, w);
          if (one_link) q = "link bandwidth";
        }
        // A time the sentence only supposes: "at 100% efficiency two GPUs would halve your step time to 11ms", "ideally
        // 50 ms". A measurement is what ran, not what would.
        const bool time_figure = f.unit == "s" || f.unit == "ms" || f.unit == "min" || f.unit == "h";
        if (time_figure && (has(near, "would halve") || has(near, "would drop") || has(near, "would be") ||
                            has(near, "would cut") || has(near, "would reduce") || has(near, "would bring") || has(near, "ideal") || has(near, "theoretic") || has(near, "in theory") ||
                            has(near, "should be") || has(near, "expected") || has(near, "expect ") || has(near, "if we") ||
                            has(near, "could be")))
          continue;
        // A figure the job aims at, not one it reached: "the goal is to get 90% scaling efficiency for 160 gpus".
        if (goal_before(s, f.pos)) continue;
      }
      // A bandwidth of a collective without its own qualifier is the one the text named last ("the algbw is 250 GB/s …
      // `all_reduce_perf`: about 250 GB/s"), else busbw.
      // In a text that runs nccl-tests, a bandwidth stated at a GPU count ("8 GPU max performance: 28GB/s") is its result.
      if (q == "bandwidth" && (collective || (state && state->tests_text && !cs.empty() && f.unit == "GB/s")))
        q = state && !state->last_bw_quantity.empty() ? state->last_bw_quantity : "busbw";
      if (state && (q == "busbw" || q == "algbw")) state->last_bw_quantity = q;
      const bool time_unit = f.unit == "s" || f.unit == "ms" || f.unit == "min" || f.unit == "h" || f.unit == "d";
      // "It also takes 21 seconds": a time with no noun of its own continues the previous sentence's quantity.
      if (q.empty() && time_unit && last_time_quantity && !last_time_quantity->empty()) q = *last_time_quantity;
      if (q.empty()) continue;
      if (time_unit && last_time_quantity) *last_time_quantity = q;
      if (f.unit == "%" && f.value > 100) continue;
      // A time said of a sync ("40-50 ms of cudaStreamSynchronize every step"): what the host waits, not the step.
      if (sync_words && (f.unit == "ms" || f.unit == "s") && q == "step time") {
        diagnose::HostSync h;
        h.label = has(s, "cudastreamsynchronize") ? "cudaStreamSynchronize" : has(s, ".item()") ? "aten::item" : "synchronize";
        h.per_step = 1;
        h.blocked_ms_per_step = seconds(f) * 1000;
        out.add(h, where);
        continue;
      }
      Measurement m;
      m.quantity = q;
      m.table = "prose";
      m.row = std::string(sentence.substr(f.pos, f.end - f.pos));
      if (f.unit == "s" || f.unit == "ms" || f.unit == "min" || f.unit == "h" || f.unit == "d") {
        m.unit = "s";
        m.value = seconds(f);
        m.higher_is_better = false;
      } else if (f.unit == "s/it") {
        m.quantity = "step time";
        m.unit = "s";
        m.value = f.value;
      } else {
        m.unit = f.unit;
        m.value = f.value;
        m.higher_is_better = f.unit != "%" || q == "GPU utilisation";
      }
      // Processes of a data-parallel job are its ranks, one per GPU (or per CPU share): one count for scaling.
      if (auto c = nearest(cs, s, f.pos)) m.dims["gpus"] = std::to_string(c->n);
      if (m.quantity == "busbw" || m.quantity == "algbw") {
        diagnose::BusbwPlateau p;
        p.collective = has(s, "all_gather") || has(s, "allgather") ? "all_gather" : "all_reduce";
        p.gbps = m.value;
        if (auto c = nearest(cs, s, f.pos)) p.ranks = c->n;
        else if (state && state->last_gpu_count) p.ranks = state->last_gpu_count;
        // algbw → busbw for all-reduce: × 2(n−1)/n (nccl-tests' PERFORMANCE.md); without the rank count it is not known.
        if (m.quantity == "algbw" && p.collective == "all_reduce" && p.ranks && *p.ranks >= 2)
          p.gbps = m.value * 2.0 * (*p.ranks - 1) / *p.ranks;
        p.peak_gbps = p.gbps;
        // A figure of one node inside a text about several ("intra-node NCCL all-reduce 482.6 GB/s") is not the job's
        // plateau across nodes: kept as a measurement only.
        const bool one_node = has(s, "intra-node") || has(s, "intranode") || has(s, "within a node") ||
                              has(s, "within one node") || has(s, "within the node") || has(s, "single-node") ||
                              has(s, "single node");
        if (m.unit == "GB/s" && (m.quantity == "busbw" || (p.ranks && *p.ranks >= 2)) && !one_node) out.add(p, where);
      }
      // A scaling efficiency stated at a GPU count ("8 GPUs: 5048 img/sec (~86% scaling efficiency)"): that point.
      if (m.quantity == "scaling efficiency" && m.unit == "%" && m.value > 0 && m.value <= 120)
        if (auto c = nearest(cs, s, f.pos); c && c->n >= 2) {
          diagnose::ScalingPoint sp;
          sp.world_size = c->n;
          sp.efficiency = m.value / 100;
          sp.speedup = sp.efficiency * c->n;
          sp.mode = "stated";
          out.add(sp, where);
        }
      out.add(std::move(m), where);
    }
    // The same time per iteration on several GPUs as on one ("the eta of multi-GPU is the same as single gpu", "same
    // s/it as on one card"): a figure per iteration, not per sample. Claim{"same-per-iteration"}: the diagnosis reads it
    // with the text's GPU count as weak scaling where each rank keeps its batch (diagnose/expectations.cpp).
    {
      static const std::regex per_iter(R"(\b(it/s|s/it|iters?/s|batch(es)?\s?/\s?sec|batch(es)?/s|eta|per iteration|iteration time|time per (iteration|step)|iterations per second|step time|s/step)\b)");
      const bool same = has(s, "the same as") || has(s, "same as single") || has(s, "same as one") || has(s, "same as 1") ||
                        has(s, "same as on one") || has(s, "identical to");
      const bool vs_one = has(s, "single gpu") || has(s, "single-gpu") || has(s, "single card") || has(s, "single-card") ||
                          has(s, "one gpu") || has(s, "1 gpu") || has(s, "one card") || has(s, "1 card") ||
                          has(s, "single device");
      // Not when denied ("not the same"), when the sentence speaks of samples or the whole run (throughput, epoch,
      // total time: those the same is no gain), or of one batch split over the GPUs (then the same time per
      // iteration is no gain either).
      const bool other = has(s, "not ") || has(s, "n't") || has(s, "throughput") || has(s, "samples") ||
                         has(s, "images/s") || has(s, "img/s") || has(s, "tokens") || has(s, "total") || has(s, "epoch") ||
                         has(s, "split") || has(s, "divid") || has(s, "global batch") || has(s, "dropped");
      if (same && vs_one && !other && std::regex_search(s, per_iter)) {
        // With the GPU count of the sentence, when it gives one.
        std::optional<int> n;
        for (const auto& c : cs)
          if (!c.processes && c.n >= 2) n = std::max(n.value_or(0), c.n);
        out.add(Claim{"same-per-iteration", n ? std::to_string(*n) : ""}, where);
      }
    }
    bool listed_pairs = false;  // the sentence pairs each count with its speedup: no single speedup besides
    // ---- speedups listed per count: "4 nodes → 3.9x, 16 nodes → 14.4x", "8 GPUs: 7.1x" — each a scaling point against
    // one node (or GPU), in a sentence about gain or scaling ----
    if (has(s, "gain") || has(s, "speedup") || has(s, "speed-up") || has(s, "speed up") || has(s, "scaling") ||
        has(s, "throughput") || has(s, "faster")) {
      static const std::regex pair_re(
          R"(\b(\d{1,4})\s+(nodes|gpus|machines|servers|instances)\s*(?:→|->|=>|:|=|(?:give|gives|gave|get|gets|got|reach|reaches|reached|achieve|achieves|achieved|yield|yields)\s+(?:a\s+|an\s+)?)\s*(\d+(?:\.\d+)?)\s*(?:x|×)(?![a-z0-9]))");
      for (auto it = std::sregex_iterator(s.begin(), s.end(), pair_re); it != std::sregex_iterator(); ++it) {
        const int n = std::stoi((*it)[1].str());
        const double x = std::stod((*it)[3].str());
        if (n < 2 || !(x > 0) || x > 1.2 * n) continue;
        diagnose::ScalingPoint p;
        p.world_size = n;
        p.speedup = x;
        p.efficiency = x / n;
        p.mode = std::string("stated, against one of the ") + (*it)[2].str();
        out.add(p, where);
        listed_pairs = true;
      }
    }
    // ---- speedups said in words ----
    static const std::regex speed_re(R"((\d+(?:\.\d+)?)\s*(?:x|×|times)\s*(faster|slower|speed ?-?up|scale ?-?up))");
    std::smatch sm;
    const bool no_speedup = has(s, "no speedup") || has(s, "no speed up") || has(s, "not faster") || has(s, "isn't faster") ||
                            has(s, "is not faster") || has(s, "same speed") || has(s, "no faster") || has(s, "doesn't speed") ||
                            has(s, "does not speed") || has(s, "no improvement") || has(s, "not any faster");
    // The same speed in other words, with no count in the sentence: a claim the diagnosis reads with the text's counts.
    const bool same_speed = no_speedup || has(s, "almost the same") || has(s, "about the same") || has(s, "roughly the same") ||
                            has(s, "no gain") || has(s, "any gain") || has(s, "no benefit") || has(s, "didn't see any") ||
                            has(s, "did not see any") || has(s, "no difference");
    std::optional<int> multi;
    for (const auto& c : cs)
      if (!c.processes && c.n >= 2) multi = multi ? std::max(*multi, c.n) : c.n;
    // "two nodes" / "2 machines" with no GPU count of their own: at least that many GPUs.
    bool vs_one_machine = false;
    if (!multi) {
      // "distribute the workload over an identical machine", "a second node": the run on one machine is the baseline.
      static const std::regex another(R"(\b(another|a second|an identical|an additional|a 2nd)\s+(identical\s+)?(machine|node|host|server)\b)");
      if (std::regex_search(s, another)) {
        multi = 2;
        vs_one_machine = true;
      }
    }
    if (!multi) {
      static const std::regex nodes_re(R"(\b(\d{1,4}|two|three|four|eight|sixteen)\s+(nodes|machines|hosts|servers|computers)\b)");
      std::smatch nm;
      if (std::regex_search(s, nm, nodes_re))
        if (auto n = count_word(nm[1].str()); n && *n >= 2) multi = *n;
    }
    // A speedup the text states at `multi` GPUs (kept only inside 0–64, what a speedup can be).
    // A speedup someone else reports ("Microsoft reported 7 times faster training", "the paper claims 3.5x") is a
    // reference, not this job's.
    const bool others = has(s, "reported") || has(s, "paper") || has(s, "claims") || has(s, "claimed") ||
                        has(s, "according to") || has(s, "published") || has(s, "advertis") || has(s, "blog post");
    auto stated = [&](double speedup, const char* mode) {
      if (!(speedup > 0 && speedup <= 64) || others || listed_pairs) return;
      diagnose::ScalingPoint p;
      p.world_size = *multi;
      p.speedup = speedup;
      p.efficiency = speedup / *multi;
      p.mode = mode;
      out.add(p, where);
    };
    static const std::regex slower_than_one(R"((slower|longer|worse) than (with |on |using )?(1|one|a single|single|only one)( gpu| card| machine| node| device)?)");
    static const std::regex percent_lower(R"((\d{1,3})\s*%\s*(lower|less|slower|worse))");
    // The word before the figure: "the speedup with 2 GPUs is 1.17x", "a scale-up of 1.3x".
    static const std::regex speed_after(R"((speed ?-?up|scale ?-?up)\D{0,60}?(\d+(?:\.\d+)?)\s*(?:x|×)(?![a-z0-9]))");
    std::smatch sa;
    // "twice as fast as 1 GPU", "three times as fast": a speedup in words.
    static const std::regex as_fast(R"(\b(twice|two times|three times|thrice|four times|(\d+(?:\.\d+)?)\s*(?:x|×|times))\s+as\s+fast\b)");
    std::smatch af;
    const bool in_words = multi && search_result(s, as_fast, af);
    const bool before_form = multi && !in_words && search_result(s, speed_re, sm);
    if (in_words) {
      const std::string w = af[1].str();
      stated(af[2].matched ? std::stod(af[2].str()) : w == "twice" || w == "two times" ? 2 : w == "four times" ? 4 : 3, "stated");
    } else
    if (multi && !before_form && search_result(s, speed_after, sa)) {
      stated(std::stod(sa[2].str()), "stated");
    } else if (before_form) {
      double x = std::stod(sm[1].str());
      const std::string dir = sm[2].str();
      // "2x slower on 4 GPUs" (than one GPU): speedup 1/x; "1.13x faster with 2 GPUs": speedup x.
      const bool vs_one = has(s, "1 gpu") || has(s, "one gpu") || has(s, "single gpu") || has(s, "single-gpu") || vs_one_machine;
      if (x > 0 && x <= 64 && (vs_one || dir != "slower")) stated(dir == "slower" ? 1 / x : x, "stated");
    } else if (multi && std::regex_search(s, sm, slower_than_one)) {
      // "two machines (2 GPUs) are slower than one machine": no faster than one, an upper bound.
      stated(1.0, "stated: slower than one (speedup at most 1)");
    } else if (multi && std::regex_search(s, sm, percent_lower) &&
               (has(s, "single") || has(s, "one gpu") || has(s, "1 gpu") || has(s, "without"))) {
      // "the speed is 50% lower than with a single GPU": speedup 1 − x; "50% slower" (its time): 1 / (1 + x).
      const double x = std::stod(sm[1].str()) / 100;
      const bool rate = has(s, "speed") || has(s, "throughput") || has(s, "samples") || has(s, "images");
      stated(rate && sm[2].str() != "slower" ? 1 - x : 1 / (1 + x), "stated");
    } else if (multi && no_speedup) {
      stated(1.0, "stated");
    } else if (same_speed && (has(s, "time") || has(s, "speed") || has(s, "faster") || has(s, "gain") || has(s, "throughput"))) {
      out.add(Claim{"no-gain", ""}, where);
    }
  } catch (...) {
    // A sentence the grammar cannot read gives no facts.
  }
}

}  // namespace scalescope::analyze
