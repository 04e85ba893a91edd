#include "readers/job/launch_env.h"

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

namespace scalescope::analyze {
namespace {

using diagnose::at;
using diagnose::Reading;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// "NAME=value" with NAME a shell variable name: the position of '=' or npos.
std::size_t assignment_eq(std::string_view w) {
  if (w.empty() || !is_name_start(w.front())) return std::string_view::npos;
  for (std::size_t i = 1; i < w.size(); ++i) {
    if (w[i] == '=') return i;
    if (!is_name_char(w[i])) return std::string_view::npos;
  }
  return std::string_view::npos;
}

std::optional<int> to_int(std::string_view t) {
  t = trim_blanks(t);
  auto v = parse_decimal(t);
  if (!v || *v > 100000000) return std::nullopt;
  return static_cast<int>(*v);
}

std::optional<double> to_number(std::string_view t) {
  t = trim_blanks(t);
  if (t.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string basename_of(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

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
Words shell_words(std::string_view s) {
  Words out;
  std::string cur;
  bool have = false, quoted = false;
  auto flush = [&] {
    if (have) out.words.push_back({cur, false, quoted});
    cur.clear();
    have = quoted = false;
  };
  std::size_t i = 0;
  bool skip_next_word = false;  // after a redirection operator
  auto push_op = [&](std::string op) {
    flush();
    out.words.push_back({std::move(op), true, false});
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      if (have && skip_next_word) {
        cur.clear();
        have = quoted = false;
        skip_next_word = false;
      }
      flush();
      ++i;
      continue;
    }
    if (c == '\'') {
      const auto close = s.find('\'', i + 1);
      if (close == std::string_view::npos) {
        cur.append(s.substr(i + 1));
        out.unterminated_quote = true;
        i = s.size();
      } else {
        cur.append(s.substr(i + 1, close - i - 1));
        i = close + 1;
      }
      have = quoted = true;
      continue;
    }
    if (c == '"') {
      ++i;
      bool closed = false;
      while (i < s.size()) {
        if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '"' || s[i + 1] == '\\' || s[i + 1] == '$' || s[i + 1] == '`')) {
          cur += s[i + 1];
          i += 2;
        } else if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
          i += 2;
        } else if (s[i] == '"') {
          ++i;
          closed = true;
          break;
        } else {
          cur += s[i++];
        }
      }
      if (!closed) out.unterminated_quote = true;
      have = quoted = true;
      continue;
    }
    if (c == '\\') {
      if (i + 1 < s.size()) {
        if (s[i + 1] == '\n') {
          i += 2;
        } else if (s[i + 1] == '\r') {
          i += (i + 2 < s.size() && s[i + 2] == '\n') ? 3 : 2;
        } else {
          cur += s[i + 1];
          have = true;
          i += 2;
        }
      } else {
        ++i;  // a trailing backslash: a continuation with nothing after it
      }
      continue;
    }
    if (c == '#' && !have && !out.words.empty() && !out.words.back().op && !skip_next_word) {
      // A comment after command words: the rest of the line.
      const bool after_cmd = !(out.words.size() == 1 && out.words.front().text == "#");
      if (after_cmd) break;
    }
    if (c == ';' || c == '|' || c == '&') {
      // "2>&1", "&>", ">&" belong to redirections.
      if (c == '&' && i + 1 < s.size() && s[i + 1] == '>') {  // "&> file"
        flush();
        skip_next_word = true;
        i += 2;
        continue;
      }
      if (c == '|' && i + 1 < s.size() && s[i + 1] == '|') { push_op("||"); i += 2; continue; }
      if (c == '&' && i + 1 < s.size() && s[i + 1] == '&') { push_op("&&"); i += 2; continue; }
      push_op(std::string(1, c));
      ++i;
      continue;
    }
    if (c == '>' || c == '<') {
      // A redirection: drop it and its target. "2>" / "1>" glued: drop the digit word too.
      if (have && std::all_of(cur.begin(), cur.end(), [](char d) { return std::isdigit(static_cast<unsigned char>(d)); })) {
        cur.clear();
        have = quoted = false;
      } else {
        flush();
      }
      std::size_t j = i + 1;
      while (j < s.size() && (s[j] == '>' || s[j] == '&' || s[j] == '|')) ++j;
      // "2>&1": the target is a descriptor glued to it.
      if (j < s.size() && s[j - 1] == '&' && std::isdigit(static_cast<unsigned char>(s[j]))) {
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        i = j;
        continue;
      }
      i = j;
      // Skip blanks, then the target word.
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
      while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != ';' && s[i] != '|' && s[i] != '&' && s[i] != '\n') ++i;
      continue;
    }
    cur += c;
    have = true;
    ++i;
  }
  flush();
  return out;
}

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
constexpr KnownModel kKnownModels[] = {
    {"gpt2-medium", 355e6}, {"gpt2-large", 774e6}, {"gpt2-xl", 1.5e9},   {"gpt2", 124e6},
    {"distilgpt2", 82e6},   {"bert-base", 110e6},  {"bert-large", 340e6}, {"distilbert", 66e6},
    {"roberta-base", 125e6}, {"roberta-large", 355e6}, {"t5-small", 60e6}, {"t5-base", 220e6},
    {"t5-large", 770e6},    {"resnet18", 11.7e6},  {"resnet34", 21.8e6},  {"resnet50", 25.6e6},
    {"resnet101", 44.5e6},  {"resnet152", 60.2e6}, {"alexnet", 61.1e6},   {"vgg16", 138.4e6},
    {"vgg19", 143.7e6},     {"vit_b_16", 86.6e6},  {"vit-base", 86.6e6},
};

// "3b", "1.5B", "124M", "14m" → 3e9, 1.5e9, 124e6, 14e6.
std::optional<double> size_token(std::string_view t) {
  if (t.size() < 2) return std::nullopt;
  const char unit = static_cast<char>(std::tolower(static_cast<unsigned char>(t.back())));
  double scale = unit == 'b' ? 1e9 : unit == 'm' ? 1e6 : 0;
  if (scale == 0) return std::nullopt;
  auto v = to_number(t.substr(0, t.size() - 1));
  if (!v || *v <= 0 || t.front() == '.' || !std::isdigit(static_cast<unsigned char>(t.front()))) return std::nullopt;
  return *v * scale;
}

}  // namespace

std::optional<double> known_model_parameters(std::string_view name) {
  std::string n = lower(trim_blanks(name));
  while (!n.empty() && (n.back() == '/' || n.back() == '\'' || n.back() == '"')) n.pop_back();
  // "openai-community/gpt2", "/models/bert-base-uncased", "models--meta-llama--Llama-3.2-3B" → the last part.
  if (auto slash = n.rfind('/'); slash != std::string::npos) n = n.substr(slash + 1);
  if (auto dd = n.rfind("--"); dd != std::string::npos && starts_with(n, "models--")) n = n.substr(dd + 2);
  if (n.empty()) return std::nullopt;
  for (const auto& m : kKnownModels) {
    const std::string_view k = m.name;
    if (n == k || (starts_with(n, k) && n.size() > k.size() && (n[k.size()] == '-' || n[k.size()] == '_')))
      return m.parameters;
  }
  // A size in the name: "Llama-3.2-3B-Instruct", "pythia-1.4b", "tiny-14m", "opt-125m" ("8x7B" is left alone).
  std::size_t i = 0;
  while (i < n.size()) {
    std::size_t j = i;
    while (j < n.size() && n[j] != '-' && n[j] != '_' && n[j] != '/') ++j;
    if (auto v = size_token(std::string_view(n).substr(i, j - i))) return v;
    i = j + 1;
  }
  return std::nullopt;
}

namespace {

// ───────────────────────────── settings ─────────────────────────────

void add_setting(Reading& r, std::string name, std::string value, const std::string& origin, const std::string& source,
                 std::size_t line, std::string_view text) {
  const auto where = at(source, line, text);
  r.facts.add(diagnose::Setting{.name = name, .value = value, .origin = origin}, where);
  // What some settings fix by themselves.
  if (name == "CUDA_VISIBLE_DEVICES") {
    int count = 0;
    std::string_view v = trim_blanks(value);
    if (!v.empty() && v != "-1" && lower(v) != "nodevfiles") {
      std::size_t i = 0;
      while (i <= v.size()) {
        std::size_t j = v.find(',', i);
        if (j == std::string_view::npos) j = v.size();
        std::string_view e = trim_blanks(v.substr(i, j - i));
        // CUDA stops at the first entry that is not a device (a negative or malformed index).
        const bool device = !e.empty() && (std::all_of(e.begin(), e.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
                                           starts_with(e, "GPU-") || starts_with(e, "MIG-"));
        if (!device) break;
        ++count;
        i = j + 1;
      }
    }
    diagnose::GpuCount g;
    g.count = count;
    g.scope = "cuda";
    r.facts.add(std::move(g), where);
  }
  auto world = [&](auto setter, std::string basis) {
    if (auto n = to_int(value)) {
      diagnose::WorldShape w;
      setter(w, *n);
      w.basis = std::move(basis);
      r.facts.add(std::move(w), where);
    }
  };
  if (name == "WORLD_SIZE" || name == "OMPI_COMM_WORLD_SIZE" || name == "PMI_SIZE" || name == "SLURM_NTASKS")
    world([](diagnose::WorldShape& w, int n) { w.ranks = n; w.processes = n; }, name + "=" + value);
  else if (name == "LOCAL_WORLD_SIZE" || name == "OMPI_COMM_WORLD_LOCAL_SIZE" || name == "SLURM_NTASKS_PER_NODE")
    world([](diagnose::WorldShape& w, int n) { w.ranks_per_node = n; }, name + "=" + value);
  else if (name == "SLURM_NNODES" || name == "SLURM_JOB_NUM_NODES" || name == "NNODES")
    world([](diagnose::WorldShape& w, int n) { w.nodes = n; }, name + "=" + value);
}

// ───────────────────────────── launchers ─────────────────────────────

// A word that is part of a shell prompt or a quote marker rather than the command: "$", "#", ">", "+", "%",
// "(base)", "user@host:~$", "[user@host dir]$", "PS>".
bool is_prompt_word(std::string_view w) {
  if (w == "$" || w == "#" || w == ">" || w == "+" || w == "++" || w == "%" || w == ">>" || w == "❯" || w == "→")
    return true;
  if (w.size() >= 2 && w.front() == '(' && w.back() == ')') return true;  // (base), (venv)
  if (w.size() >= 2 && (w.back() == '$' || w.back() == '#' || w.back() == '>' || w.back() == '%')) {
    // user@host:~$, root@abc:/workspace#, dir]$
    return w.find('@') != std::string_view::npos || w.find(':') != std::string_view::npos ||
           w.find(']') != std::string_view::npos || w.find('~') != std::string_view::npos;
  }
  if (w.size() >= 2 && w.front() == '[' && w.find('@') != std::string_view::npos) return true;  // "[user@host"
  return false;
}

enum class Kind { none, python, torchrun, mpirun, srun, deepspeed, accelerate, nccl_tests, horovodrun, shell };

bool is_python(std::string_view base) {
  if (!starts_with(base, "python")) return false;
  std::string_view rest = base.substr(6);
  return std::all_of(rest.begin(), rest.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

// nccl-tests programs: all_reduce_perf, alltoall_perf, sendrecv_perf … and their "_mpi" builds.
bool is_nccl_test(std::string_view base) {
  if (ends_with(base, "_mpi")) base.remove_suffix(4);
  if (!ends_with(base, "_perf") || base.size() <= 5) return false;
  std::string_view stem = base.substr(0, base.size() - 5);
  return std::all_of(stem.begin(), stem.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)) || c == '_'; });
}

Kind kind_of_word(const std::vector<Word>& w, std::size_t i) {
  const std::string base = basename_of(w[i].text);
  if (base == "torchrun") return Kind::torchrun;
  if (is_python(base)) return Kind::python;
  if (base == "mpirun" || base == "mpiexec" || base == "orterun" || base == "mpiexec.hydra" || base == "prterun")
    return Kind::mpirun;
  if (base == "srun") return Kind::srun;
  if (base == "deepspeed") return Kind::deepspeed;
  if (base == "horovodrun") return Kind::horovodrun;
  if (base == "accelerate" && i + 1 < w.size() && w[i + 1].text == "launch") return Kind::accelerate;
  if (is_nccl_test(base)) return Kind::nccl_tests;
  if ((base == "bash" || base == "sh" || base == "zsh") && i + 2 < w.size() && w[i + 1].text == "-c") return Kind::shell;
  return Kind::none;
}

// Wrappers that run the command after them: (name, options that take a separate value). Their own options
// (words starting with '-') are skipped.
struct Wrapper {
  const char* name;
  std::array<const char*, 8> value_options;
  int positionals = 0;  // words after the options that belong to the wrapper (an image, a mask)
};
constexpr Wrapper kWrappers[] = {
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
bool prose_words(const std::vector<Word>& seg, std::size_t from) {
  static constexpr std::string_view kEnglish[] = {
      "the", "a", "an", "and", "or", "but", "with", "only", "those", "these", "this", "that", "it", "is", "are", "was",
      "were", "will", "would", "fine", "works", "work", "worked", "working", "result", "in", "of", "to", "for",
      "when", "if", "i", "we", "my", "our", "through", "hangs", "hang", "hanging", "hung", "does", "did", "not",
      "then", "than", "so", "as", "rest", "also", "be", "been", "have", "has", "after", "before", "which", "because",
      "gives", "gave", "fails", "failed", "runs", "ran", "using", "used", "still", "why", "how", "what"};
  int english = 0;
  for (std::size_t k = from; k < seg.size(); ++k) {
    if (seg[k].quoted || seg[k].op) continue;
    const std::string& w = seg[k].text;
    if (w.size() >= 2 && (w.back() == '.' || w.back() == '!' || w.back() == '?' || w.back() == ',')) {
      const std::string_view stem = std::string_view(w).substr(0, w.size() - 1);
      if (std::all_of(stem.begin(), stem.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; })) {
        if (w.back() != ',') return true;
        ++english;
        continue;
      }
    }
    const std::string l = lower(w);
    if (std::find(std::begin(kEnglish), std::end(kEnglish), l) != std::end(kEnglish)) ++english;
  }
  return english >= 2;
}

// Where the launcher of `seg` starts after prompts, VAR=value prefixes and wrappers; collects the prefixes.
struct CommandStart {
  std::size_t launcher = 0;
  std::vector<std::pair<std::string, std::string>> env;  // VAR=value before the command
  bool is_export = false;                                  // "export A=1 B=2" (no command)
};

std::optional<CommandStart> find_start(const std::vector<Word>& seg) {
  CommandStart cs;
  std::size_t i = 0;
  while (i < seg.size() && !seg[i].quoted && is_prompt_word(seg[i].text)) ++i;
  // "[user@host dir]$": the directory word ends the prompt.
  if (i > 0 && i < seg.size() && seg[i - 1].text.front() == '[' && (ends_with(seg[i].text, "]$") || ends_with(seg[i].text, "]#")))
    ++i;
  while (i < seg.size()) {
    const std::string& t = seg[i].text;
    if (const auto eq = assignment_eq(t); eq != std::string::npos) {
      cs.env.emplace_back(t.substr(0, eq), t.substr(eq + 1));
      ++i;
      continue;
    }
    if (t == "export" || t == "declare" || t == "set") {
      cs.is_export = true;
      ++i;
      while (i < seg.size() && starts_with(seg[i].text, "-")) ++i;  // declare -x
      continue;
    }
    bool wrapped = false;
    for (const auto& wr : kWrappers) {
      if (basename_of(t) != wr.name) continue;
      wrapped = true;
      ++i;
      while (i < seg.size() && (starts_with(seg[i].text, "-") || assignment_eq(seg[i].text) != std::string::npos)) {
        if (assignment_eq(seg[i].text) != std::string::npos) {  // env A=1 cmd
          const auto eq = assignment_eq(seg[i].text);
          cs.env.emplace_back(seg[i].text.substr(0, eq), seg[i].text.substr(eq + 1));
          ++i;
          continue;
        }
        const std::string& o = seg[i].text;
        const bool takes = std::any_of(wr.value_options.begin(), wr.value_options.end(),
                                       [&](const char* v) { return v != nullptr && o == v; });
        i += takes ? 2 : 1;
      }
      if (std::string_view(wr.name) == "taskset" && i < seg.size() && !starts_with(seg[i].text, "-")) {
        // "taskset 0xff cmd" (a mask) vs "taskset -c 0-7 cmd" (handled above).
        const auto& m = seg[i].text;
        if (starts_with(m, "0x") || std::all_of(m.begin(), m.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
          ++i;
      }
      i += static_cast<std::size_t>(wr.positionals);
      break;
    }
    if (wrapped) continue;
    // "uv run", "poetry run", "conda run -n env", "pipenv run"
    if ((t == "uv" || t == "poetry" || t == "pipenv" || t == "conda" || t == "micromamba") && i + 1 < seg.size() &&
        seg[i + 1].text == "run") {
      i += 2;
      while (i < seg.size() && starts_with(seg[i].text, "-")) {
        const auto& o = seg[i].text;
        const bool takes = o == "-n" || o == "--name" || o == "-p" || o == "--prefix" || o == "--with" || o == "--python";
        i += takes ? 2 : 1;
      }
      continue;
    }
    // "singularity exec [opts] image.sif cmd", "apptainer exec …"
    if ((t == "singularity" || t == "apptainer") && i + 1 < seg.size() && (seg[i + 1].text == "exec" || seg[i + 1].text == "run")) {
      i += 2;
      while (i < seg.size() && starts_with(seg[i].text, "-")) {
        const auto& o = seg[i].text;
        const bool takes = (o == "-B" || o == "--bind" || o == "--env" || o == "--pwd" || o == "-W" || o == "--workdir" || o == "--home" || o == "-H") ;
        i += takes ? 2 : 1;
      }
      if (i < seg.size()) ++i;  // the image
      continue;
    }
    break;
  }
  cs.launcher = i;
  return cs;
}

// An option word: "--nproc_per_node=8" → ("nproc_per_node", "8"); "--nproc-per-node" → ("nproc_per_node", none).
struct Opt {
  std::string name;                 // without leading dashes, '-' → '_'
  std::optional<std::string> value; // after '=' when glued
  bool single_dash = false;
};
Opt parse_opt(std::string_view w) {
  Opt o;
  o.single_dash = starts_with(w, "-") && !starts_with(w, "--");
  while (starts_with(w, "-")) w.remove_prefix(1);
  const auto eq = w.find('=');
  std::string name(eq == std::string_view::npos ? w : w.substr(0, eq));
  for (char& c : name)
    if (c == '-') c = '_';
  o.name = std::move(name);
  if (eq != std::string_view::npos) o.value = std::string(w.substr(eq + 1));
  return o;
}

bool in(std::string_view name, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), name) != set.end();
}

// Whether an unknown option "--x" takes the next word as its value: the next word is no option and not the
// program (a .py file or an executable path).
bool next_is_value(const std::vector<Word>& seg, std::size_t i) {
  if (i + 1 >= seg.size()) return false;
  const std::string& n = seg[i + 1].text;
  if (starts_with(n, "-")) return false;
  if (ends_with(n, ".py") || ends_with(n, ".sh") || starts_with(n, "./") || is_python(basename_of(n)) ||
      is_nccl_test(basename_of(n)) || basename_of(n) == "torchrun")
    return false;
  return true;
}

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

ProgramFacts program_facts(const std::vector<std::string>& args, bool nccl_test) {
  ProgramFacts pf;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!starts_with(a, "-") || a == "-" || a == "--") continue;
    Opt o = parse_opt(a);
    auto value = [&]() -> std::optional<std::string> {
      if (o.value) return o.value;
      if (i + 1 < args.size() && !starts_with(args[i + 1], "--")) return args[i + 1];
      return std::nullopt;
    };
    if (nccl_test) {
      // nccl-tests: -g/--ngpus GPUs per thread, -t/--nthreads threads per process.
      if ((o.single_dash && o.name == "g") || o.name == "ngpus") {
        if (auto v = value()) pf.nccl_gpus = to_int(*v);
      } else if ((o.single_dash && o.name == "t") || o.name == "nthreads") {
        if (auto v = value()) pf.nccl_threads = to_int(*v);
      }
      continue;
    }
    const std::string& n = o.name;
    if (in(n, {"model_name_or_path", "model", "model_name", "model_id", "pretrained_model_name_or_path", "base_model",
               "arch", "model_path"}) ||
        (o.single_dash && n == "a")) {
      if (auto v = value(); v && !v->empty() && !starts_with(*v, "-")) pf.model = *v;
    } else if (in(n, {"per_device_train_batch_size", "per_gpu_train_batch_size", "micro_batch_size",
                      "train_micro_batch_size_per_gpu", "batch_size", "bs", "local_batch_size", "device_batch_size"}) ||
               (o.single_dash && n == "b")) {
      if (auto v = value()) {
        if (auto x = to_number(*v); x && *x > 0) pf.batch.per_device = *x, pf.batch_set = true;
      }
    } else if (in(n, {"global_batch_size", "total_batch_size"})) {
      if (auto v = value()) {
        if (auto x = to_number(*v); x && *x > 0) pf.batch.global = *x, pf.batch_set = true;
      }
    } else if (in(n, {"gradient_accumulation_steps", "gradient_accumulation", "grad_accum_steps", "grad_accum",
                      "accumulate_grad_batches"})) {
      if (auto v = value()) {
        if (auto x = to_number(*v); x && *x > 0) pf.batch.gradient_accumulation = *x, pf.batch_set = true;
      }
    } else if (n == "bf16" || n == "fp16") {
      // "--bf16", "--bf16 True", "--bf16=true"; "--fp16 False" says no.
      std::optional<std::string> v = o.value;
      if (!v && i + 1 < args.size() && !starts_with(args[i + 1], "-")) {
        const std::string l = lower(args[i + 1]);
        if (l == "true" || l == "false" || l == "1" || l == "0") v = args[i + 1];
      }
      const std::string l = v ? lower(*v) : "true";
      if (l == "true" || l == "1") pf.dtype = n;
    } else if (in(n, {"mixed_precision", "precision", "dtype"})) {
      if (auto v = value()) {
        const std::string l = lower(*v);
        if (l.find("bf16") != std::string::npos || l.find("bfloat16") != std::string::npos) pf.dtype = "bf16";
        else if (l == "fp16" || l == "16" || l == "16-mixed" || l == "float16" || l == "half") pf.dtype = "fp16";
      }
    }
  }
  return pf;
}

// The program and its arguments after a launcher's options. `value_opts`: options that take a separate value;
// `bool_opts`: options that do not. Unknown options take one when next_is_value says so.
std::size_t skip_options(const std::vector<Word>& seg, std::size_t i, std::initializer_list<std::string_view> value_opts,
                         std::initializer_list<std::string_view> bool_opts,
                         const std::function<void(const Opt&, const std::optional<std::string>&)>& on_opt) {
  while (i < seg.size() && starts_with(seg[i].text, "-") && seg[i].text != "-" && seg[i].text != "--") {
    Opt o = parse_opt(seg[i].text);
    std::optional<std::string> value = o.value;
    std::size_t used = 1;
    if (!value) {
      const bool is_value = in(o.name, value_opts);
      const bool is_bool = in(o.name, bool_opts);
      if (is_value || (!is_bool && next_is_value(seg, i))) {
        if (i + 1 < seg.size()) value = seg[i + 1].text;
        used = 2;
      }
    }
    on_opt(o, value);
    i += used;
  }
  if (i < seg.size() && seg[i].text == "--") ++i;
  return i;
}


// After python's own options: the script or module.
struct PythonTarget {
  std::size_t at = 0;              // index of the script, of the module name after -m, or of "-c"
  std::optional<std::string> module;
  bool command = false;            // python -c '…'
};
PythonTarget python_target(const std::vector<Word>& seg, std::size_t i) {
  PythonTarget t;
  while (i < seg.size() && starts_with(seg[i].text, "-")) {
    const std::string& o = seg[i].text;
    if (o == "-m" || (starts_with(o, "-m") && o.size() > 2 && !starts_with(o, "--"))) {
      if (o == "-m") {
        t.at = i + 1;
        if (i + 1 < seg.size()) t.module = seg[i + 1].text;
      } else {
        t.module = o.substr(2), t.at = i;
      }
      return t;
    }
    if (o == "-c") {
      t.command = true;
      t.at = i;
      return t;
    }
    i += (o == "-W" || o == "-X" || o == "-Q") ? 2 : 1;
  }
  t.at = i;
  return t;
}

// The launcher a python module stands for ("python -m torch.distributed.launch" is a launcher, not a program).
Kind module_kind(std::string_view module) {
  if (module == "torch.distributed.launch" || module == "torch.distributed.run") return Kind::torchrun;
  if (module == "deepspeed" || starts_with(module, "deepspeed.launcher")) return Kind::deepspeed;
  if (starts_with(module, "accelerate.commands.launch")) return Kind::accelerate;
  return Kind::none;
}

// Open MPI / MPICH flags that take no value (others take one when next_is_value says so).
constexpr std::string_view kMpiFlags[] = {
    "allow_run_as_root", "oversubscribe", "nooversubscribe", "tag_output", "timestamp_output", "report_bindings",
    "display_map", "display_allocation", "display_devel_map", "v", "verbose", "q", "quiet", "noprefix", "nolocal",
    "merge_stderr_to_stdout", "use_hwthread_cpus", "bind_to_core", "bind_to_socket", "bynode", "byslot", "pernode",
    "hetero_nodes", "leave_session_attached", "enable_recovery", "show_progress", "l", "prepend_rank",
    "print_rank_map", "disable_auto_cleanup", "verbose_mode", "no_binding", "gpu", "help", "h", "V", "version"};

bool read_segment(const std::vector<Word>& seg, Reading& r, const std::string& source, std::size_t line,
                  std::string_view text, int depth);

// Reads the launcher at seg[i] of `kind` (its options, program and arguments) into facts.
bool read_launch(const std::vector<Word>& seg, std::size_t i, Kind kind, Reading& r, const std::string& source,
                 std::size_t line, std::string_view text, int depth) {
  diagnose::Launch L;
  diagnose::WorldShape W;
  bool world = false;
  std::string basis;
  std::size_t prog = seg.size();
  std::optional<std::size_t> nested;   // a launcher this one runs (srun torchrun …): its first word
  std::string nested_name;

  // Python running a launcher module is that launcher: the module word stands for the launcher word.
  if (kind == Kind::python) {
    auto t = python_target(seg, i + 1);
    if (!t.module && !t.command && t.at >= seg.size()) return false;  // "python" alone, "python --version"
    if (t.module) {
      if (const Kind k = module_kind(*t.module); k != Kind::none) {
        if (*t.module == "torch.distributed.launch") L.launcher = "torch.distributed.launch";
        kind = k;
        i = t.at;
      }
    }
  }

  // The program word at p (a python interpreter runs the script after its options; a launcher is nested).
  auto as_program = [&](std::size_t p) {
    prog = p;
    if (p >= seg.size()) return;
    if (is_python(basename_of(seg[p].text))) {
      auto t = python_target(seg, p + 1);
      if (t.module && module_kind(*t.module) != Kind::none) {
        nested = p;
        nested_name = *t.module;
      } else {
        prog = t.at;
        if (t.module) L.program = *t.module;
      }
      return;
    }
    const Kind k = kind_of_word(seg, p);
    if (k != Kind::none && k != Kind::nccl_tests) {
      nested = p;
      nested_name = basename_of(seg[p].text);
    }
  };

  switch (kind) {
    case Kind::shell: {
      // bash -c '…': the inner command line.
      const auto inner = shell_words(seg[i + 2].text);
      std::vector<Word> part;
      bool any = false;
      for (const auto& w : inner.words) {
        if (w.op) {
          any |= read_segment(part, r, source, line, text, depth + 1);
          part.clear();
        } else {
          part.push_back(w);
        }
      }
      any |= read_segment(part, r, source, line, text, depth + 1);
      return any;
    }
    case Kind::python: {
      auto t = python_target(seg, i + 1);
      L.launcher = "python";
      if (t.module) L.program = *t.module;
      else if (t.command) L.program = "-c";
      prog = t.at;
      break;
    }
    case Kind::torchrun: {
      // torch/distributed/run.py (torchrun, python -m torch.distributed.run) and torch/distributed/launch.py.
      if (L.launcher.empty()) L.launcher = "torchrun";
      std::optional<int> nproc, nnodes;
      bool standalone = false;
      std::size_t p = skip_options(
          seg, i + 1,
          {"nnodes", "nproc_per_node", "node_rank", "master_addr", "master_port", "rdzv_backend", "rdzv_endpoint",
           "rdzv_id", "rdzv_conf", "max_restarts", "monitor_interval", "start_method", "role", "log_dir", "redirects",
           "r", "tee", "t", "local_addr", "logs_specs", "local_ranks_filter", "rdzv_timeout", "omp_num_threads",
           "event_log_handler", "signals_to_handle", "numa_binding", "virtual_local_rank"},
          {"standalone", "use_env", "no_python", "run_path", "module", "m", "no_local_rank"},
          [&](const Opt& o, const std::optional<std::string>& v) {
            if (o.name == "nproc_per_node" && v) {
              nproc = to_int(*v);
              if (!nproc)
                r.notes.push_back(fmt::format("line {}: --nproc_per_node {} is not a number; the processes per node are unknown", line, *v));
            } else if (o.name == "nnodes" && v) {
              nnodes = to_int(*v);
              if (!nnodes)
                r.notes.push_back(fmt::format("line {}: --nnodes {} is a range or not a number; the node count is unknown", line, *v));
            } else if (o.name == "standalone") {
              standalone = true;
            }
          });
      if (standalone && !nnodes) nnodes = 1;
      L.nproc_per_node = nproc;
      L.nnodes = nnodes;
      as_program(p);
      if (nproc) {
        W.ranks = *nproc * nnodes.value_or(1);
        W.processes = W.ranks;
        W.ranks_per_node = *nproc;
        W.nodes = nnodes.value_or(1);
        world = true;
        basis = fmt::format("{} --nproc_per_node {}{}", L.launcher, *nproc,
                            nnodes ? fmt::format(" --nnodes {}", *nnodes) : std::string(" (one node)"));
      }
      break;
    }
    case Kind::deepspeed: {
      // deepspeed/launcher/runner.py options.
      L.launcher = "deepspeed";
      std::optional<int> gpus, nodes;
      std::string include;
      std::size_t p = skip_options(
          seg, i + 1,
          {"num_gpus", "num_accelerators", "num_nodes", "hostfile", "H", "include", "i", "exclude", "e", "master_port",
           "master_addr", "launcher", "launcher_args", "node_rank", "autotuning", "bind_core_list", "ssh_port",
           "enable_each_rank_log", "comment", "min_elastic_nodes", "max_elastic_nodes", "venv_script", "ssh"},
          {"module", "no_python", "no_local_rank", "force_multi", "elastic_training", "bind_cores_to_rank",
           "no_ssh_check", "save_pid", "use_hostfile"},
          [&](const Opt& o, const std::optional<std::string>& v) {
            if ((o.name == "num_gpus" || o.name == "num_accelerators") && v) gpus = to_int(*v);
            else if (o.name == "num_nodes" && v) nodes = to_int(*v);
            else if ((o.name == "hostfile" || o.name == "H") && v) L.hostfile = true;
            else if ((o.name == "include" || o.name == "i") && v) include = *v;
          });
      if (!include.empty() && !gpus && include.find('@') == std::string::npos) {
        // "--include localhost:0,1,2": one host and its GPUs.
        const auto colon = include.find(':');
        if (colon != std::string::npos) {
          gpus = static_cast<int>(std::count(include.begin() + static_cast<std::ptrdiff_t>(colon), include.end(), ',') + 1);
          if (!nodes) nodes = 1;
        }
      }
      L.nproc_per_node = gpus;
      L.nnodes = nodes;
      as_program(p);
      if (gpus && (nodes || !L.hostfile)) {
        W.ranks = *gpus * nodes.value_or(1);
        W.processes = W.ranks;
        W.ranks_per_node = *gpus;
        W.nodes = nodes.value_or(1);
        world = true;
        basis = fmt::format("deepspeed --num_gpus {}{}", *gpus,
                            nodes ? fmt::format(" --num_nodes {}", *nodes) : std::string(" (one node)"));
      }
      break;
    }
    case Kind::accelerate: {
      // accelerate/commands/launch.py options.
      L.launcher = "accelerate";
      std::optional<int> procs, machines;
      std::optional<double> accum;
      const std::size_t first = basename_of(seg[i].text) == "accelerate" ? i + 2 : i + 1;
      std::size_t p = skip_options(
          seg, first,
          {"config_file", "num_processes", "num_machines", "machine_rank", "main_process_ip", "main_process_port",
           "mixed_precision", "gpu_ids", "dynamo_backend", "num_cpu_threads_per_process", "deepspeed_config_file",
           "zero_stage", "gradient_accumulation_steps", "rdzv_backend", "deepspeed_hostfile",
           "deepspeed_multinode_launcher", "fsdp_sharding_strategy", "fsdp_auto_wrap_policy",
           "fsdp_transformer_layer_cls_to_wrap", "fsdp_state_dict_type", "fsdp_backward_prefetch",
           "offload_optimizer_device", "offload_param_device", "max_restarts", "monitor_interval"},
          {"multi_gpu", "cpu", "use_deepspeed", "use_fsdp", "tpu", "debug", "quiet", "q", "no_python", "module", "m",
           "same_network", "use_megatron_lm", "use_xpu", "enable_cpu_affinity"},
          [&](const Opt& o, const std::optional<std::string>& v) {
            if (o.name == "num_processes" && v) procs = to_int(*v);
            else if (o.name == "num_machines" && v) machines = to_int(*v);
            else if (o.name == "gradient_accumulation_steps" && v) accum = to_number(*v);
            else if (o.name == "deepspeed_hostfile" && v) L.hostfile = true;
          });
      L.np = procs;
      L.nnodes = machines;
      if (procs && machines && *machines > 0 && *procs % *machines == 0) L.nproc_per_node = *procs / *machines;
      as_program(p);
      if (procs) {
        W.ranks = *procs;
        W.processes = *procs;
        if (machines) W.nodes = *machines;
        if (L.nproc_per_node) W.ranks_per_node = L.nproc_per_node;
        world = true;
        basis = fmt::format("accelerate launch --num_processes {}", *procs);
      }
      if (accum && *accum > 0) {
        diagnose::BatchSize b;
        b.gradient_accumulation = *accum;
        r.facts.add(b, at(source, line, text));
      }
      break;
    }
    case Kind::mpirun:
    case Kind::horovodrun: {
      // Open MPI mpirun/mpiexec, MPICH/Intel MPI mpiexec (-ppn, -genv), horovodrun (-np, -H).
      L.launcher = kind == Kind::mpirun ? "mpirun" : "horovodrun";
      std::optional<int> np, per_node;
      std::vector<std::string> hosts;
      std::size_t p = i + 1;
      while (p < seg.size() && starts_with(seg[p].text, "-") && seg[p].text != "--") {
        Opt o = parse_opt(seg[p].text);
        const std::string& n = o.name;
        auto take = [&]() -> std::optional<std::string> {
          if (o.value) return o.value;
          if (p + 1 < seg.size()) return seg[++p].text;
          return std::nullopt;
        };
        if (in(n, {"np", "n", "c"})) {
          if (auto v = take()) np = to_int(*v);
        } else if (in(n, {"hostfile", "machinefile", "f", "default_hostfile"})) {
          take();
          L.hostfile = true;
        } else if (in(n, {"H", "host", "hosts"})) {
          if (auto v = take()) {
            L.hostfile = true;
            std::size_t a = 0;
            while (a <= v->size()) {
              std::size_t b = v->find(',', a);
              if (b == std::string::npos) b = v->size();
              std::string h = v->substr(a, b - a);
              if (auto c = h.find(':'); c != std::string::npos) h = h.substr(0, c);
              if (!h.empty() && std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
              a = b + 1;
            }
          }
        } else if (in(n, {"npernode", "N", "ppn", "perhost"})) {
          if (auto v = take()) per_node = to_int(*v);
        } else if (n == "map_by") {
          if (auto v = take()) {
            const std::string l = lower(*v);  // ppr:8:node
            if (starts_with(l, "ppr:") && l.find(":node") != std::string::npos) per_node = to_int(l.substr(4, l.find(':', 4) - 4));
          }
        } else if (n == "x") {
          if (auto v = take()) {
            if (auto eq = assignment_eq(*v); eq != std::string::npos)
              add_setting(r, v->substr(0, eq), v->substr(eq + 1), "command line", source, line, text);
          }
        } else if (in(n, {"mca", "gmca"})) {
          // "-mca pml ucx" is OMPI_MCA_pml=ucx.
          if (p + 2 < seg.size()) {
            add_setting(r, "OMPI_MCA_" + seg[p + 1].text, seg[p + 2].text, "command line", source, line, text);
            p += 2;
          }
        } else if (in(n, {"genv", "env"})) {
          // MPICH / Intel MPI: -genv NAME value
          if (p + 2 < seg.size()) {
            add_setting(r, seg[p + 1].text, seg[p + 2].text, "command line", source, line, text);
            p += 2;
          }
        } else if (!o.value && std::find(std::begin(kMpiFlags), std::end(kMpiFlags), n) == std::end(kMpiFlags) &&
                   next_is_value(seg, p)) {
          ++p;  // an option with a value (--bind-to core, --rankfile f …)
        }
        ++p;
      }
      if (p < seg.size() && seg[p].text == "--") ++p;
      L.np = np;
      L.nproc_per_node = per_node;
      if (!hosts.empty()) {
        L.nnodes = static_cast<int>(hosts.size());
        W.hosts = hosts;
      }
      as_program(p);
      if (np) {
        W.processes = np;
        W.ranks = np;
        if (per_node) W.ranks_per_node = per_node;
        if (!hosts.empty()) W.nodes = static_cast<int>(hosts.size());
        else if (per_node && *per_node > 0 && *np % *per_node == 0) W.nodes = *np / *per_node;
        world = true;
        basis = fmt::format("{} -np {}{}", L.launcher, *np, L.hostfile ? (hosts.empty() ? " --hostfile" : " -H") : "");
      }
      break;
    }
    case Kind::srun: {
      // Slurm's srun options.
      L.launcher = "srun";
      std::optional<int> nodes, ntasks, per_node;
      std::size_t p = skip_options(
          seg, i + 1,
          {"N", "nodes", "n", "ntasks", "ntasks_per_node", "c", "cpus_per_task", "p", "partition", "A", "account", "t",
           "time", "J", "job_name", "o", "output", "e", "error", "G", "gpus", "gpus_per_node", "gpus_per_task", "gres",
           "mem", "mem_per_cpu", "mem_per_gpu", "w", "nodelist", "x", "exclude", "mpi", "export", "container_image",
           "container_mounts", "container_workdir", "container_name", "cpu_bind", "distribution", "m", "qos",
           "reservation", "jobid", "C", "constraint", "gpu_bind", "D", "chdir", "i", "input", "K", "kill_on_bad_exit",
           "W", "wait", "r", "relative", "ntasks_per_gpu", "cpus_per_gpu", "network", "het_group", "hint"},
          {"l", "label", "u", "unbuffered", "pty", "exclusive", "overlap", "overcommit", "O", "v", "verbose", "Q",
           "quiet", "X", "disable_status", "no_kill", "k", "exact", "whole"},
          [&](const Opt& o, const std::optional<std::string>& v) {
            if (!v) return;
            if ((o.name == "N" && o.single_dash) || o.name == "nodes") nodes = to_int(v->substr(0, v->find('-')));
            else if ((o.name == "n" && o.single_dash) || o.name == "ntasks") ntasks = to_int(*v);
            else if (o.name == "ntasks_per_node") per_node = to_int(*v);
            else if (o.name == "export") {
              // --export=ALL,NCCL_DEBUG=INFO
              std::size_t a = 0;
              while (a <= v->size()) {
                std::size_t b = v->find(',', a);
                if (b == std::string::npos) b = v->size();
                const std::string item = v->substr(a, b - a);
                if (auto eq = assignment_eq(item); eq != std::string::npos)
                  add_setting(r, item.substr(0, eq), item.substr(eq + 1), "command line", source, line, text);
                a = b + 1;
              }
            }
          });
      L.nnodes = nodes;
      L.np = ntasks;
      L.nproc_per_node = per_node;
      as_program(p);
      if (!ntasks && nodes && per_node) ntasks = *nodes * *per_node;
      if (ntasks || nodes) {
        W.ranks = ntasks;
        W.processes = ntasks;
        W.nodes = nodes;
        W.ranks_per_node = per_node;
        world = true;
        basis = fmt::format("srun{}{}{}", nodes ? fmt::format(" -N {}", *nodes) : "", L.np ? fmt::format(" -n {}", *L.np) : "",
                            per_node ? fmt::format(" --ntasks-per-node {}", *per_node) : "");
      }
      break;
    }
    case Kind::nccl_tests:
      L.launcher = "nccl-tests";
      prog = i;
      break;
    case Kind::none:
      L.launcher = "other";
      prog = i;
      break;
  }

  // The program and its arguments. A repeated program word ("./build/all_reduce_perf ./build/all_reduce_perf -b 8")
  // is one program.
  std::vector<std::string> args;
  bool nccl_test = false;
  if (nested) {
    L.program = nested_name;
    for (std::size_t k = *nested + 1; k < seg.size(); ++k) args.push_back(seg[k].text);
  } else if (prog < seg.size()) {
    if (L.program.empty()) L.program = basename_of(seg[prog].text);
    nccl_test = is_nccl_test(L.program);
    std::size_t k = prog + 1;
    while (k < seg.size() && basename_of(seg[k].text) == L.program && !starts_with(seg[k].text, "-")) {
      r.notes.push_back(fmt::format("line {}: the program '{}' is written twice; read as one", line, L.program));
      ++k;
    }
    for (; k < seg.size(); ++k) args.push_back(seg[k].text);
  } else if (L.program.empty()) {
    r.notes.push_back(fmt::format("line {}: {} without a program (the line may be cut)", line, L.launcher));
  }
  L.args = args;
  const auto where = at(source, line, text);

  // nccl-tests: each process drives threads × GPUs ranks.
  if (nccl_test) {
    auto pf = program_facts(args, true);
    const int g = pf.nccl_gpus.value_or(1), t = pf.nccl_threads.value_or(1);
    const std::string how = fmt::format("{} -g {}{}", L.program, g, t > 1 ? fmt::format(" -t {}", t) : "");
    if (kind == Kind::nccl_tests) {
      W = {};
      W.processes = 1;
      W.gpus_per_process = g * t;
      W.ranks = g * t;
      world = true;
      basis = how;
    } else if (world) {
      W.gpus_per_process = g * t;
      if (W.processes) W.ranks = *W.processes * g * t;
      basis += "; " + how;
    }
  }
  const bool has_program = !L.program.empty() && !nested;
  r.facts.add(std::move(L), where);
  if (world) {
    W.basis = basis;
    r.facts.add(std::move(W), where);
  }
  if (nested) {
    std::vector<Word> inner(seg.begin() + static_cast<std::ptrdiff_t>(*nested), seg.end());
    read_segment(inner, r, source, line, text, depth + 1);
  } else if (has_program && !nccl_test) {
    auto pf = program_facts(args, false);
    if (pf.model)
      r.facts.add(diagnose::ModelSeen{.name = *pf.model, .parameters = known_model_parameters(*pf.model), .dtype = pf.dtype}, where);
    if (pf.batch_set) r.facts.add(pf.batch, where);
  }
  return true;
}

// Reads one command of a segment (words between operators): its VAR=value prefixes and its launcher. Whether it
// was a command.
bool read_segment(const std::vector<Word>& seg, Reading& r, const std::string& source, std::size_t line,
                  std::string_view text, int depth) {
  if (seg.empty() || depth > 3) return false;
  const auto cs = find_start(seg);
  if (!cs) return false;
  const std::size_t i = cs->launcher;
  const Kind kind = i < seg.size() ? kind_of_word(seg, i) : Kind::none;
  if (i < seg.size() && !cs->is_export && prose_words(seg, i + 1)) return false;  // a sentence that starts with a name
  // An unknown program is a command only when VAR=value prefixes say so ("NCCL_DEBUG=INFO ./train.sh");
  // "export A=1 B=2" holds settings and no command.
  const bool command = i < seg.size() && !cs->is_export &&
                       (kind != Kind::none || (!cs->env.empty() && !starts_with(seg[i].text, "-")));
  if (!command) {
    if (cs->is_export)
      for (const auto& [n, v] : cs->env) add_setting(r, n, v, "environment", source, line, text);
    return false;
  }
  Reading tmp;
  for (const auto& [n, v] : cs->env) add_setting(tmp, n, v, "command line", source, line, text);
  if (!read_launch(seg, i, kind, tmp, source, line, text, depth)) return false;
  r.facts.append(std::move(tmp.facts));
  for (auto& n : tmp.notes) r.notes.push_back(std::move(n));
  return true;
}


// The segments of a word list split at operators.
std::vector<std::vector<Word>> segments(const std::vector<Word>& words) {
  std::vector<std::vector<Word>> out(1);
  for (const auto& w : words) {
    if (w.op) {
      if (!out.back().empty()) out.emplace_back();
    } else {
      out.back().push_back(w);
    }
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

// Strips markdown quote markers ("> > ") from the start of a line.
std::string_view strip_quote_markers(std::string_view s) {
  s = trim_blanks(s);
  while (starts_with(s, ">") && (s.size() == 1 || s[1] == ' ' || s[1] == '>' || s[1] == '\t')) {
    s.remove_prefix(1);
    s = trim_blanks(s);
  }
  return s;
}

// The logical lines of a text: backslash-continued lines joined, each with the number of its first line.
struct Logical {
  std::string text;
  std::size_t line = 0;
  std::string first;  // the first physical line (for provenance)
};
std::vector<Logical> logical_lines(std::string_view text) {
  std::vector<Logical> out;
  const auto lines = split_lines(text);
  bool continuing = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    std::string_view body = continuing ? trim_blanks(l) : l;
    if (continuing) {
      // Quote markers repeat on continued lines of a pasted quote.
      body = strip_quote_markers(body);
    }
    std::string_view t = body;
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    const bool cont = !t.empty() && t.back() == '\\' && !(t.size() >= 2 && t[t.size() - 2] == '\\');
    if (cont) t.remove_suffix(1);
    if (continuing) {
      out.back().text += ' ';
      out.back().text += std::string(t);
    } else {
      out.push_back({std::string(t), i + 1, std::string(l)});
    }
    continuing = cont;
  }
  return out;
}

bool well_known_name(std::string_view n) {
  static constexpr std::string_view kPrefixes[] = {
      "NCCL_", "CUDA_", "TORCH_", "OMP_", "UCX_", "FI_", "MASTER_", "PYTORCH_", "NVIDIA_", "MKL_", "GLOO_", "SLURM_",
      "OMPI_", "PMI_", "PMIX_", "I_MPI_", "MLX5_", "HOROVOD_", "CUBLAS_", "CUDNN_", "TF_", "XLA_", "HF_", "ACCELERATE_",
      "DEEPSPEED_", "NVSHMEM_", "RDMAV_", "IBV_", "UCC_", "HCOLL_", "TORCHELASTIC_", "LOCAL_", "GROUP_", "ROLE_"};
  static constexpr std::string_view kNames[] = {"WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK", "NNODES",
                                                "NPROC_PER_NODE", "LD_LIBRARY_PATH", "LD_PRELOAD"};
  for (auto p : kPrefixes)
    if (starts_with(n, p)) return true;
  for (auto k : kNames)
    if (n == k) return true;
  return false;
}

bool has_launcher(const std::vector<Word>& seg, int depth = 0);

// One line of an environment dump: its settings, or nothing (blank, comment, prompt), or "other".
struct EnvLine {
  enum class What { blank, settings, other } what = What::blank;
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<std::pair<std::string, std::string>> commented;  // "#export NAME=value": not in force
};

// A value the shell computes when the script runs ("$(scontrol show hostnames …)", "`hostname`", "$master_addr",
// "${SLURM_NNODES}"): not known from the text.
bool computed_value(std::string_view v) {
  if (v.find("$(") != std::string_view::npos || v.find('`') != std::string_view::npos) return true;
  if (v.empty() || v.front() != '$') return false;
  std::string_view n = v.substr(1);
  if (!n.empty() && n.front() == '{' && n.back() == '}') n = n.substr(1, n.size() - 2);
  return !n.empty() && std::all_of(n.begin(), n.end(), [](char c) { return is_name_char(c); });
}

std::string unquote(std::string_view v) {
  v = trim_blanks(v);
  if (v.size() >= 2 && ((v.front() == '"' && v.back() == '"') || (v.front() == '\'' && v.back() == '\'')))
    v = v.substr(1, v.size() - 2);
  return std::string(v);
}

EnvLine env_line(std::string_view raw, std::optional<std::string>& pending_k8s_name) {
  EnvLine e;
  std::string_view l = strip_quote_markers(raw);
  if (l.empty()) return e;
  // Kubernetes / compose env lists: "- name: NCCL_DEBUG" then "value: INFO".
  {
    std::string_view k = l;
    if (starts_with(k, "- ")) k = trim_blanks(k.substr(2));
    if (starts_with(k, "name:")) {
      std::string n = unquote(k.substr(5));
      if (!n.empty() && assignment_eq(n + "=") != std::string::npos) {
        pending_k8s_name = n;
        return e;  // blank-like: a part of a setting
      }
    }
    if (starts_with(k, "value:") && pending_k8s_name) {
      e.what = EnvLine::What::settings;
      e.settings.emplace_back(*pending_k8s_name, unquote(k.substr(6)));
      pending_k8s_name.reset();
      return e;
    }
  }
  pending_k8s_name.reset();
  if (starts_with(l, "#") || starts_with(l, "//")) {
    // A comment; "#export NCCL_X=1" is a setting switched off, worth a note.
    std::string_view c = l.substr(starts_with(l, "#") ? 1 : 2);
    while (!c.empty() && (c.front() == '#' || c.front() == ' ' || c.front() == '\t')) c.remove_prefix(1);
    if (starts_with(c, "export ")) c = trim_blanks(c.substr(7));
    if (const auto eq = assignment_eq(c); eq != std::string_view::npos && c.find(' ') == std::string_view::npos)
      e.commented.emplace_back(std::string(c.substr(0, eq)), unquote(c.substr(eq + 1)));
    return e;
  }
  if (starts_with(l, "```") || l == "..." || l == "…") return e;  // markdown fence, elision
  const auto words = shell_words(l).words;
  std::size_t i = 0;
  while (i < words.size() && !words[i].quoted && is_prompt_word(words[i].text)) ++i;
  if (i > 0 && i < words.size() && (ends_with(words[i].text, "]$") || ends_with(words[i].text, "]#"))) ++i;
  const bool prompted = i > 0;
  if (i < words.size() && (words[i].text == "export" || words[i].text == "declare" || words[i].text == "typeset")) {
    ++i;
    while (i < words.size() && starts_with(words[i].text, "-")) ++i;
  }
  if (i < words.size() && (words[i].text == "setenv") && i + 1 < words.size()) {
    // csh: setenv NAME value
    e.what = EnvLine::What::settings;
    e.settings.emplace_back(words[i + 1].text, i + 2 < words.size() ? words[i + 2].text : std::string());
    return e;
  }
  if (i < words.size() && lower(words[i].text) == "set" && i + 1 < words.size()) ++i;  // Windows: set NAME=value
  if (i >= words.size()) {
    if (prompted) return e;
    e.what = EnvLine::What::other;
    return e;
  }
  bool all = true;
  for (std::size_t k = i; k < words.size(); ++k)
    if (words[k].op || assignment_eq(words[k].text) == std::string::npos) all = false;
  if (all) {
    e.what = EnvLine::What::settings;
    for (std::size_t k = i; k < words.size(); ++k) {
      const auto eq = assignment_eq(words[k].text);
      e.settings.emplace_back(words[k].text.substr(0, eq), words[k].text.substr(eq + 1));
    }
    return e;
  }
  // `env` output: NAME=the rest of the line (values may hold blanks) — unless the line is a command with settings
  // before it ("NCCL_DEBUG=INFO torchrun …").
  for (const auto& seg : segments(words))
    if (has_launcher(seg)) {
      e.what = EnvLine::What::other;
      return e;
    }
  if (!prompted) {
    const auto eq = assignment_eq(l);
    if (eq != std::string::npos) {
      e.what = EnvLine::What::settings;
      e.settings.emplace_back(std::string(l.substr(0, eq)), std::string(l.substr(eq + 1)));
      return e;
    }
    e.what = EnvLine::What::other;
    return e;
  }
  return e;  // a prompt with a command ("$ env | grep NCCL"): not a setting, not foreign either
}

bool has_launcher(const std::vector<Word>& seg, int depth) {
  auto cs = find_start(seg);
  if (!cs || cs->launcher >= seg.size() || depth > 3) return false;
  const Kind k = kind_of_word(seg, cs->launcher);
  if (k == Kind::none) return false;
  if (prose_words(seg, cs->launcher + 1)) return false;
  if (k == Kind::shell) {
    for (const auto& inner : segments(shell_words(seg[cs->launcher + 2].text).words))
      if (has_launcher(inner, depth + 1)) return true;
    return false;
  }
  if (k == Kind::python) {
    auto t = python_target(seg, cs->launcher + 1);
    if (t.module) return true;
    return t.at < seg.size() && ends_with(seg[t.at].text, ".py");
  }
  return true;
}

}  // namespace

bool looks_like_environment(std::string_view text) {
  std::size_t known = 0, setting_lines = 0, other = 0;
  std::optional<std::string> k8s;
  std::size_t lines = 0;
  for (auto l : split_lines(text)) {
    if (++lines > 20000) break;
    const EnvLine e = env_line(l, k8s);
    if (e.what == EnvLine::What::other) {
      ++other;
      continue;
    }
    if (e.what != EnvLine::What::settings) continue;
    ++setting_lines;
    bool k = false;
    for (const auto& [n, v] : e.settings) k = k || well_known_name(n);
    known += k ? 1 : 0;
  }
  if (known == 0) return false;
  // A launch script's exports are read with its commands (read_commands), not twice.
  if (other > 0 && looks_like_command(text)) return false;
  return known >= 3 || setting_lines * 2 >= setting_lines + other;
}

bool looks_like_command(std::string_view text) {
  for (const auto& l : logical_lines(text)) {
    const auto words = shell_words(strip_quote_markers(l.text));
    for (const auto& seg : segments(words.words))
      if (has_launcher(seg)) return true;
  }
  return false;
}

Reading read_environment(std::string_view text, const std::string& source) {
  Reading r;
  try {
    std::optional<std::string> k8s;
    std::set<std::pair<std::string, std::string>> seen;
    const auto lines = split_lines(text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const EnvLine e = env_line(lines[i], k8s);
      if (e.what == EnvLine::What::other) {
        const auto t = trim_blanks(lines[i]);
        if (!t.empty()) r.notes.push_back(fmt::format("line {}: not a NAME=value setting, skipped", i + 1));
        continue;
      }
      for (const auto& [n, v] : e.commented)
        r.notes.push_back(fmt::format("line {}: {}={} is commented out: not in force, not read", i + 1, n, v));
      for (const auto& [n, v] : e.settings) {
        if (computed_value(v)) {
          r.notes.push_back(fmt::format("line {}: {}={} is computed by the shell when the script runs; its value is "
                                        "not in the text, not read", i + 1, n, excerpt(v, 60)));
          continue;
        }
        if (!seen.insert({n, v}).second) continue;  // the same setting twice (a dump pasted twice)
        add_setting(r, n, v, "environment", source, i + 1, lines[i]);
      }
    }
    if (r.notes.size() > 50) {
      const auto n = r.notes.size();
      r.notes.resize(50);
      r.notes.push_back(fmt::format("… and {} more lines that are not settings", n - 50));
    }
  } catch (const std::exception& e) {
    r.notes.push_back(std::string("environment reader stopped: ") + e.what());
  }
  return r;
}

Reading read_command_line(std::string_view command, const std::string& source, std::size_t line) {
  Reading r;
  try {
    const std::string_view text = strip_quote_markers(command);
    const auto words = shell_words(text);
    if (words.unterminated_quote)
      r.notes.push_back(fmt::format("line {}: a quote is not closed (the command may be cut)", line));
    bool any = false;
    for (const auto& seg : segments(words.words)) any |= read_segment(seg, r, source, line, command, 0);
    if (!any && r.facts.empty()) r.notes.clear();
  } catch (const std::exception& e) {
    r.notes.push_back(fmt::format("line {}: command reader stopped: {}", line, e.what()));
  }
  return r;
}

Reading read_commands(std::string_view text, const std::string& source) {
  Reading r;
  try {
    for (const auto& l : logical_lines(text)) {
      if (trim_blanks(l.text).empty()) continue;
      auto one = read_command_line(l.text, source, l.line);
      // Provenance shows the first physical line of a continued command.
      for (auto f : one.facts.all()) {
        f.where = at(source, l.line, l.first);
        r.facts.add(std::move(f));
      }
      for (auto& n : one.notes) r.notes.push_back(std::move(n));
    }
  } catch (const std::exception& e) {
    r.notes.push_back(std::string("command reader stopped: ") + e.what());
  }
  return r;
}

}  // namespace scalescope::analyze
