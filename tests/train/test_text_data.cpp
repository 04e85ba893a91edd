// Training data: text files and the two token-file formats, deterministic rows, the prefetching loader.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "train/text_data.h"
#include "support/scratch_dir.h"

using namespace scalescope::train;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return scalescope::testing::scratch_dir("data_" + name); }

void write_bytes(const fs::path& p, const void* data, std::size_t n) {
  std::ofstream out(p, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

std::vector<std::uint16_t> ramp(std::size_t n) {
  std::vector<std::uint16_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<std::uint16_t>((i * 37) % 50000);
  return t;
}

}  // namespace

TEST(TextData, ReadsTextDirectoriesSkippingBinaryFiles) {
  auto d = scratch("text");
  std::ofstream(d / "a.txt") << "Hello, data parallel world.\n";
  std::ofstream(d / "b.txt") << "Second file.\n";
  std::string binary(100, 'x');
  binary[10] = '\0';
  write_bytes(d / "c.dat", binary.data(), binary.size());
  auto corpus = TextCorpus::load(d.string(), 8);
  EXPECT_EQ(corpus.file_count(), 2u);
  EXPECT_EQ(corpus.tokens().size(), std::string("Hello, data parallel world.\nSecond file.\n").size());
  EXPECT_EQ(corpus.tokens()[0], 'H');
  EXPECT_EQ(corpus.max_token(), 'w');
  fs::remove_all(d);
}

TEST(TextData, ReadsLlmcTokenFiles) {
  auto d = scratch("llmc");
  auto tokens = ramp(1000);
  std::vector<std::int32_t> header(256, 0);
  header[0] = kLlmcMagic;
  header[1] = 1;
  header[2] = 1000;
  {
    std::ofstream out(d / "train.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(header.data()), 1024);
    out.write(reinterpret_cast<const char*>(tokens.data()), 2000);
  }
  auto corpus = TextCorpus::load((d / "train.bin").string(), 10);
  EXPECT_EQ(corpus.tokens(), tokens);
  EXPECT_EQ(corpus.max_token(), *std::max_element(tokens.begin(), tokens.end()));
  EXPECT_NE(corpus.description().find("llm.c"), std::string::npos);

  header[1] = 2;  // an unknown version is refused, not misread
  {
    std::ofstream out(d / "v2.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(header.data()), 1024);
    out.write(reinterpret_cast<const char*>(tokens.data()), 2000);
  }
  EXPECT_THROW(TextCorpus::load((d / "v2.bin").string(), 10), scalescope::core::Error);
  header[1] = 1;
  header[2] = 5000;  // announces more tokens than it holds: a cut-off file
  {
    std::ofstream out(d / "cut.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(header.data()), 1024);
    out.write(reinterpret_cast<const char*>(tokens.data()), 2000);
  }
  EXPECT_THROW(TextCorpus::load((d / "cut.bin").string(), 10), scalescope::core::Error);
  fs::remove_all(d);
}

TEST(TextData, ReadsNanoGptRawTokenFiles) {
  auto d = scratch("nanogpt");
  auto tokens = ramp(777);
  write_bytes(d / "val.bin", tokens.data(), tokens.size() * 2);
  auto corpus = TextCorpus::load((d / "val.bin").string(), 10);
  EXPECT_EQ(corpus.tokens(), tokens);
  EXPECT_NE(corpus.description().find("nanoGPT"), std::string::npos);
  write_bytes(d / "odd.bin", tokens.data(), 7);
  EXPECT_THROW(TextCorpus::load((d / "odd.bin").string(), 1), scalescope::core::Error);
  EXPECT_THROW(TextCorpus::load((d / "val.bin").string(), 100000), scalescope::core::Error);  // too few tokens
  fs::remove_all(d);
}

namespace {

/// The message of the core::Error that loading `path` throws (its what and remedy), or "" when it loads.
std::string load_error(const fs::path& path) {
  try {
    TextCorpus::load(path.string(), 10);
  } catch (const scalescope::core::Error& e) {
    return std::string(e.what()) + " | " + e.remedy();
  }
  return "";
}

void write_llmc(const fs::path& p, std::int32_t magic, std::int32_t version, std::int32_t count,
                std::size_t payload_bytes) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = count;
  std::vector<char> payload(payload_bytes, 1);
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header.data()), 1024);
  out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
}

}  // namespace

TEST(TextData, BinFilesThatAreNotGpt2TokensAreRefusedForWhatTheyAre) {
  auto d = scratch("not_tokens");
  std::string text;
  while (text.size() < 4000) text += "the quick brown fox jumps over the lazy dog\n";
  write_bytes(d / "corpus.bin", text.data(), text.size());  // text with a .bin name: was read as tokens
  auto e = load_error(d / "corpus.bin");
  EXPECT_NE(e.find("looks like text (100 % printable"), std::string::npos) << e;
  EXPECT_NE(e.find(".txt"), std::string::npos) << e;

  std::vector<std::int32_t> cut(150, 0);  // llm.c's magic, the header cut off at 600 bytes
  cut[0] = kLlmcMagic;
  write_bytes(d / "cut.bin", cut.data(), 600);
  e = load_error(d / "cut.bin");
  EXPECT_NE(e.find("cut short: 600 bytes"), std::string::npos) << e;

  write_llmc(d / "llama3.bin", kLlmcLlama3Magic, 7, 1000, 4000);
  e = load_error(d / "llama3.bin");
  EXPECT_NE(e.find("Llama 3 token file"), std::string::npos) << e;

  write_llmc(d / "magic.bin", 20240521, 1, 1000, 2000);  // a date magic scalescope does not know
  e = load_error(d / "magic.bin");
  EXPECT_NE(e.find("looks like an llm.c header's date magic"), std::string::npos) << e;
  fs::remove_all(d);
}

TEST(TextData, RawTokensThatStartLikeAHeaderAreStillRawTokens) {
  // 7585 then 309 is the int32 20240801 (llm.c's Llama 3 magic); without its version and count it is two tokens.
  auto d = scratch("raw_like_header");
  auto tokens = ramp(2000);
  tokens[0] = 7585;
  tokens[1] = 309;
  write_bytes(d / "raw.bin", tokens.data(), tokens.size() * 2);
  const auto corpus = TextCorpus::load((d / "raw.bin").string(), 10);
  EXPECT_EQ(corpus.tokens(), tokens);
  EXPECT_NE(corpus.description().find("nanoGPT"), std::string::npos);
  fs::remove_all(d);
}

TEST(TextData, ADirectoryOfTokenShardsSaysHowToPassThem) {
  auto d = scratch("shards");
  auto tokens = ramp(2000);
  write_bytes(d / "train_000.bin", tokens.data(), tokens.size() * 2);
  write_bytes(d / "train_001.bin", tokens.data(), tokens.size() * 2);
  const auto e = load_error(d);
  EXPECT_NE(e.find("2 of them end in .bin: token files are read only when --data names one"), std::string::npos) << e;
  fs::remove_all(d);
}

TEST(TextData, ASymbolicLinkLoopIsNotCalledMissing) {
  auto d = scratch("link_loop");
  fs::create_symlink(d / "a", d / "b");
  fs::create_symlink(d / "b", d / "a");
  const auto e = load_error(d / "a");
  EXPECT_NE(e.find("cannot be opened: Too many levels of symbolic links"), std::string::npos) << e;
  EXPECT_NE(load_error(d / "absent").find("does not exist"), std::string::npos);
  fs::remove_all(d);
}

TEST(TextData, RowsDependOnStepAndRowOnlySoRanksSliceOneGlobalBatch) {
  auto corpus = TextCorpus::synthetic(1 << 16, 7);
  BatchSampler sampler(corpus, 9, 42);
  std::vector<std::int32_t> whole, first, second;
  sampler.fill(3, 0, 8, whole);
  sampler.fill(3, 0, 4, first);
  sampler.fill(3, 4, 4, second);
  first.insert(first.end(), second.begin(), second.end());
  EXPECT_EQ(first, whole);
  std::vector<std::int32_t> other_step;
  sampler.fill(4, 0, 8, other_step);
  EXPECT_NE(other_step, whole);
  // Each row is a window of the corpus.
  const auto& t = corpus.tokens();
  auto it = std::search(t.begin(), t.end(), whole.begin(), whole.begin() + 9);
  EXPECT_NE(it, t.end());
}

TEST(TextData, LoaderDeliversTheSamplersRowsInStepOrder) {
  auto corpus = TextCorpus::synthetic(1 << 16, 9);
  BatchSampler sampler(corpus, 5, 1);
  BatchLoader loader(sampler, 2, 3);
  for (int step = 0; step < 5; ++step) {
    double wait = -1;
    TokenBatchView v = loader.next(wait);
    EXPECT_GE(wait, 0.0);
    std::vector<std::int32_t> want;
    sampler.fill(step, 2, 3, want);
    ASSERT_EQ(v.rows, 3);
    ASSERT_EQ(v.row_tokens, 5);
    EXPECT_EQ(std::vector<std::int32_t>(v.tokens, v.tokens + 15), want) << step;
  }
}
