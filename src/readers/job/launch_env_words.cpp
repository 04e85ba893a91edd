// Shell words, known models, settings, and the lexical side of launchers: prompts, wrappers, options, a program's
// flags, python's target, MPI's flags.
#include "readers/job/launch_env_words.h"

namespace scalescope::analyze::launch_env_detail {

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

}  // namespace scalescope::analyze::launch_env_detail
