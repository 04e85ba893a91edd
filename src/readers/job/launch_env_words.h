// The words of commands and environments (internal to readers/job/launch_env*.cpp): shell words and quoting, the
// known models by name, settings and what they fix, prompts, wrappers and launchers' options
// (launch_env_words.cpp); each launcher read into facts (launch_env_launchers.cpp); segments, logical lines and
// environment-dump lines (launch_env_lines.cpp).
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <set>
#include <utility>
#include <vector>
#include <fmt/format.h>
#include "text/log_text.h"

#include "readers/job/launch_env.h"

namespace scalescope::analyze::launch_env_detail {


using diagnose::at;
using diagnose::Reading;

bool starts_with(std::string_view s, std::string_view p);
bool ends_with(std::string_view s, std::string_view p);

std::string lower(std::string_view s);

bool is_name_start(char c);
bool is_name_char(char c);

// "NAME=value" with NAME a shell variable name: the position of '=' or npos.
std::size_t assignment_eq(std::string_view w);

std::optional<int> to_int(std::string_view t);

std::optional<double> to_number(std::string_view t);

std::string basename_of(std::string_view path);

// ───────────────────────────── shell words ─────────────────────────────

// One word of a command line after quote removal, or an operator that separates commands.
struct Word {
  std::string text;
  bool op = false;        // ";", "&&", "||", "|", "&"
  bool quoted = false;    // some part was quoted (then "#", "|" … in it are literal)
};

struct Words {
  std::vector<Word> words;
  bool unterminated_quote = false;
};

// Splits a (joined) command line into words the way a POSIX shell would for the purposes here: quotes removed,
// backslash escapes resolved, backslash-newline dropped, operators separated, redirections dropped ("> log",
// "2>&1"), and a comment ("# …" after a command word) cut. A leading "#" (a commented-out command, a root prompt)
// is kept as a word of its own for the caller to skip.
Words shell_words(std::string_view s);

// ───────────────────────────── known models ─────────────────────────────

struct KnownModel {
  const char* name;  // lower case, as the name (or its start, followed by '-' or '_') is written
  double parameters;
};

// Parameter counts of well-known models, by their usual names. Sources:
//   GPT-2: Hugging Face model cards openai-community/gpt2 ("124M parameters"; OpenAI's paper counted 117M),
//     gpt2-medium ("355M parameter version"), gpt2-large ("774M"), gpt2-xl ("1.5B").
//   BERT: Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers", §3 (BASE 110M, LARGE 340M);
//     DistilBERT: Sanh et al. 2019 (66M); RoBERTa: model cards roberta-base (125M), roberta-large (355M).
//   T5: Raffel et al. 2020, Table 14 (small 60M, base 220M, large 770M).
//   torchvision: the weights tables of docs.pytorch.org/vision/stable/models (num_params): resnet18 11,689,512,
//     resnet34 21,797,672, resnet50 25,557,032, resnet101 44,549,160, resnet152 60,192,808, alexnet 61,100,840,
//     vgg16 138,357,544, vgg19 143,667,240, vit_b_16 86,567,656.
inline constexpr KnownModel kKnownModels[] = {
    {"gpt2-medium", 355e6}, {"gpt2-large", 774e6}, {"gpt2-xl", 1.5e9},   {"gpt2", 124e6},
    {"distilgpt2", 82e6},   {"bert-base", 110e6},  {"bert-large", 340e6}, {"distilbert", 66e6},
    {"roberta-base", 125e6}, {"roberta-large", 355e6}, {"t5-small", 60e6}, {"t5-base", 220e6},
    {"t5-large", 770e6},    {"resnet18", 11.7e6},  {"resnet34", 21.8e6},  {"resnet50", 25.6e6},
    {"resnet101", 44.5e6},  {"resnet152", 60.2e6}, {"alexnet", 61.1e6},   {"vgg16", 138.4e6},
    {"vgg19", 143.7e6},     {"vit_b_16", 86.6e6},  {"vit-base", 86.6e6},
};

// "3b", "1.5B", "124M", "14m" → 3e9, 1.5e9, 124e6, 14e6.
std::optional<double> size_token(std::string_view t);


// ───────────────────────────── settings ─────────────────────────────

void add_setting(Reading& r, std::string name, std::string value, const std::string& origin, const std::string& source,
                 std::size_t line, std::string_view text);

// ───────────────────────────── launchers ─────────────────────────────

// A word that is part of a shell prompt or a quote marker rather than the command: "$", "#", ">", "+", "%",
// "(base)", "user@host:~$", "[user@host dir]$", "PS>".
bool is_prompt_word(std::string_view w);

enum class Kind { none, python, torchrun, mpirun, srun, deepspeed, accelerate, nccl_tests, horovodrun, shell };

bool is_python(std::string_view base);

// nccl-tests programs: all_reduce_perf, alltoall_perf, sendrecv_perf … and their "_mpi" builds.
bool is_nccl_test(std::string_view base);

Kind kind_of_word(const std::vector<Word>& w, std::size_t i);

// Wrappers that run the command after them: (name, options that take a separate value). Their own options
// (words starting with '-') are skipped.
struct Wrapper {
  const char* name;
  std::array<const char*, 8> value_options;
  int positionals = 0;  // words after the options that belong to the wrapper (an image, a mask)
};
inline constexpr Wrapper kWrappers[] = {
    {"env", {"-u", "--unset", "-C", "--chdir"}, 0},
    {"nohup", {}, 0},
    {"time", {"-f", "-o"}, 0},
    {"sudo", {"-u", "-g", "-C", "-D", "-h"}, 0},
    {"exec", {"-a"}, 0},
    {"command", {}, 0},
    {"nice", {"-n"}, 0},
    {"stdbuf", {"-i", "-o", "-e"}, 0},
    {"numactl", {"-N", "-m", "-C", "-c", "-p", "-i", "-P"}, 0},
    {"taskset", {"-c"}, 0},
    {"ionice", {"-c", "-n", "-p"}, 0},
    {"chrt", {"-p"}, 1},
};

// Whether the words of `seg` from `from` on read as an English sentence rather than a program's arguments: two or
// more common English words unquoted ("works fine only with those linked through SYS"), or a word that ends a
// sentence ("hanging.", "fine!", "this?"). A program name at the start of a sentence is no command.
bool prose_words(const std::vector<Word>& seg, std::size_t from);

// Where the launcher of `seg` starts after prompts, VAR=value prefixes and wrappers; collects the prefixes.
struct CommandStart {
  std::size_t launcher = 0;
  std::vector<std::pair<std::string, std::string>> env;  // VAR=value before the command
  bool is_export = false;                                  // "export A=1 B=2" (no command)
};

std::optional<CommandStart> find_start(const std::vector<Word>& seg);

// An option word: "--nproc_per_node=8" → ("nproc_per_node", "8"); "--nproc-per-node" → ("nproc_per_node", none).
struct Opt {
  std::string name;                 // without leading dashes, '-' → '_'
  std::optional<std::string> value; // after '=' when glued
  bool single_dash = false;
};
Opt parse_opt(std::string_view w);

bool in(std::string_view name, std::initializer_list<std::string_view> set);

// Whether an unknown option "--x" takes the next word as its value: the next word is no option and not the
// program (a .py file or an executable path).
bool next_is_value(const std::vector<Word>& seg, std::size_t i);

struct LaunchOut {
  diagnose::Launch launch;
  std::optional<diagnose::WorldShape> world;
  std::size_t program_at = 0;  // index of the program word in the segment (seg.size() when none)
};

// The flags of a program (a training script or an nccl-tests binary) that say something about the model, the
// batch and the GPUs per process.
struct ProgramFacts {
  std::optional<std::string> model;
  std::optional<std::string> dtype;
  diagnose::BatchSize batch;
  bool batch_set = false;
  std::optional<int> nccl_gpus, nccl_threads;
};

ProgramFacts program_facts(const std::vector<std::string>& args, bool nccl_test);

// The program and its arguments after a launcher's options. `value_opts`: options that take a separate value;
// `bool_opts`: options that do not. Unknown options take one when next_is_value says so.
std::size_t skip_options(const std::vector<Word>& seg, std::size_t i, std::initializer_list<std::string_view> value_opts,
                         std::initializer_list<std::string_view> bool_opts,
                         const std::function<void(const Opt&, const std::optional<std::string>&)>& on_opt);


// After python's own options: the script or module.
struct PythonTarget {
  std::size_t at = 0;              // index of the script, of the module name after -m, or of "-c"
  std::optional<std::string> module;
  bool command = false;            // python -c '…'
};
PythonTarget python_target(const std::vector<Word>& seg, std::size_t i);

// The launcher a python module stands for ("python -m torch.distributed.launch" is a launcher, not a program).
Kind module_kind(std::string_view module);

// Open MPI / MPICH flags that take no value (others take one when next_is_value says so).
inline constexpr std::string_view kMpiFlags[] = {
    "allow_run_as_root", "oversubscribe", "nooversubscribe", "tag_output", "timestamp_output", "report_bindings",
    "display_map", "display_allocation", "display_devel_map", "v", "verbose", "q", "quiet", "noprefix", "nolocal",
    "merge_stderr_to_stdout", "use_hwthread_cpus", "bind_to_core", "bind_to_socket", "bynode", "byslot", "pernode",
    "hetero_nodes", "leave_session_attached", "enable_recovery", "show_progress", "l", "prepend_rank",
    "print_rank_map", "disable_auto_cleanup", "verbose_mode", "no_binding", "gpu", "help", "h", "V", "version"};

bool read_segment(const std::vector<Word>& seg, Reading& r, const std::string& source, std::size_t line,
                  std::string_view text, int depth);

// Reads the launcher at seg[i] of `kind` (its options, program and arguments) into facts.
bool read_launch(const std::vector<Word>& seg, std::size_t i, Kind kind, Reading& r, const std::string& source,
                 std::size_t line, std::string_view text, int depth);

// Reads one command of a segment (words between operators): its VAR=value prefixes and its launcher. Whether it
// was a command.
bool read_segment(const std::vector<Word>& seg, Reading& r, const std::string& source, std::size_t line,
                  std::string_view text, int depth);


// The segments of a word list split at operators.
std::vector<std::vector<Word>> segments(const std::vector<Word>& words);

// Strips markdown quote markers ("> > ") from the start of a line.
std::string_view strip_quote_markers(std::string_view s);

// The logical lines of a text: backslash-continued lines joined, each with the number of its first line.
struct Logical {
  std::string text;
  std::size_t line = 0;
  std::string first;  // the first physical line (for provenance)
};
std::vector<Logical> logical_lines(std::string_view text);

bool well_known_name(std::string_view n);

bool has_launcher(const std::vector<Word>& seg, int depth = 0);

// One line of an environment dump: its settings, or nothing (blank, comment, prompt), or "other".
struct EnvLine {
  enum class What { blank, settings, other } what = What::blank;
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<std::pair<std::string, std::string>> commented;  // "#export NAME=value": not in force
};

// A value the shell computes when the script runs ("$(scontrol show hostnames …)", "`hostname`", "$master_addr",
// "${SLURM_NNODES}"): not known from the text.
bool computed_value(std::string_view v);

std::string unquote(std::string_view v);

EnvLine env_line(std::string_view raw, std::optional<std::string>& pending_k8s_name);

bool has_launcher(const std::vector<Word>& seg, int depth);


}  // namespace scalescope::analyze::launch_env_detail
