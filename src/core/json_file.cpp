#include "core/json_file.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace scalescope::core {

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + " '" + path + "' is not valid JSON: " + e.what());
  }
}

TemporaryDirectory::TemporaryDirectory() {
  const std::string remedy = "point TMPDIR at an existing, writable directory (or unset it)";
  std::error_code ec;
  const auto base = std::filesystem::temp_directory_path(ec);  // TMPDIR, else /tmp
  if (ec)
    throw Error(std::string("the temporary directory (TMPDIR='") + (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "") +
                    "') is not usable: " + ec.message(),
                remedy);
  std::string tmpl = (base / "scalescope-job-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    throw Error("cannot create a temporary directory in '" + base.string() + "': " + std::strerror(errno), remedy);
  path_ = tmpl;
}

TemporaryDirectory::~TemporaryDirectory() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace scalescope::core
