// Segments of a command at its operators, logical lines (continuations joined), and the lines of an environment
// dump (export, env, Kubernetes and Docker forms).
#include "readers/job/launch_env_words.h"

namespace scalescope::analyze::launch_env_detail {

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

}  // namespace scalescope::analyze::launch_env_detail
