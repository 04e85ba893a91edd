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

/// Where an output will be written: through a link, also a dangling one, to where it points (as the writers do).
std::string written_at(const std::string& path) {
  try {
    return resolve_output_link(path);
  } catch (const Error&) {  // a chain of links too long: the writer will say so
    return path;
  }
}

/// The regular files inside `dir` to a few levels, through links (a link in a data directory to a file elsewhere),
/// at most `limit` of them: what a run reading the directory may read.
std::vector<fs::path> files_inside(const std::string& dir, std::size_t limit = 10'000) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator() && out.size() < limit; it.increment(ec)) {
    if (it.depth() > 3) it.disable_recursion_pending();
    std::error_code fe;
    if (it->is_regular_file(fe)) out.push_back(it->path());
  }
  return out;
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
    const std::string at = written_at(out.path);
    const std::string where = at == out.path ? "'" + out.path + "'" : "'" + out.path + "' (a link to '" + at + "')";
    for (const auto& in : inputs) {
      if (in.path.empty()) continue;
      std::error_code ec;
      const bool is_dir = in.directory || fs::is_directory(in.path, ec);
      if (fs::equivalent(at, in.path, ec) || (out.directory && resolved(at) == resolved(in.path)))
        throw UsageError(out.flag + " " + where + " is " + in.what + " '" + in.path + "': writing it would replace " +
                             (is_dir ? "the directory that was read" : "what was read"),
                         "write " + out.flag + " to another file");
      if (is_dir && path_is_inside(at, in.path))
        throw UsageError(out.flag + " " + where + " lies inside " + in.what + " '" + in.path +
                             "': it could replace a file read from it, and a later run over the directory would read it "
                             "as one of its inputs",
                         "write " + out.flag + " outside '" + in.path + "'");
      if (out.directory && path_is_inside(in.path, at))
        throw UsageError(in.what + " '" + in.path + "' lies inside " + out.flag + " " + where +
                             ", which the run writes files into",
                         "give " + out.flag + " a directory of its own");
      if (is_dir && !in.directory)  // a file of the directory may be a link to the output, elsewhere
        for (const auto& f : files_inside(in.path))
          if (fs::equivalent(at, f, ec))
            throw UsageError(out.flag + " " + where + " is '" + f.string() + "', a file of " + in.what + " '" + in.path +
                                 "': writing it would replace what was read",
                             "write " + out.flag + " to another file");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (outputs[j].path.empty()) continue;
      const std::string other = written_at(outputs[j].path);
      check_outputs_differ(other, outputs[j].flag, at, out.flag);
      if ((outputs[j].directory && path_is_inside(at, other)) || (out.directory && path_is_inside(other, at)))
        throw UsageError(outputs[j].flag + " '" + outputs[j].path + "' and " + out.flag + " '" + out.path +
                             "': one lies inside the other, which the run writes files into",
                         "give them places apart");
    }
  }
  for (const auto& out : outputs) {
    if (out.path.empty() || out.directory) continue;
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
