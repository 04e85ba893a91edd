// scalescope: why is training on N GPUs not N times faster?

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "core/progress.h"
#include "core/error.h"
#include "core/suggest.h"
#include "train/flash_attention_shape.h"  // cudnn_attention_built

namespace {

/// "did you mean …?" after a command line CLI11 refused: for a first word that is no subcommand, the closest
/// subcommand; for each "--flag" the command does not have, its closest flag. "" when nothing is close.
std::string did_you_mean(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const auto* s : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(s->get_name());
  const auto parsed = app.get_subcommands();
  if (parsed.empty()) {
    if (argc < 2 || argv[1][0] == '-') return "";
    const auto c = scalescope::core::closest_name(argv[1], commands);
    return c.empty() ? "" : fmt::format("'{}' is no command: did you mean 'scalescope {}'?", argv[1], c);
  }
  std::vector<std::string> flags;
  for (const auto* o : parsed.front()->get_options())
    for (const auto& n : o->get_lnames()) flags.push_back("--" + n);
  std::string out;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.rfind("--", 0) != 0) continue;
    const std::string name = a.substr(0, a.find('='));
    if (std::find(flags.begin(), flags.end(), name) != flags.end()) continue;
    if (const auto c = scalescope::core::closest_name(name, flags); !c.empty())
      out += fmt::format("{}'{}': did you mean '{}'?", out.empty() ? "" : "; ", name, c);
  }
  return out;
}


/// CLI11's "Could not convert: --batch = 9999999999" says neither why nor what would do. This names the flag's type
/// from its help ("INT", "UINT", "FLOAT") and what that type takes; other messages pass through unchanged.
std::string conversion_message(const CLI::App& app, const CLI::ConversionError& e) {
  const std::string what = e.what();
  const std::string prefix = "Could not convert: ";
  const auto eq = what.find(" = ");
  if (what.rfind(prefix, 0) != 0 || eq == std::string::npos) return what;
  const std::string name = what.substr(prefix.size(), eq - prefix.size());
  const std::string value = what.substr(eq + 3);
  std::string type;
  for (const CLI::App* sub : app.get_subcommands())
    if (const CLI::Option* opt = sub->get_option_no_throw(name)) type = opt->get_type_name();
  if (type.empty())
    if (const CLI::Option* opt = app.get_option_no_throw(name)) type = opt->get_type_name();
  const std::string base = type.substr(0, type.find(':'));  // "INT:POSITIVE": the type, then its checks
  std::string wants;
  if (base == "INT") wants = "a whole number (no decimal point or exponent) that fits the flag's range";
  else if (base == "UINT") wants = "a whole number, not negative, that fits the flag's range";
  else if (base == "FLOAT") wants = "a number";
  else if (!type.empty()) wants = "a value of type " + type;
  else wants = "a value of the type its help names";
  if (!type.empty() && type != "INT" && type != "UINT" && type != "FLOAT" && base != type)
    wants += " (" + type + " in its help)";
  return name + ": '" + value + "' is not a value this flag takes: it wants " + wants;
}

}  // namespace

namespace {

int run_command_line(int argc, char** argv) {
  CLI::App app{"scalescope: measures and explains the scaling of data-parallel training"};
  // Says what was built without loading the GPU module (--version stays fast and runs without CUDA).
  const char* backends = !SCALESCOPE_BUILT_WITH_CUDA ? " (CPU/MPI backend only; built without CUDA)"
                         : scalescope::train::gpt_kernels::cudnn_attention_built()
                             ? " (CPU/MPI backend, and CUDA/NCCL in the GPU module libscalescope-gpu.so; cuDNN's fused attention)"
                             : " (CPU/MPI backend, and CUDA/NCCL in the GPU module libscalescope-gpu.so; the project's fused attention, built without cuDNN)";
  app.set_version_flag("--version", std::string("scalescope ") + SCALESCOPE_VERSION + backends);
  app.require_subcommand(1);
  std::vector<scalescope::cli::Action> actions = {scalescope::cli::add_train_command(app),
                                                  scalescope::cli::add_doctor_command(app),
                                                  scalescope::cli::add_comm_command(app),
                                                  scalescope::cli::add_topo_command(app),
                                                  scalescope::cli::add_analyze_command(app),
                                                  scalescope::cli::add_profile_command(app),
                                                  scalescope::cli::add_predict_command(app),
                                                  scalescope::cli::add_knowledge_command(app)};
  try {
    // `profile … -- COMMAND…`: the job's command is not scalescope's to parse.
    int parsed_argc = argc;
    bool after_profile = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "profile") after_profile = true;
      if (a == "--" && after_profile) {
        scalescope::cli::set_profile_command_tail(std::vector<std::string>(argv + i + 1, argv + argc));
        parsed_argc = i;
        break;
      }
    }
    // `profile torchrun --nproc_per_node 2 …` without `--`: CLI11 would name the job's first flag as unexpected.
    if (after_profile && parsed_argc == argc)
      for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "profile") {
          for (int k = i + 1; k < argc; ++k) {
            const std::string a = argv[k];
            if (a.empty() || a[0] == '-') {  // a profile option and, unless it is a flag of its own, its value
              if (a == "--keep" || a == "--out" || a == "-o" || a == "--warmup" || a == "--steps" || a == "--timeout" ||
                  a == "--timeline" || a == "--html")
                ++k;
              continue;
            }
            scalescope::cli::say_error("'" + a + "': the job's command must follow --",
                                       "scalescope profile [OPTIONS] -- " + a + " …");
            return 2;
          }
          break;
        }
    app.parse(parsed_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ConversionError& e) {
    std::fprintf(stderr, "scalescope: error: %s\n  run 'scalescope --help' or 'scalescope COMMAND --help'\n",
                 conversion_message(app, e).c_str());
    return 2;
  } catch (const CLI::ParseError& e) {
    const std::string hint = did_you_mean(app, argc, argv);
    std::fprintf(stderr, "scalescope: error: %s\n%s  run 'scalescope --help' or 'scalescope COMMAND --help'\n", e.what(),
                 hint.empty() ? "" : ("  " + hint + "\n").c_str());
    return 2;
  }
  try {
    for (const auto& action : actions) {
      int status = action();
      if (status >= 0) return status;
    }
    return 2;
  } catch (const scalescope::core::UsageError& e) {
    scalescope::cli::say_error(e.what(), e.remedy());
    return 2;
  } catch (const scalescope::core::Error& e) {
    scalescope::cli::say_error(e.what(), e.remedy());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "scalescope: error: out of memory\n  what to do: use a smaller --batch or model, or fewer ranks\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalescope: internal error: %s\n", e.what());
    return 1;
  }
}

}  // namespace

namespace scalescope::cli {
namespace {
std::vector<std::string>& command_line_storage() {
  static std::vector<std::string> argv;
  return argv;
}
}  // namespace
void set_command_line(std::vector<std::string> argv) { command_line_storage() = std::move(argv); }
const std::vector<std::string>& command_line() { return command_line_storage(); }
}  // namespace scalescope::cli

int main(int argc, char** argv) {
  // Started with stdin, stdout or stderr closed (`>&-`), the next file opened would take that number, and the report
  // would be printed into a result file. /dev/null holds the place; a closed stdout is then reported at the end.
  bool stdout_closed = false;
  for (int fd = 0; fd <= 2; ++fd)
    if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      const int null_fd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (null_fd >= 0 && null_fd != fd) {
        dup2(null_fd, fd);
        close(null_fd);
      }
      stdout_closed = stdout_closed || fd == 1;
    }
  // Under a file-size limit (`ulimit -f`, batch schedulers), a write past it would kill the process by SIGXFSZ
  // mid-way: a result, its fallback on stderr, or the error line itself when stderr is such a file. Ignored, the
  // write fails with EFBIG, which is reported and recovered from like a full disk (and so in the ranks started).
  std::signal(SIGXFSZ, SIG_IGN);
  // A relative TMPDIR names another directory in every process that changes directory (Open MPI's daemons look
  // for "/reltmp/…"): made absolute once, for this process and the ranks it starts.
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir != nullptr && *tmpdir != '\0' && *tmpdir != '/') {
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(tmpdir, ec);
    if (!ec) setenv("TMPDIR", absolute.c_str(), 1);
  }
  // mpirun needs pipes and sockets per rank: a low soft limit on open files (ulimit -Sn 32) made it hang, which read
  // as a hang in a collective after the whole --timeout. A soft limit below 1024 is raised towards the hard one, as
  // any process may, but only to 4096: mpirun and the ranks inherit it, and some programs close every descriptor
  // up to the limit.
  if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 1024 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, 4096);
    setrlimit(RLIMIT_NOFILE, &files);
  }
  scalescope::cli::set_command_line(std::vector<std::string>(argv, argv + argc));
  // Decided once here, where stderr may be the user's terminal; ranks started through mpirun write into pipes.
  scalescope::core::export_progress_style();
  const int status = run_command_line(argc, argv);
  // A report that could not reach stdout (/dev/full, a closed descriptor) is a failed run, not a silent success.
  // (A pipe closed early ends the process by SIGPIPE first, as for any Unix tool.)
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int flush_errno = errno;
  if (flush_failed || std::ferror(stdout) || stdout_closed) {
    // glibc reports a write that failed earlier (an fflush before "wrote …") only through ferror, with no errno.
    const std::string why = stdout_closed                    ? "it was closed when scalescope started"
                            : flush_failed && flush_errno != 0 ? std::strerror(flush_errno)
                                                               : "an earlier write to it failed";
    scalescope::cli::say_error("the report could not be written to standard output: " + why,
                               std::string("check where stdout goes (a full disk, a closed descriptor)") +
                                   (status == 0 ? "" : "; the run had failed before that too"));
    return status == 0 ? 1 : status;
  }
  return status;
}
