#pragma once
// Reads PyTorch training code — a script, or the code blocks of a post — for the constructs that decide how a
// data-parallel job scales: which wrapper it uses (nn.DataParallel or DistributedDataParallel, and DDP's
// find_unused_parameters / static_graph), torch.compile, the DataLoader's workers, and what runs inside the
// training loop every step: host syncs (.item(), .cpu(), .tolist(), .numpy(), torch.cuda.synchronize(),
// .nonzero(), one-argument torch.where, boolean-mask indexing), blocking host-to-device copies, a manual
// all-reduce or barrier, emptying the CUDA cache. Emits diagnose::CodeUse facts (facts/facts.h), one per construct
// and line, with the line as provenance, and Setting facts for environment variables the code sets
// (os.environ["NCCL_P2P_DISABLE"] = "1"). What the code does, not what it means: whether a sync matters is the
// diagnosis's judgement.
//
// The loop is found from Python's indentation: the body of a `for` or `while` statement (any depth) is "in the
// loop". Comments and string literals are not read as code. Pure; never throws.
//
// Sources of the constructs' effects (cited by the diagnosis, not used here): PyTorch's "CUDA semantics" notes
// (synchronising operations, torch.cuda.set_sync_debug_mode), DDP's documentation (find_unused_parameters,
// static_graph, no_sync), torch.utils.data.DataLoader (num_workers default 0: loading in the main process).

#include <string>
#include <string_view>

#include "facts/facts.h"

namespace scalescope::analyze {

/// Whether `text` is Python source that uses PyTorch: most non-blank lines are code (import/def/class/assignments/
/// calls, not sentences) and it names torch. A post with code blocks is prose, not code: its code blocks are read
/// by read_python_code through the prose reader.
bool looks_like_python_code(std::string_view text);

/// The constructs of `text` (Python source); `source` names it in provenance; `first_line` is the 1-based line of
/// `text`'s first line in its file (code blocks inside a post). Never throws.
diagnose::Reading read_python_code(std::string_view text, const std::string& source, std::size_t first_line = 1);

}  // namespace scalescope::analyze
