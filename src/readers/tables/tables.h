#pragma once
// Reads the timing and scaling tables people post: markdown tables (also inside code fences, quote markers or HTML
// copied from a document: tags and entities are removed, line numbers kept), pipe tables without markdown, CSV
// (quoted cells), TSV, space-aligned columns, "label  value" lists and pair lists ("host-a,host-b   49.36"),
// "label: value" lists whose labels name a GPU or node count or a mode ("2 GPUs: 55.1 s", "DataParallel(two GPUs):
// 24s/epoch 86.1@15epochs" — the first figure after the colon, with its unit, is the value; fields after it are left
// out with a note) — per GPU count or per variant (DDP vs DP, with or without NVLink, RoCE on or off, NCCL versions,
// topology files, settings), with times, throughputs or bandwidths. HTML <table> markup is not rebuilt into rows.
// Headerless tables other than pipe tables are read only with two columns (a label and a value).
//
// Every data cell becomes one diagnose::Measurement:
//   quantity  from the column header, normalised: "step time" (step / iteration / batch time or duration, s/it),
//             "run time" (time, runtime, train_runtime, duration, elapsed, "time secs", a time unit alone),
//             "epoch time", "throughput" (throughput, speed, samples/s, tokens/s, img/s, it/s, "*_per_second"),
//             "throughput per GPU" (a rate "/GPU", "per GPU": not the job's throughput),
//             "busbw", "algbw", "bandwidth" (bandwidth, bw, or GB/s alone), "GPU busy time" (GPU processing /
//             busy / compute time), "GPU idle share" (idle in %), "GPU idle time" (idle in seconds), "GPU
//             utilization", "communication time" (all-reduce / comm / NCCL time), "data time", "latency",
//             "speedup" (speedup, "weak/strong scaling" columns, cells printed "2.63 x"), "efficiency"; otherwise
//             the unit of the cells names it (GB/s → "bandwidth", samples/s → "throughput", s → "run time", s/it →
//             "step time", s/epoch → "epoch time"), else the header itself in lower case (noted). Figures with
//             neither header nor unit are "value" (noted); a pair list's are "bandwidth" (noted). In a table whose
//             variants are columns and quantities rows ("| | NVLink on | NVLink off |"), the row label names it.
//   unit      "s", "ms", "us", "GB/s", "Gb/s", "samples/s", "img/s", "tokens/s", "sequences/s", "it/s", "%",
//             "<word>/s" for other rates, "" when neither header nor cell says and for ratios ("2.63 x"). Minutes
//             and hours are converted to "s", MB/s, MiB/s, GiB/s and TB/s to "GB/s", Mb/s to "Gb/s"; "41k" and
//             "1.2M" are multiplied out. A header that is only a unit names the quantity as that unit does ("s/epoch"
//             → "epoch time"). A cell's own unit wins over a name of the other family: a time ("~370ms") under a
//             bandwidth's or throughput's name (row or column) is read as the time its unit says, a rate under a
//             time's name as that rate (noted); a column whose cells mix time and rate units names no quantity of
//             its own, so each cell's unit (or, in a table whose variants are columns, the row label) names it.
//   higher_is_better  true for throughputs (also per GPU), bandwidths, busbw/algbw, speedups, efficiencies, GPU utilisation,
//             other "/s" rates, pair lists; false for times, latencies, idle shares and quantities the reader does
//             not know (noted).
//   dims      what the row's label cells, the column's header and the title say, normalised so that one condition
//             is spelled the same in every row:
//               "gpus" → "2" ("2:DDP", "2 GPUs", "two GPUs", "1GPU", "8-gpu", "8x", "8xH100", "8 x A100", "x8", a
//               GPU-count column: GPUs, world size, ranks …), "nodes" → "2" ("2 nodes", "2-node", "1M/8G", a node-count
//               column), "gpus_per_node" → "8" ("2x8", "2x4A40", "2 nodes x 8", "8 GPUs/node", a GPUs-per-node
//               column; "gpus" is then nodes × gpus_per_node); "gpu" → the product in upper case ("H100", "A40",
//               "RTX 3090", "2080 Ti", "MI300X"; form factors such as SXM5/PCIe after it are dropped);
//               "mode" → "DDP" | "DP" | "FSDP" | "DeepSpeed" | "Horovod" | "single" ("DistributedDataParallel",
//               "DistributedDP", "DataParallel", "single GPU", and one-GPU rows of a table whose other rows name a
//               mode); "zero_stage" → "2" ("ZeRO-2", "zero stage 2");
//               feature toggles → "on" | "off": "nvlink" (NVLink, NV), "p2p", "shm", "ib" (also InfiniBand), "roce",
//               "rdma", "gdr" (GDRDMA, GPUDirect), "sharp", "nvls", "collnet", "pxn", "cumem", "hyperthreading" (HT,
//               SMT; "HTOff"); "off" after "no", "non", "not", "w/o", "without", "disable(d)", before "off" /
//               "disabled", joined ("noNV", "nvlinkoff", "non-p2p"), and for NCCL_<F>_DISABLE=1 / NCCL_<F>_ENABLE=0;
//               a feature named with no negation is "on";
//               "nccl_version" → "2.19.3" (an "NCCL Version" column, "nccl 2.19.3"; likewise "cuda_version",
//               "torch_version", "driver_version"; "version" for a bare x.y.z); "topology" → "topo1" (a topology
//               column, "topoN", "*.xml", NCCL_TOPO_FILE's file name); "link" → "NV12" | "PIX" | "PXB" | "PHB" |
//               "NODE" | "SYS" | "PCIe" | "NVSwitch"; "network" → "Socket" | "EFA" | "Ethernet" | "IB" | "RoCE" (a
//               network in a label or header, "Actual (Socket)", or the cells of a "Network" / "Net" column; IB and
//               RoCE named bare — no "no", "w/o", "on", "enabled" … — give it beside their toggle, and keep it only
//               when another row of the table names another network, so that "IB" against "no IB" differ in the
//               toggle alone); "precision" →
//               "fp16" | "bf16" | "fp32" | "tf32" | "fp8" | "mixed" (AMP, "mixed precision");
//               "setting:NAME" → value for other NAME=value labels ("NCCL_ALGO=Ring"), and for algorithm / protocol
//               columns ("setting:NCCL_ALGO", "setting:NCCL_PROTO");
//               "pair" → "host-a,host-b" when the first column's labels are pairs ("a,b", "a <-> b", "a - b";
//               `members` holds the two names); "host" → a host column's name (`members` holds it) or an IP-like
//               word of a label ("192-0-2-14"); "gpu_index" ("GPU0", "cuda 1"), "rank" ("rank 3");
//               "repeat" → "2" ("run 2", "#2", a column "X repeat 2" or "X 2" next to a column "X …", which gets
//               "1"); "note" → a trailing "# comment" or a note column;
//               configuration columns by their normalised header: "batch", "batch_per_gpu", "global_batch",
//               "seq_len", "grad_accum", "model", "epochs", "steps", "workers", "mode", "precision", "link",
//               "network", … or the header in lower case without its parentheses; values as printed ("128 and
//               256"), counts as plain integers;
//               "scaling" → "weak" | "strong" and "compared" → "TF32 to mixed precision" for speedup columns
//               (a compared column has no "precision"); "precision" from a value column's header otherwise;
//               "series" → what tells apart two value columns of one quantity ("DALI_extra", "coco2014_val");
//               a value column whose header names a condition instead of a quantity ("1 GPU", "NVLink off") adds it;
//               "label" → the row label as printed when no word of it was understood; "variant" → the words
//               nothing explained when others were ("LambdaOD Texas 80GB v2" of
//               "LambdaOD_Texas_8xH100_80GB_SXM5_v2"), so that rows differing in one understood dimension still
//               compare; words such as "baseline", "default", "multi-node", "actual", "measured" are understood and
//               add nothing.
//             A title — the nearest short line above the table and the nearest heading within 12 lines above it
//             (markdown "#", an HTML <h1>…<h6>) — adds what it names (gpus, nodes, mode, precision, gpu, toggles,
//             versions …) to rows that do not say otherwise; its GPU and node counts are left out of rows that count
//             their own GPUs, and its GPU count becomes "gpus_per_node" on rows that count nodes ("8x A100" over a
//             "Num Nodes" column).
//   row       the row label as printed (label cells joined by " | "; for variants as columns, the column's
//             header); table  "table N" (1-based, counting tables that gave measurements) when the text holds
//             several, else "".
// Cells that are not numbers ("internal error", "N/A", "segfault") are no measurement and are noted; empty and dash
// cells are skipped silently. Columns headed, and rows labelled, with a word of reference figures — expected, target,
// theoretical, spec, ideal, nominal, advertised, datasheet ("Expected (IB)", "Theoretical peak", "Ideal speedup") —
// hold no measurement: they are not read (noted). Rows derived from the others — labels with reduction, improvement, speedup, slowdown,
// ratio, difference, delta, gain, saving, relative, faster/slower, total, sum, average/avg/mean/median, std,
// "vs", versus, change — are left out with a note. Values may carry "~", "≈", "about", thousands separators, units
// ("~365 GB/s", "1,234 img/s", "22.4s", "1.38s/it"), clock times ("1:42" as m:ss, "1:02:03", noted), durations
// ("2m20s", "1h 20m"), ranges ("40-41", read as the midpoint, noted), "± spread" (dropped, noted), a leading "x"
// ("x1.59") and a trailing "(…)" or "[…]". Blank lines and rule lines ("=====") inside a table keep it one table
// (a piece without a header continues the table above it when its width and form match); a header row followed
// by a separator row starts a new one. A row with fewer cells than its header is read as far as it goes (noted).
// A title line gives ModelSeen (a name with a size part — "Llama-3.2-3B-Instruct" → 3e9 — or a known model such
// as gpt2, bert-large, resnet50; dtype from the title's precision), GpuSeen (the product it names) and WorldShape
// (when it gives nodes and GPUs per node, basis "table title"), each once per text.
// Text that is another reader's (nccl-tests outputs with algbw/busbw headers, "# nThread", "Avg bus bandwidth";
// `nvidia-smi topo -m` matrices; cProfile listings; NCCL debug logs — three or more NCCL INFO/WARN lines or a third
// of the text; environment dumps) is not a measurement table; when asked to read such a text anyway, only its pipe
// tables are read (noted), and any table under an nccl-tests, topology or cProfile header is skipped (noted).
// Limits: 200000 lines (noted), 64 columns. Pure; no I/O.

#include <optional>
#include <string>
#include <string_view>

#include "facts/facts.h"

namespace scalescope::analyze {

/// Whether `text` holds a table or list from which this reader reads measurements in at least two rows (of one
/// table). Looks at the first 20000 lines only. False for NCCL debug logs, nccl-tests outputs ("# nThread",
/// "algbw busbw" headers), `nvidia-smi topo -m` matrices ("GPU0 GPU1" headers, "CPU Affinity"), Python profiles,
/// prose and environment dumps. Never throws (false on any internal failure).
bool looks_like_measurement_table(std::string_view text);

/// looks_like_measurement_table and read_measurement_tables in one parse: the reading when `text` holds such a table,
/// nullopt when not. A text longer than detection looks at (20000 lines) is judged by its head and then read whole.
/// Never throws.
std::optional<diagnose::Reading> read_measurement_tables_if_any(std::string_view text, const std::string& source);

/// Reads every table and list of `text` (`source` names it in provenance: 1-based line of the row, the row's
/// text with HTML tags removed; title facts point at the title's line). Returns, table by table, the title's
/// ModelSeen / GpuSeen / WorldShape facts and then the table's Measurement facts, and notes ("line N: …") on cells
/// and rows it did not read and on how it read ambiguous ones. Never throws: damaged text gives fewer facts and notes
/// (an internal failure ends reading with a note).
diagnose::Reading read_measurement_tables(std::string_view text, const std::string& source);

}  // namespace scalescope::analyze
