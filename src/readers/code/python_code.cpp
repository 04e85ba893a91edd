#include "readers/code/python_code.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <vector>

#include "core/parse_count.h"
#include "text/log_text.h"

namespace scalescope::analyze {
namespace {

using diagnose::CodeUse;

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

/// The code of one line with comments and the insides of string literals blanked (quotes kept, so `"x"` stays a
/// literal of length 3). `in_triple` carries a triple-quoted string across lines.
std::string code_part(std::string_view line, char& in_triple) {
  std::string out(line);
  std::size_t i = 0;
  while (i < out.size()) {
    if (in_triple) {
      const std::string close(3, in_triple);
      const auto end = out.find(close, i);
      const std::size_t stop = end == std::string::npos ? out.size() : end;
      for (std::size_t k = i; k < stop; ++k) out[k] = ' ';
      if (end == std::string::npos) return out;
      i = end + 3;
      in_triple = 0;
      continue;
    }
    const char c = out[i];
    if (c == '#') {
      out.resize(i);
      break;
    }
    if (c == '"' || c == '\'') {
      if (out.compare(i, 3, std::string(3, c)) == 0) {
        in_triple = c;
        i += 3;
        continue;
      }
      std::size_t k = i + 1;
      while (k < out.size() && out[k] != c) {
        if (out[k] == '\\') out[k++] = ' ';
        if (k < out.size()) out[k++] = ' ';
      }
      i = k + 1;
      continue;
    }
    ++i;
  }
  return out;
}

std::size_t indent_of(std::string_view l) {
  std::size_t n = 0;
  for (char c : l) {
    if (c == ' ') ++n;
    else if (c == '\t') n += 8 - n % 8;
    else break;
  }
  return n;
}

bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; });
}

/// A keyword argument's value inside `call` ("num_workers=4" → "4"), "" when absent.
std::string keyword(const std::string& call, const std::string& name) {
  const std::regex re("\\b" + name + R"(\s*=\s*([A-Za-z0-9_.]+))");
  std::smatch m;
  return std::regex_search(call, m, re) ? m[1].str() : std::string();
}

/// The text of a call that starts at `open` (the '(' of line `i` of `code`), up to its balanced ')' across lines
/// (at most 30 lines).
std::string call_text(const std::vector<std::string>& code, std::size_t i, std::size_t open) {
  std::string out;
  int depth = 0;
  for (std::size_t l = i; l < code.size() && l < i + 30; ++l) {
    const std::string& s = code[l];
    for (std::size_t k = (l == i ? open : 0); k < s.size(); ++k) {
      out += s[k];
      if (s[k] == '(') ++depth;
      if (s[k] == ')' && --depth == 0) return out;
    }
    out += ' ';
  }
  return out;
}

struct Pattern {
  const char* construct;
  std::regex re;
  bool loop_only;  ///< counts only inside a loop (per-step work)
};

const std::vector<Pattern>& host_sync_patterns() {
  static const std::vector<Pattern> p = {
      {".item()", std::regex(R"(\.item\(\s*\))"), true},
      {".cpu()", std::regex(R"(\.cpu\(\s*\))"), true},
      {".tolist()", std::regex(R"(\.tolist\(\s*\))"), true},
      {".numpy()", std::regex(R"(\.numpy\(\s*\))"), true},
      {"torch.cuda.synchronize()", std::regex(R"(\bcuda\.synchronize\(|\bsynchronize\(\s*\))"), true},
      {".nonzero()", std::regex(R"(\.nonzero\(|\btorch\.nonzero\()"), true},
      {"torch.where(cond)", std::regex(R"(\btorch\.where\(\s*[^,()]+(\([^()]*\))?\s*\))"), true},
      {"torch.unique()", std::regex(R"(\.unique\(|\btorch\.unique\()"), true},
      {"torch.masked_select()", std::regex(R"(\bmasked_select\()"), true},
      // x[mask] with a comparison inside the brackets: the result's size depends on the data, so the host waits.
      {"boolean-mask index", std::regex(R"([A-Za-z_)\]]\[[^\]\[]*[^=!<>](==|!=|<=|>=|<|>)[^=][^\]\[]*\])"), true},
  };
  return p;
}

struct State {
  diagnose::Reading r;
  std::string source;
  std::size_t first_line = 1;
  std::set<std::tuple<std::string, std::string, bool>> seen;

  diagnose::Provenance at(std::size_t i, std::string_view raw) const {
    return diagnose::at(source, first_line + i, raw);
  }
  void use(std::string construct, std::string detail, bool in_loop, std::optional<double> value, std::size_t i,
           std::string_view raw) {
    if (!seen.insert({construct, detail, in_loop}).second) return;
    r.facts.add(CodeUse{std::move(construct), std::move(detail), in_loop, value}, at(i, raw));
  }
};

std::optional<double> number(const std::string& s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  try {
    return std::stod(s);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

bool looks_like_python_code(std::string_view text) {
  try {
    const auto lines = split_lines(text.substr(0, 64 * 1024));
    std::size_t nonblank = 0, codeish = 0, sentences = 0;
    bool torch = false, structure = false;
    static const std::regex code_re(
        R"(^\s*(import |from \S+ import |def |class |for .*:\s*$|while .*:\s*$|if .*:\s*$|else:|elif |try:|except|with .*:\s*$|return\b|@|[A-Za-z_][A-Za-z0-9_.\[\]]*\s*(=|\+=|-=)[^=]|[A-Za-z_][A-Za-z0-9_.]*\(.*\)\s*$|\)|\]|\}))");
    for (auto l : lines) {
      if (blank(l)) continue;
      ++nonblank;
      const auto t = trim_blanks(l);
      if (t.front() == '#') {
        ++codeish;
        continue;
      }
      if (std::regex_search(std::string(t), code_re)) ++codeish;
      if (t.rfind("import ", 0) == 0 || t.rfind("from ", 0) == 0 || t.rfind("def ", 0) == 0 || t.rfind("class ", 0) == 0)
        structure = true;
      if (contains(t, "torch")) torch = true;
      // A sentence: ends with a full stop and has several spaces, no parentheses or '='.
      if (t.back() == '.' && std::count(t.begin(), t.end(), ' ') >= 4 && !contains(t, "(") && !contains(t, "="))
        ++sentences;
    }
    return nonblank >= 3 && torch && structure && codeish * 10 >= nonblank * 7 && sentences * 5 < nonblank;
  } catch (...) {
    return false;
  }
}

diagnose::Reading read_python_code(std::string_view text, const std::string& source, std::size_t first_line) {
  core::count_parse("python_code", text);
  State st;
  st.source = source;
  st.first_line = first_line;
  try {
    const auto raw = split_lines(text);
    std::vector<std::string> code;
    code.reserve(raw.size());
    char triple = 0;
    for (auto l : raw) code.push_back(code_part(l, triple));
    // Loop bodies from indentation: a stack of the indents of open for/while statements.
    std::vector<std::size_t> loops;
    static const std::regex loop_head(R"(^\s*(async\s+)?(for|while)\b.*:\s*$)");
    static const std::regex env_set(R"(os\.environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\]\s*=\s*["']?([^"'\s]*)["']?)");
    static const std::regex data_parallel(R"(\bDataParallel\()"), num_threads(R"(set_num_threads\(\s*([0-9]+)\s*\))"),
        all_reduce(R"(\b(dist|distributed)\.all_reduce\()"), barrier(R"(\b(dist|distributed)\.barrier\()"),
        to_device(R"(\.to\(\s*(device|[a-z_]*device\b|'cuda|"cuda|rank|local_rank))");
    static const std::regex step_def(R"(^\s*(async\s+)?def\s+_?(train(ing)?_step|step|train_batch|inner_training_loop|_inner_training_loop)\s*\()");
    static const std::regex env_default(R"(os\.environ\.setdefault\(\s*["']([A-Z][A-Z0-9_]*)["']\s*,\s*["']([^"']*)["'])");
    for (std::size_t i = 0; i < code.size(); ++i) {
      const std::string& c = code[i];
      if (blank(c)) continue;
      const std::size_t ind = indent_of(c);
      while (!loops.empty() && ind <= loops.back()) loops.pop_back();
      const bool in_loop = !loops.empty();
      const std::string_view line = raw[i];
      // Environment variables the script sets: read from the raw line (the value is a string literal).
      std::smatch m;
      const std::string rawl(line);
      if (std::regex_search(rawl, m, env_set) || std::regex_search(rawl, m, env_default))
        st.r.facts.add(diagnose::Setting{m[1].str(), m[2].str(), "environment"}, st.at(i, line));
      // Wrappers.
      if (auto p = c.find("DistributedDataParallel("); p != std::string::npos || c.find("DDP(") != std::string::npos) {
        const auto open = p != std::string::npos ? p + std::string_view("DistributedDataParallel").size() : c.find("DDP(") + 3;
        const std::string call = call_text(code, i, open);
        st.use("DistributedDataParallel", "", in_loop, std::nullopt, i, line);
        if (auto v = keyword(call, "find_unused_parameters"); !v.empty()) st.use("find_unused_parameters", v, false, std::nullopt, i, line);
        if (auto v = keyword(call, "static_graph"); !v.empty()) st.use("static_graph", v, false, std::nullopt, i, line);
        if (auto v = keyword(call, "bucket_cap_mb"); !v.empty()) st.use("bucket_cap_mb", v, false, number(v), i, line);
      } else if (std::regex_search(c, data_parallel)) {
        st.use("DataParallel", "", in_loop, std::nullopt, i, line);
      }
      if (contains(c, "torch.compile(") || contains(c, "@torch.compile")) st.use("torch.compile", "", in_loop, std::nullopt, i, line);
      if (contains(c, ".no_sync(")) st.use("no_sync", "", in_loop, std::nullopt, i, line);
      if (contains(c, "DataLoader(")) {
        const std::string call = call_text(code, i, c.find("DataLoader(") + std::string_view("DataLoader").size());
        const std::string w = keyword(call, "num_workers");
        // DataLoader's default is num_workers=0: batches are loaded in the training process itself.
        st.use("dataloader", w.empty() ? "num_workers=0 (the default)" : "num_workers=" + w, in_loop,
               w.empty() ? std::optional<double>(0) : number(w), i, line);
        if (auto v = keyword(call, "pin_memory"); v == "False") st.use("dataloader", "pin_memory=False", in_loop, std::nullopt, i, line);
        if (auto v = keyword(call, "persistent_workers"); !v.empty()) st.use("dataloader", "persistent_workers=" + v, in_loop, std::nullopt, i, line);
      }
      if (std::regex_search(c, m, num_threads))
        st.use("set_num_threads", m[1].str(), in_loop, number(m[1].str()), i, line);
      if (in_loop) {
        for (const auto& p : host_sync_patterns())
          if (std::regex_search(c, p.re)) st.use("host-sync", p.construct, true, std::nullopt, i, line);
        if (std::regex_search(c, all_reduce))
          st.use("manual-all-reduce", "dist.all_reduce", true, std::nullopt, i, line);
        if (std::regex_search(c, barrier))
          st.use("barrier", "dist.barrier()", true, std::nullopt, i, line);
        if (contains(c, "empty_cache(")) st.use("empty_cache", "torch.cuda.empty_cache()", true, std::nullopt, i, line);
        if (contains(c, "gc.collect(")) st.use("gc.collect", "gc.collect()", true, std::nullopt, i, line);
        // A host-to-device copy without non_blocking=True: the host waits for it (and pageable memory is staged).
        if ((contains(c, ".cuda(") || std::regex_search(c, to_device)) && !contains(c, "non_blocking"))
          st.use("blocking-copy", ".to(device) without non_blocking=True", true, std::nullopt, i, line);
      }
      if (std::regex_search(c, loop_head)) loops.push_back(ind);
      // A trainer's per-step method ("def training_step", "def train_step", "def _inner_training_loop" …) runs every
      // step although no loop is in sight: its body counts as the loop's.
      if (std::regex_search(c, step_def)) loops.push_back(ind);
    }
    // A host sync on the gradient-reduction path: a function that reduces gradients (all_reduce, reduce_scatter, a
    // "reduction" or "average" of gradients, the reduction stream) and calls synchronize() in its body. Such a function
    // runs from backward's hooks for every bucket: the CPU waits there for all GPU work before it issues more of
    // backward, so the reductions stop overlapping it (DeepSpeed ZeRO-2's average_tensor of 2022 is one).
    {
      static const std::regex def_head(R"(^\s*(async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\()");
      static const std::regex reduce_words(R"(all_reduce|allreduce|reduce_scatter|reduction|average_|_average|allgather|all_gather|reduce_stream)");
      static const std::regex sync_call(R"(\bsynchronize\(\s*\))");
      for (std::size_t i = 0; i < code.size(); ++i) {
        std::smatch dm;
        if (!std::regex_search(code[i], dm, def_head)) continue;
        const std::size_t ind = indent_of(code[i]);
        bool reduces = std::regex_search(dm[2].str(), reduce_words);
        std::optional<std::size_t> sync_at;
        for (std::size_t k = i + 1; k < code.size(); ++k) {
          if (blank(code[k])) continue;
          if (indent_of(code[k]) <= ind) break;
          reduces = reduces || std::regex_search(code[k], reduce_words);
          if (!sync_at && std::regex_search(code[k], sync_call)) sync_at = k;
        }
        if (reduces && sync_at)
          st.use("sync-in-reduction", "synchronize() in " + dm[2].str() + "()", false, std::nullopt, *sync_at, raw[*sync_at]);
      }
    }
    if (st.r.facts.empty())
      st.r.notes.push_back("read as training code: no construct the diagnosis weighs (wrappers, DDP arguments, loaders, "
                           "syncs in the loop, collectives by hand, settings)");
  } catch (const std::exception& e) {
    st.r.notes.push_back(std::string("the code reader stopped: ") + e.what());
  } catch (...) {
    st.r.notes.push_back("the code reader stopped");
  }
  return std::move(st.r);
}

}  // namespace scalescope::analyze
