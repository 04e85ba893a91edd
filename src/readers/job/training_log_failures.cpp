// The training-log reader's failures: NCCL errors and their result codes, a process's last error, processes that
// failed or were killed; each becomes a fact after the last line.
#include "readers/job/training_log_reader.h"

namespace scalescope::analyze::training_log_detail {

// ── errors ──
void Reader::errors(std::size_t i, const std::string& lw, std::string_view text, const std::string& tlow) {
  if (contains(lw, "nccl")) nccl_errors(i, lw);
  if (contains(lw, "last error:")) last_error(i);
  // NCCL's shared-memory failure as its message reaches a log without the "NCCL WARN" prefix (PyTorch quotes it in a
  // DistBackendError; a paste keeps only it): "Error while creating shared memory segment /dev/shm/nccl-… (size …)".
  else if (contains(lw, "shared memory segment") && (contains(lw, "error") || contains(lw, "failed")) &&
           !contains(lw, "nccl warn") && shm_errors_ < 16 && last_error_message_line_ != i) {
    ++shm_errors_;
    diagnose::NcclWarning w;
    w.category = warning_category(lw);
    w.message = to_valid_utf8(trim_blanks(strip_prefixes(lines_[i])));
    out_.facts.add(std::move(w), where(i));
  }
  process_failure(i, lw, text, tlow);
}

void Reader::add_failure(std::optional<int> code, std::string name, std::string reporter, std::size_t i) {
  for (const auto& f : failures_)
    if (f.code == code && f.name == name) return;
  failures_.push_back({code, std::move(name), std::move(reporter), i});
}

void Reader::nccl_errors(std::size_t i, const std::string& lw) {
  // NCCL version in PyTorch's message ("…, NCCL version 2.21.5") or on a line of its own; NCCL's own INFO lines are
  // the NCCL log reader's.
  if (auto p = lw.find("nccl version "); p != std::string::npos && !contains(lw, "nccl info") && !contains(lw, "nccl warn")) {
    std::size_t b = p + 13, e = b;
    while (e < lw.size() && (is_digit(lw[e]) || lw[e] == '.')) ++e;
    std::string v = lw.substr(b, e - b);
    while (!v.empty() && v.back() == '.') v.pop_back();
    if (!v.empty() && contains(v, ".") && versions_.insert(v).second)
      out_.facts.add(diagnose::NcclVersion{.version = v}, where(i));
  }
  const bool pytorch = contains(lw, "runtimeerror") || contains(lw, "distbackenderror") || contains(lw, "nccl error") ||
                       contains(lw, "processgroupnccl") || contains(lw, "c10d");
  // "NCCL Error 2: unhandled system error" (PyTorch before 1.13 and others)
  if (auto p = lw.find("nccl error "); p != std::string::npos && p + 11 < lw.size() && is_digit(lw[p + 11])) {
    std::size_t e = p + 11;
    auto code = number_at(lw, e, &e);
    if (code && *code >= 0 && *code < 100) {
      std::string name;
      if (e < lw.size() && lw[e] == ':') {
        std::string_view rest = trim_blanks(std::string_view(lw).substr(e + 1));
        name = std::string(rest.substr(0, rest.find(" (")));
      }
      if (name.empty()) name = name_of_code(static_cast<int>(*code));
      add_failure(static_cast<int>(*code), name, "pytorch", i);
      return;
    }
  }
  // "NCCL error in: …/NCCLUtils.hpp:268, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version
  // 2.21.5" (torch/csrc/distributed/c10d/NCCLUtils.hpp C10D_NCCL_CHECK)
  if (auto p = lw.find("nccl error in:"); p != std::string::npos) {
    std::string_view rest = std::string_view(lw).substr(p + 14);
    const auto comma = rest.find(", ");
    if (comma != std::string_view::npos) {
      std::string_view name = rest.substr(comma + 2);
      name = name.substr(0, std::min(name.find(" ("), name.find(", nccl version")));
      name = trim_blanks(name);
      if (!name.empty()) {
        add_failure(code_of_name(name), std::string(name), "pytorch", i);
        return;
      }
    }
  }
  // nccl-tests: "Test NCCL failure common.cu:777 'unhandled system error'"
  if (auto p = lw.find("test nccl failure"); p != std::string::npos) {
    const auto q = lw.find('\'', p);
    const auto q2 = q == std::string::npos ? q : lw.find('\'', q + 1);
    std::string name = q2 == std::string::npos ? std::string() : lw.substr(q + 1, q2 - q - 1);
    if (auto c = name.find(" ("); c != std::string::npos) name = name.substr(0, c);
    add_failure(code_of_name(name), name.empty() ? "unknown" : name, "nccl-tests", i);
    return;
  }
  // "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error."
  for (const auto& r : kNcclResults) {
    if (!starts_with(r.token, "nccl")) continue;
    if (contains(lw, r.token)) {
      add_failure(r.code, r.name, pytorch ? "pytorch" : "nccl", i);
      return;
    }
  }
  // The error string alone ("ncclCommInitRank failed: unhandled system error").
  for (const auto& r : kNcclResults) {
    if (starts_with(r.token, "nccl")) continue;
    if (contains(lw, r.token)) {
      add_failure(r.code, r.name, pytorch ? "pytorch" : "nccl", i);
      return;
    }
  }
}

// PyTorch quotes ncclGetLastError() after "Last error:" (NCCLUtils getNcclErrorDetailStr), usually on the next line.
void Reader::last_error(std::size_t i) {
  std::string_view msg = trim_blanks(strip_prefixes(lines_[i]));
  std::size_t line = i;
  {
    const std::string ls = lower(msg);
    const auto q = ls.find("last error:");
    msg = q == std::string::npos ? std::string_view() : trim_blanks(msg.substr(q + 11));
  }
  for (std::size_t k = i + 1; msg.empty() && k < lines_.size() && k <= i + 3; ++k) {
    msg = trim_blanks(strip_prefixes(lines_[k]));
    line = k;
  }
  // An empty "Last error:" (NCCL had none) is followed by the stack trace, not by a message.
  if (msg.empty() || starts_with(msg, "Exception raised from") || starts_with(msg, "C++ CapturedTraceback") ||
      starts_with(msg, "frame #") || starts_with(msg, "Traceback"))
    return;
  diagnose::NcclWarning w;
  const std::string ml = lower(msg);
  w.category = warning_category(ml);
  // A location before the message: "include/shm.h:28 NCCL WARN …" or "misc/socket.cc:46 …".
  const auto sp = msg.find(' ');
  if (sp != std::string_view::npos) {
    std::string_view first = msg.substr(0, sp);
    const auto colon = first.rfind(':');
    if (colon != std::string_view::npos && colon + 1 < first.size() && contains(first.substr(0, colon), ".") &&
        std::all_of(first.begin() + static_cast<std::ptrdiff_t>(colon) + 1, first.end(), is_digit)) {
      w.location = std::string(first);
      msg = trim_blanks(msg.substr(sp + 1));
      if (starts_with(msg, "NCCL WARN ")) msg.remove_prefix(10);
    }
  }
  w.message = to_valid_utf8(msg);
  out_.facts.add(std::move(w), where(line));
  last_error_message_line_ = line;
}

void Reader::add_process_failure(std::string what, std::size_t i) {
  if (!process_failures_.insert(what).second) return;
  out_.facts.add(diagnose::ProcessFailure{.what = std::move(what)}, where(i));
}

void Reader::process_failure(std::size_t i, const std::string& lw, std::string_view text, const std::string& tlow) {
  // srun (slurm): "srun: error: host-a: task 0: Aborted (core dumped)"
  if (contains(lw, "srun: error:")) {
    const auto p = tlow.find("srun:");
    std::string rest = p == std::string::npos ? std::string("srun: error") : excerpt(text.substr(p), 160);
    add_process_failure(rest, i);
    return;
  }
  struct Phrase {
    const char* phrase;
    const char* what;
  };
  static constexpr Phrase kPhrases[] = {
      {"aborted (core dumped)", "Aborted (core dumped)"},
      {"segmentation fault", "Segmentation fault"},
      {"bus error", "Bus error"},
      {"childfailederror", "ChildFailedError"},  // torch/distributed/elastic/multiprocessing/errors/__init__.py
      {"cuda out of memory", "CUDA out of memory"},
      {"outofmemoryerror", "CUDA out of memory"},
      {"exited unexpectedly", "DataLoader worker exited unexpectedly"},  // torch/utils/data/dataloader.py
      {"is killed by signal", "DataLoader worker killed by a signal"},
  };
  for (const auto& ph : kPhrases) {
    if (contains(lw, ph.phrase)) {
      add_process_failure(ph.what, i);
      return;
    }
  }
  // torchrun's failure summary: "exitcode  : -6 (pid: 1234)", "… failed (exitcode: 1)"
  if (auto code = number_after_key(lw, "exitcode"); code && *code != 0) {
    add_process_failure(fmt::format("exit code {}", static_cast<int>(*code)), i);
    return;
  }
  if (auto code = number_after_key(lw, "exit code"); code && *code != 0) {
    add_process_failure(fmt::format("exit code {}", static_cast<int>(*code)), i);
    return;
  }
  // "Signal 6 (SIGABRT) received by PID 1234"; "process 1 terminated with signal SIGKILL"
  if (contains(lw, "received by pid") || contains(lw, "terminated with signal")) {
    const std::size_t q = lw.find("(sig");
    const std::size_t b = q != std::string::npos ? q + 1 : lw.rfind("sig");
    std::size_t e = b;
    while (b != std::string::npos && e < lw.size() && (is_alpha(lw[e]) || is_digit(lw[e]))) ++e;
    if (b != std::string::npos && e > b + 3) {
      add_process_failure("signal " + std::string(to_upper(lw.substr(b, e - b))), i);
      return;
    }
  }
  if (trim_blanks(tlow) == "killed") {
    add_process_failure("Killed", i);
    return;
  }
  // A Python exception at the start of a line: "RuntimeError: …", "torch.distributed.DistBackendError: …".
  std::size_t e = 0;
  while (e < text.size() && (is_word(text[e]) || text[e] == '.')) ++e;
  if (e > 5 && e < text.size() && text[e] == ':' && is_alpha(text[0])) {
    std::string_view name = text.substr(0, e);
    const auto dot = name.rfind('.');
    std::string_view base = dot == std::string_view::npos ? name : name.substr(dot + 1);
    const std::string lb = lower(base);
    if ((lb.size() > 5 && (lb.substr(lb.size() - 5) == "error" || (lb.size() > 9 && lb.substr(lb.size() - 9) == "exception"))) &&
        !starts_with(lb, "nccl"))
      add_process_failure(std::string(base), i);
  }
}

std::string Reader::to_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// ── after the last line ──
void Reader::finish_failures() {
  for (auto& f : failures_) {
    diagnose::NcclFailure nf;
    nf.code = f.code;
    nf.name = f.name;
    nf.reporter = f.reporter;
    // The phase: creating the communicator (init) when the error block names it; a collective when the training
    // loop had printed timing lines before.
    bool init = false;
    for (std::size_t k = f.line; k < lines_.size() && k < f.line + 12; ++k) {
      const std::string& l = low(k);
      if (contains(l, "from create at") || contains(l, "ncclcomminit") || contains(l, "nccl comm init") ||
          contains(l, "getncclcomm") || contains(l, "init_process_group") || contains(l, "ncclcomm::create") ||
          contains(l, "_new_process_group_helper") || contains(l, "initnccl")) {
        init = true;
        break;
      }
    }
    if (init) nf.phase = "init";
    else if (first_timing_line_ && *first_timing_line_ < f.line) nf.phase = "collective";
    out_.facts.add(std::move(nf), where(f.line));
  }
}

}  // namespace scalescope::analyze::training_log_detail
