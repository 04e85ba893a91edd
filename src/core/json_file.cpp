#include "core/json_file.h"

#include <stdlib.h>

#include <cerrno>
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
  std::error_code ec;
  auto base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string tmpl = (base / "scalescope-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    throw Error("cannot create a temporary directory in '" + base.string() + "': " + std::strerror(errno),
                "set TMPDIR to a writable directory");
  path_ = tmpl;
}

TemporaryDirectory::~TemporaryDirectory() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace scalescope::core
