#include "readers/input_list.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <queue>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::analyze {

namespace fs = std::filesystem;

namespace {

/// The regular files under `dir` (up to five levels below it), at most `limit` of them: the first in byte order of their paths. The
/// rest are counted, not kept: a max-heap of `limit` paths, so a directory of millions of files costs memory for
/// `limit` names only.
ListedDirectory list_directory(const std::string& dir, std::size_t limit, std::vector<std::string>& kept) {
  ListedDirectory d;
  d.path = dir;
  std::priority_queue<std::string> heap;  // the largest kept path on top
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 3) it.disable_recursion_pending();
    std::error_code fe;
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.' && it->is_directory(fe)) it.disable_recursion_pending();  // hidden: passed over
    if (!it->is_regular_file(fe) || name.empty() || name[0] == '.' || name.ends_with(".tmp")) continue;
    ++d.files;
    std::string path = it->path().string();
    if (heap.size() < limit) {
      heap.push(std::move(path));
      continue;
    }
    ++d.omitted;
    std::string dropped = std::move(path);
    if (limit > 0 && dropped < heap.top()) {  // it belongs among the first: the largest kept one goes
      std::string top = heap.top();
      heap.pop();
      heap.push(std::move(dropped));
      dropped = std::move(top);
    }
    if (d.first_omitted.empty() || dropped < d.first_omitted) d.first_omitted = std::move(dropped);
  }
  if (ec)
    throw core::Error(fmt::format("cannot list the directory '{}': {}", dir, ec.message()), "check that it exists and is readable");
  if (d.files == 0)
    throw core::Error(fmt::format("the directory '{}' holds no files", dir),
                      "pass the job directory scalescope profile --keep wrote, or the files themselves");
  std::vector<std::string> found;
  found.reserve(heap.size());
  while (!heap.empty()) {
    found.push_back(heap.top());
    heap.pop();
  }
  std::reverse(found.begin(), found.end());
  for (auto& p : found) kept.push_back(std::move(p));
  return d;
}

}  // namespace

InputList list_inputs(const std::vector<std::string>& paths, const InputLimits& limits) {
  InputList in;
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    in.directories.push_back(list_directory(path, limits.files_per_directory, found));
    for (auto& p : found) {
      in.from_directory.insert(p);
      files.push_back(std::move(p));
    }
  }
  // One file given twice (or by two spellings) would count as two processes or ranks, its lines twice. By device
  // and inode (one stat per file, not one per pair): a file given twice, or under two names.
  std::map<std::pair<dev_t, ino_t>, std::string> seen;
  for (auto& path : files) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {  // a missing file is that file's error, when it is read
      in.files.push_back(std::move(path));
      continue;
    }
    auto [it, fresh] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), path);
    if (fresh) {
      in.files.push_back(std::move(path));
      continue;
    }
    if (path == it->second && !in.from_directory.count(path))
      throw core::UsageError(fmt::format("'{}' and '{}' are the same file: it would count twice (two processes, two ranks)", path, path),
                             "give each file once");
    if (path == it->second) continue;  // a directory's file given again by name, or two directories that overlap
    if (in.from_directory.count(path)) {  // another name for a file already read (a link inside the directory)
      in.notes.push_back(fmt::format("'{}' is the same file as '{}': read once", path, it->second));
      continue;
    }
    throw core::UsageError(fmt::format("'{}' and '{}' are the same file: it would count twice (two processes, two ranks)",
                                       it->second, path),
                           "give each file once");
  }
  return in;
}

}  // namespace scalescope::analyze
