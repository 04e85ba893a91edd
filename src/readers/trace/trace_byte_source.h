#pragma once
// Internal to the trace reader (trace_reader.cpp): where its bytes come from — a file descriptor, memory, or a
// gzip stream (one or more members) over either, read in chunks of kChunk bytes.

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::analyze::trace_reader_internal {

constexpr std::size_t kChunk = std::size_t{1} << 20;        // bytes asked of the source per read

// ---------------------------------------------------------------------------------------------------------
// Byte sources: a file, memory, or a gzip stream over either.

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Up to `n` bytes into `dst`; 0 only at the end. Throws core::Error on a read failure.
  virtual std::size_t read(char* dst, std::size_t n) = 0;
};

class FileSource final : public ByteSource {
 public:
  FileSource(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileSource() override { close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  std::size_t read(char* dst, std::size_t n) override {
    for (;;) {
      const ssize_t r = ::read(fd_, dst, n);
      if (r >= 0) return static_cast<std::size_t>(r);
      if (errno == EINTR) continue;
      throw core::Error(fmt::format("cannot read trace '{}': {}", path_, std::strerror(errno)),
                        "check that the file is readable and the disk is healthy");
    }
  }

 private:
  int fd_;
  std::string path_;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  std::size_t read(char* dst, std::size_t n) override {
    const std::size_t k = std::min(n, bytes_.size() - pos_);
    std::memcpy(dst, bytes_.data() + pos_, k);
    pos_ += k;
    return k;
  }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

/// Inflates gzip (several concatenated members allowed, as `cat a.gz b.gz` makes) in 1 MiB input chunks.
class GzipSource final : public ByteSource {
 public:
  GzipSource(std::unique_ptr<ByteSource> inner, std::string name, std::string prefix)
      : inner_(std::move(inner)), name_(std::move(name)), in_(kChunk) {
    // The bytes already read to sniff the magic number are fed first.
    std::memcpy(in_.data(), prefix.data(), prefix.size());
    zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
    zs_.avail_in = static_cast<uInt>(prefix.size());
    if (inflateInit2(&zs_, 15 + 16) != Z_OK)
      throw core::Error("cannot initialise zlib to read '" + name_ + "'", "this is an out-of-memory condition");
  }
  ~GzipSource() override { inflateEnd(&zs_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  std::size_t read(char* dst, std::size_t n) override {
    if (done_) return 0;
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    zs_.avail_out = static_cast<uInt>(std::min<std::size_t>(n, std::numeric_limits<uInt>::max()));
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0 && !inner_eof_) {
        const std::size_t got = inner_->read(in_.data(), in_.size());
        compressed_ += got;
        if (got == 0) inner_eof_ = true;
        zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
        zs_.avail_in = static_cast<uInt>(got);
      }
      if (zs_.avail_in == 0 && inner_eof_) {
        if (member_started_)
          throw core::Error(fmt::format("'{}' is a truncated gzip file: the compressed data ends after {} bytes "
                                        "inside a gzip member",
                                        name_, compressed_),
                            "the copy is incomplete: copy or download the trace again");
        done_ = true;
        break;
      }
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      member_started_ = true;
      if (rc == Z_STREAM_END) {
        member_started_ = false;
        // Another gzip member may follow; anything else after the first member is garbage.
        if (zs_.avail_in == 0 && !inner_eof_) {
          const std::size_t got = inner_->read(in_.data(), in_.size());
          compressed_ += got;
          if (got == 0) inner_eof_ = true;
          zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
          zs_.avail_in = static_cast<uInt>(got);
        }
        if (zs_.avail_in == 0) {
          done_ = true;
          break;
        }
        if (zs_.next_in[0] != 0x1f) {  // trailing zero padding or junk: stop here, as gzip(1) does with a warning
          done_ = true;
          break;
        }
        inflateReset(&zs_);
        continue;
      }
      if (rc == Z_BUF_ERROR) continue;  // needs more input; loop reads it
      if (rc != Z_OK)
        throw core::Error(fmt::format("'{}' is not a valid gzip stream: {} (near compressed byte {})", name_,
                                      zs_.msg ? zs_.msg : "inflate failed", compressed_ - zs_.avail_in),
                          "the file is damaged: copy or download the trace again, or pass the uncompressed .json");
    }
    return n - zs_.avail_out;
  }

 private:
  std::unique_ptr<ByteSource> inner_;
  std::string name_;
  std::vector<char> in_;
  z_stream zs_{};
  std::uint64_t compressed_ = 0;
  bool inner_eof_ = false;
  bool member_started_ = false;
  bool done_ = false;
};

}  // namespace scalescope::analyze::trace_reader_internal
