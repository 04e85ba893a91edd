#pragma once
// Training data: byte-level tokens from real text files (default), or uniformly random bytes
// (`--data synthetic`) to show how random tensors flatter or distort a measurement.
//
// Every rank derives the same global batch from (seed, step) and takes its own slice of rows, so N ranks
// at global batch B see exactly the rows one rank sees at batch B: the basis of the DP correctness test.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "train/model.h"

namespace scalescope::train {

/// The default text: the English quotations, poems and prose of the Debian/Ubuntu package `fortunes`
/// (installed by scripts/setup.sh; `apt-get install fortunes`), about 2.5 MB of plain text.
inline constexpr const char* kDefaultTextDirectory = "/usr/share/games/fortunes";

/// Every rank holds the whole corpus in memory: text beyond this many bytes is not read.
inline constexpr std::size_t kMaxCorpusBytes = std::size_t{256} << 20;

/// Bytes of the `--data synthetic` corpus (random bytes).
inline constexpr std::size_t kSyntheticCorpusBytes = std::size_t{4} << 20;

/// llm.c's token-file header: 256 int32 values, the first the magic 20240520, the second the version (1:
/// uint16 tokens follow), the third the token count (karpathy/llm.c, dev/data/data_common.py write_datafile).
inline constexpr std::int32_t kLlmcMagic = 20240520;
/// llm.c's Llama 3 token files (version 7, uint32 tokens): named so they are refused for what they are.
inline constexpr std::int32_t kLlmcLlama3Magic = 20240801;

/// Training tokens: the bytes of text files (byte-level tokens 0–255), or a token file of a tokenizer.
class TextCorpus {
 public:
  /// Reads `path`:
  ///  - an llm.c token file (.bin starting with the kLlmcMagic header, version 1: uint16 tokens);
  ///  - a nanoGPT token file (any other file ending in .bin: raw little-endian uint16 tokens, no header);
  ///  - a text file, or a directory whose regular text files are read (sorted by name, each file once even when
  ///    reached through several links; files containing NUL bytes in their first 4 KiB, such as fortune's .dat
  ///    indexes, are skipped as binary; at most kMaxCorpusBytes are read), one token per byte.
  /// Throws core::Error naming the path when it does not exist, is not a regular file or directory (a FIFO, a
  /// device), cannot be read, is a malformed token file (bad version, size not matching the header or odd),
  /// or holds fewer than `min_tokens` tokens.
  static TextCorpus load(const std::string& path, std::size_t min_tokens);
  /// A corpus of `bytes` uniformly random bytes from `seed` (the `--data synthetic` source).
  static TextCorpus synthetic(std::size_t bytes, std::uint64_t seed);
  /// The corpus a `--data` value names: "synthetic" → synthetic(kSyntheticCorpusBytes, seed); "" → the default
  /// text (kDefaultTextDirectory); anything else → load(data, min_tokens). Throws as load().
  static TextCorpus from_data_option(const std::string& data, std::size_t min_tokens, std::uint64_t seed);

  /// Throws core::Error naming the largest token id unless every id is below `vocab`, the vocabulary of the
  /// model `model_name`.
  void require_vocabulary(int vocab, const std::string& model_name) const;

  /// The corpus as token ids: text bytes (0–255) or the ids of a token file.
  const std::vector<std::uint16_t>& tokens() const { return tokens_; }
  /// Largest token id (a model's vocabulary must exceed it).
  std::uint16_t max_token() const { return max_token_; }
  /// e.g. "text: /usr/share/games/fortunes (63 files, 2.49 MB)" or "synthetic: 4.19 MB random bytes".
  const std::string& description() const { return description_; }
  std::size_t file_count() const { return file_count_; }
  bool is_synthetic() const { return synthetic_; }

 private:
  static TextCorpus load_token_file(const std::string& path, std::size_t min_tokens, const std::string& remedy);
  void finish_tokens();
  std::vector<std::uint16_t> tokens_;
  std::uint16_t max_token_ = 0;
  std::string description_;
  std::size_t file_count_ = 0;
  bool synthetic_ = false;
};

/// Deterministic next-token rows: row j of global step s is the window of `row_tokens` bytes starting at
/// a position drawn from (seed, s, j). Windows are sampled with replacement, as random-crop loaders do.
class BatchSampler {
 public:
  /// Throws core::Error if the corpus is shorter than `row_tokens`.
  BatchSampler(const TextCorpus& corpus, int row_tokens, std::uint64_t seed);
  /// Fills `out` with rows [first_row, first_row + rows) of the global batch of `step`:
  /// rows × row_tokens int32 token ids (0..255).
  void fill(std::int64_t step, int first_row, int rows, std::vector<std::int32_t>& out) const;
  int row_tokens() const { return row_tokens_; }

 private:
  const TextCorpus& corpus_;
  int row_tokens_;
  std::uint64_t seed_;
};

/// A background thread that prepares this rank's batches for steps 0, 1, 2, … ahead of use
/// (`prefetch` batches deep), so the time the training loop waits for data is measured, not hidden.
class BatchLoader {
 public:
  /// `first_row`/`rows`: this rank's slice of each global batch.
  BatchLoader(const BatchSampler& sampler, int first_row, int rows, int prefetch = 2);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  /// The next step's batch; blocks until ready. `wait_seconds` receives how long it blocked.
  /// The view stays valid until the next call.
  TokenBatchView next(double& wait_seconds);

 private:
  void run();
  const BatchSampler& sampler_;
  int first_row_, rows_;
  std::size_t prefetch_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::vector<std::int32_t>> ready_;
  std::vector<std::int32_t> current_;
  std::vector<std::vector<std::int32_t>> free_;
  bool stop_ = false;
  std::int64_t next_step_ = 0;
  std::thread thread_;
};

}  // namespace scalescope::train
