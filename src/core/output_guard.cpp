#include "core/output_guard.h"

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"

namespace scalescope::core {

namespace fs = std::filesystem;

namespace {

/// The absolute path with links resolved as far as the path exists (weakly_canonical needs an absolute path:
/// it leaves a relative one whose first component does not exist relative).
fs::path resolved(const std::string& p) {
  std::error_code ec;
  auto r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::path(p).lexically_normal() : r;
}

}  // namespace

bool path_is_inside(const std::string& path, const std::string& dir) {
  if (path.empty() || dir.empty()) return false;
  const fs::path p = resolved(path), d = resolved(dir);
  auto pi = p.begin(), di = d.begin();
  for (; di != d.end(); ++di, ++pi) {
    if (di->empty() && std::next(di) == d.end()) break;  // a trailing separator ("dir/") ends the directory
    if (pi == p.end() || *pi != *di) return false;
  }
  return pi != p.end() && !pi->empty();
}

void check_run_outputs(const std::vector<RunOutput>& outputs, const std::vector<RunInput>& inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& out = outputs[i];
    if (out.path.empty()) continue;
    for (const auto& in : inputs) {
      if (in.path.empty()) continue;
      std::error_code ec;
      const bool is_dir = in.directory || fs::is_directory(in.path, ec);
      if (fs::equivalent(out.path, in.path, ec))
        throw UsageError(out.flag + " '" + out.path + "' is " + in.what + " '" + in.path + "': writing it would replace " +
                             (is_dir ? "the directory that was read" : "what was read"),
                         "write " + out.flag + " to another file");
      if (is_dir && path_is_inside(out.path, in.path))
        throw UsageError(out.flag + " '" + out.path + "' lies inside " + in.what + " '" + in.path +
                             "': it could replace a file read from it, and a later run over the directory would read it "
                             "as one of its inputs",
                         "write " + out.flag + " outside '" + in.path + "'");
    }
    for (std::size_t j = 0; j < i; ++j)
      check_outputs_differ(outputs[j].path, outputs[j].flag, out.path, out.flag);
  }
  for (const auto& out : outputs) {
    if (out.path.empty()) continue;
    try {
      check_output_path_writable(out.path);
    } catch (const UsageError& e) {  // exit 2 (stdout redirected to it), led by the flag
      throw UsageError(out.flag + ": " + e.what(), e.remedy());
    } catch (const Error& e) {
      throw Error(out.flag + ": " + e.what(), e.remedy());
    }
  }
}

}  // namespace scalescope::core
