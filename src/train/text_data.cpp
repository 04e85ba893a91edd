#include "train/text_data.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::train {
namespace fs = std::filesystem;
namespace {

std::uint64_t mix64(std::uint64_t x) {  // splitmix64 finaliser (Steele, Lea & Flood 2014)
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Reads `path` (a regular file) into `out` when its first 4 KiB hold no NUL byte, at most `limit` bytes.
/// The probe comes first, so a large binary file (a sparse image, a model checkpoint) is never read whole.
bool read_file(const fs::path& path, std::vector<std::uint8_t>& out, bool& is_text, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::vector<char> probe(4096);
  in.read(probe.data(), static_cast<std::streamsize>(probe.size()));
  if (in.bad()) return false;
  probe.resize(static_cast<std::size_t>(in.gcount()));
  is_text = std::find(probe.begin(), probe.end(), '\0') == probe.end();
  if (!is_text) return true;
  const std::size_t keep = std::min(probe.size(), limit);
  out.insert(out.end(), probe.begin(), probe.begin() + static_cast<std::ptrdiff_t>(keep));
  std::vector<char> chunk(1 << 20);
  for (std::size_t left = limit - keep; left > 0 && in;) {
    in.read(chunk.data(), static_cast<std::streamsize>(std::min(chunk.size(), left)));
    if (in.bad()) return false;
    const auto n = static_cast<std::size_t>(in.gcount());
    out.insert(out.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n));
    left -= n;
  }
  return true;
}

}  // namespace

void TextCorpus::finish_tokens() {
  max_token_ = tokens_.empty() ? 0 : *std::max_element(tokens_.begin(), tokens_.end());
}

TextCorpus TextCorpus::load_token_file(const std::string& path, std::size_t min_tokens, const std::string& remedy) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::Error(fmt::format("cannot read token file '{}': {}", path, std::strerror(errno)), remedy);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  TextCorpus corpus;
  std::uint64_t offset = 0, count = 0;
  std::int32_t header[256] = {};
  // The first bytes decide what the file is: llm.c's header (its magic, even when the file is cut short), another
  // llm.c format, or text that only has a .bin name; raw tokens otherwise.
  std::vector<char> head(static_cast<std::size_t>(std::min<std::uint64_t>(size, 64 * 1024)));
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  if (head.size() >= sizeof(header)) std::memcpy(header, head.data(), sizeof(header));
  std::int32_t first_word = 0;
  if (head.size() >= 4) std::memcpy(&first_word, head.data(), 4);
  if (first_word == kLlmcMagic && size < sizeof(header))
    throw core::Error(fmt::format("llm.c token file '{}' is cut short: {} bytes, less than its 1024-byte header",
                                  path, size),
                      "the file is cut off; write it again");
  // Raw GPT-2 tokens can start with these words too (7585 then 309 is 20240801), so a header is believed only with
  // its version and a token count that fits the size (uint16 or uint32 tokens after 1024 bytes).
  const auto count_fits = [&](int bytes_per_token) {
    return size >= sizeof(header) && header[2] >= 0 &&
           sizeof(header) + static_cast<std::uint64_t>(bytes_per_token) * static_cast<std::uint64_t>(header[2]) == size;
  };
  if (first_word == kLlmcLlama3Magic && header[1] == 7 && count_fits(4))
    throw core::Error(fmt::format("'{}' is an llm.c Llama 3 token file (magic {}: uint32 tokens of a 128k "
                                  "vocabulary); scalescope's presets read GPT-2's uint16 tokens",
                                  path, kLlmcLlama3Magic),
                      "tokenize the text with GPT-2's tokenizer (llm.c's version 1 format, magic 20240520), or pass "
                      "the text itself");
  if (first_word != kLlmcMagic && first_word >= 20230101 && first_word <= 20301231 && header[1] >= 1 &&
      header[1] <= 100 && (count_fits(2) || count_fits(4)))
    throw core::Error(fmt::format("'{}' starts with {}, which looks like an llm.c header's date magic but is not "
                                  "one scalescope reads ({}: GPT-2 tokens, version 1)",
                                  path, first_word, kLlmcMagic),
                      "write the tokens in llm.c's version 1 format, or as raw uint16 tokens (nanoGPT) without a header");
  const auto printable = static_cast<std::size_t>(std::count_if(head.begin(), head.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return (b >= 0x20 && b < 0x7f) || b == '\n' || b == '\t' || b == '\r';
  }));
  // GPT-2 token ids below 8224 have a high byte under 0x20, and the common ones are there: a token file is far
  // from 95 % printable bytes, text is at it.
  if (first_word != kLlmcMagic && head.size() >= 64 && printable >= head.size() * 95 / 100)
    throw core::Error(fmt::format("'{}' looks like text ({:.0f} % printable characters in its first {} bytes), but "
                                  "a .bin file is read as tokens (nanoGPT's raw uint16 or llm.c's format)",
                                  path, 100.0 * static_cast<double>(printable) / static_cast<double>(head.size()),
                                  head.size()),
                      "give the text file a name that does not end in .bin (e.g. .txt), or tokenize it");
  const bool has_header = size >= sizeof(header) && first_word == kLlmcMagic;
  std::string format;
  if (has_header) {
    if (header[1] != 1)
      throw core::Error(fmt::format("llm.c token file '{}' has version {}; scalescope reads version 1 (uint16 tokens)",
                                    path, header[1]),
                        "write the tokens in llm.c's version 1 format (its dev/data scripts' write_datafile), or "
                        "pass the text itself");
    if (!count_fits(2))
      throw core::Error(fmt::format("llm.c token file '{}' announces {} tokens but holds {} bytes after its header",
                                    path, header[2], size - sizeof(header)),
                        "the file is cut off or not an llm.c token file");
    offset = sizeof(header);
    count = static_cast<std::uint64_t>(header[2]);
    format = "llm.c token file";
  } else {
    if (size % 2 != 0)
      throw core::Error(fmt::format("token file '{}' has an odd size ({} bytes): not uint16 tokens", path, size),
                        "a .bin file is read as nanoGPT's raw uint16 tokens or llm.c's format; pass text files otherwise");
    count = size / 2;
    format = "nanoGPT uint16 token file";
  }
  count = std::min<std::uint64_t>(count, kMaxCorpusBytes / 2);
  corpus.tokens_.resize(count);
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in.read(reinterpret_cast<char*>(corpus.tokens_.data()), static_cast<std::streamsize>(2 * count)))
    throw core::Error(fmt::format("cannot read the tokens of '{}'", path), remedy);
  if (corpus.tokens_.size() < min_tokens)
    throw core::Error(fmt::format("token file '{}' holds {} tokens; at least {} are needed", path,
                                  corpus.tokens_.size(), min_tokens),
                      remedy);
  corpus.finish_tokens();
  corpus.file_count_ = 1;
  corpus.description_ = fmt::format("{}: {} ({:.2f} M tokens, largest id {})", format, path, count / 1e6,
                                    corpus.max_token_);
  return corpus;
}

TextCorpus TextCorpus::load(const std::string& path, std::size_t min_bytes) {
  const std::string remedy =
      fmt::format("pass --data FILE|DIR with at least {} bytes of text, install the default corpus "
                  "(apt-get install fortunes), or use --data synthetic",
                  min_bytes);
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)  // a symbolic-link loop, a component that is a file …
    throw core::Error(fmt::format("data path '{}' cannot be opened: {}", path, ec.message()), remedy);
  if (ec || !fs::exists(status))
    throw core::Error(fmt::format("data path '{}' does not exist", path), remedy);
  TextCorpus corpus;
  if (fs::is_regular_file(status) && path.size() > 4 && path.ends_with(".bin"))
    return load_token_file(path, min_bytes, remedy);
  std::vector<std::uint8_t> bytes;
  std::vector<fs::path> files;
  if (fs::is_directory(status)) {
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      std::error_code e2;
      if (entry.is_regular_file(e2)) files.push_back(entry.path());
    }
    if (ec) throw core::Error(fmt::format("cannot list data directory '{}': {}", path, ec.message()), remedy);
    std::sort(files.begin(), files.end());
  } else if (fs::is_regular_file(status)) {
    files.push_back(path);
  } else {  // a FIFO would block for ever, /dev/zero or /dev/urandom would be read until memory runs out
    throw core::Error(fmt::format("data path '{}' is not a regular file or a directory (a device, FIFO or socket)",
                                  path),
                      remedy);
  }
  std::set<std::pair<dev_t, ino_t>> seen;  // fortunes has name.u8 → name links: read each file once
  std::size_t unreadable = 0, binary = 0, token_files = 0;
  std::string first_error;
  for (const auto& f : files) {
    struct stat st {};
    if (stat(f.c_str(), &st) != 0) continue;
    if (!seen.insert({st.st_dev, st.st_ino}).second) continue;
    bool is_text = false;
    if (bytes.size() >= kMaxCorpusBytes) break;
    if (!read_file(f, bytes, is_text, kMaxCorpusBytes - bytes.size())) {
      ++unreadable;
      if (first_error.empty()) first_error = fmt::format("{}: {}", f.string(), std::strerror(errno));
      continue;
    }
    if (is_text) ++corpus.file_count_;
    else ++binary;
    if (!is_text && f.extension() == ".bin") ++token_files;
  }
  if (corpus.file_count_ == 0 && unreadable > 0)
    throw core::Error(fmt::format("cannot read data '{}' ({})", path, first_error), remedy);
  if (bytes.size() < min_bytes)
    throw core::Error(fmt::format("data '{}' holds {} bytes of text in {} file(s); at least {} are needed{}", path,
                                  bytes.size(), corpus.file_count_, min_bytes,
                                  binary == 0 ? ""
                                              : fmt::format(" ({} file{} skipped as binary: a NUL byte in the first 4 KiB)",
                                                            binary, binary == 1 ? "" : "s")),
                      token_files == 0
                          ? remedy
                          : fmt::format("{} of them end in .bin: token files are read only when --data names one "
                                        "(e.g. --data {}), a directory is read as text; or {}",
                                        token_files, (fs::path(path) / "FILE.bin").string(), remedy));
  corpus.tokens_.assign(bytes.begin(), bytes.end());
  corpus.finish_tokens();
  corpus.description_ = fmt::format("text: {} ({} file{}, {}{})", path, corpus.file_count_,
                                    corpus.file_count_ == 1 ? "" : "s",
                                    bytes.size() < 100'000 ? fmt::format("{:.1f} kB", bytes.size() / 1e3)
                                                           : fmt::format("{:.2f} MB", bytes.size() / 1e6),
                                    bytes.size() >= kMaxCorpusBytes ? ", the first 256 MiB" : "");
  return corpus;
}

TextCorpus TextCorpus::from_data_option(const std::string& data, std::size_t min_tokens, std::uint64_t seed) {
  if (data == "synthetic") return synthetic(kSyntheticCorpusBytes, seed);
  return load(data.empty() ? std::string(kDefaultTextDirectory) : data, min_tokens);
}

void TextCorpus::require_vocabulary(int vocab, const std::string& model_name) const {
  if (max_token_ >= vocab)
    throw core::Error(fmt::format("the data holds token id {} but {} has a vocabulary of {}", max_token_, model_name, vocab),
                      "use token files made for this vocabulary, a GPT preset, or plain text");
}

TextCorpus TextCorpus::synthetic(std::size_t bytes, std::uint64_t seed) {
  TextCorpus corpus;
  corpus.tokens_.resize(bytes);
  for (std::size_t i = 0; i < bytes; ++i) corpus.tokens_[i] = static_cast<std::uint16_t>(mix64(seed * 0x1000193 + i) >> 56);
  corpus.finish_tokens();
  corpus.synthetic_ = true;
  corpus.description_ = fmt::format("synthetic: {:.2f} MB of uniformly random bytes", bytes / 1e6);
  return corpus;
}

BatchSampler::BatchSampler(const TextCorpus& corpus, int row_tokens, std::uint64_t seed)
    : corpus_(corpus), row_tokens_(row_tokens), seed_(seed) {
  if (row_tokens < 2 || corpus.tokens().size() < static_cast<std::size_t>(row_tokens))
    throw core::Error(fmt::format("the corpus ({} bytes) is shorter than one training row ({} tokens)",
                                  corpus.tokens().size(), row_tokens),
                      "use more text or a smaller --context");
}

void BatchSampler::fill(std::int64_t step, int first_row, int rows, std::vector<std::int32_t>& out) const {
  const auto& bytes = corpus_.tokens();
  const std::uint64_t windows = bytes.size() - static_cast<std::size_t>(row_tokens_) + 1;
  out.resize(static_cast<std::size_t>(rows) * row_tokens_);
  for (int r = 0; r < rows; ++r) {
    std::uint64_t global_row = static_cast<std::uint64_t>(first_row + r);
    std::uint64_t h = mix64(mix64(seed_ ^ mix64(static_cast<std::uint64_t>(step))) + global_row);
    std::size_t start = static_cast<std::size_t>(h % windows);
    std::int32_t* dst = out.data() + static_cast<std::size_t>(r) * row_tokens_;
    for (int t = 0; t < row_tokens_; ++t) dst[t] = bytes[start + static_cast<std::size_t>(t)];
  }
}

BatchLoader::BatchLoader(const BatchSampler& sampler, int first_row, int rows, int prefetch)
    : sampler_(sampler), first_row_(first_row), rows_(rows), prefetch_(static_cast<std::size_t>(std::max(1, prefetch))) {
  thread_ = std::thread([this] { run(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BatchLoader::run() {
  for (;;) {
    std::vector<std::int32_t> buffer;
    std::int64_t step;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || ready_.size() < prefetch_; });
      if (stop_) return;
      if (!free_.empty()) {
        buffer = std::move(free_.back());
        free_.pop_back();
      }
      step = next_step_++;
    }
    sampler_.fill(step, first_row_, rows_, buffer);
    {
      std::lock_guard lock(mutex_);
      ready_.push_back(std::move(buffer));
    }
    cv_.notify_all();
  }
}

TokenBatchView BatchLoader::next(double& wait_seconds) {
  auto t0 = std::chrono::steady_clock::now();
  {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !ready_.empty(); });
    if (!current_.empty()) free_.push_back(std::move(current_));
    current_ = std::move(ready_.front());
    ready_.pop_front();
  }
  cv_.notify_all();
  wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return TokenBatchView{rows_, sampler_.row_tokens(), current_.data()};
}

}  // namespace scalescope::train
