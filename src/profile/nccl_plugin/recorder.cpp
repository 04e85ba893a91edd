#include "profile/nccl_plugin/recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace scalescope::nccl_plugin {

namespace {

std::int64_t coarse_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// NCCL's names are identifiers; anything else is cut to its identifier characters so a line stays valid JSON.
void copy_name(char* dst, std::size_t cap, const char* src) {
  std::size_t n = 0;
  if (src)
    for (; src[n] && n + 1 < cap; ++n) {
      const char c = src[n];
      const bool ident = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      dst[n] = ident ? c : '_';
    }
  dst[n] = '\0';
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x80) {  // bytes ≥ 0x80 as code points: a name that is not UTF-8 stays valid JSON
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

template <class T>
void append_number(std::string& out, T v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

void field(std::string& out, const char* name) {
  if (out.size() > 1) out += ',';
  out += '"';
  out += name;
  out += "\":";
}

bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

std::string profile_file_name(const CommInfo& comm) {
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(comm.comm_id));
  std::string host;
  for (const char c : comm.host) host += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  if (host.empty()) host = "host";
  return "nccl-profile." + host + "." + std::to_string(comm.pid) + "." + id + ".r" + std::to_string(comm.rank) + ".jsonl";
}

std::string Recorder::header_line(const CommInfo& comm) {
  std::string out = "{";
  field(out, "schema");
  out += "\"scalescope.nccl-profile/1\"";
  field(out, "nccl_profiler_api");
  out += "\"v5\"";
  char id[24];
  std::snprintf(id, sizeof id, "0x%016llx", static_cast<unsigned long long>(comm.comm_id));
  field(out, "comm_id");
  append_json_string(out, id);
  field(out, "comm_name");
  append_json_string(out, comm.comm_name);
  field(out, "rank");
  append_number(out, comm.rank);
  field(out, "nranks");
  append_number(out, comm.nranks);
  field(out, "nnodes");
  append_number(out, comm.nnodes);
  field(out, "host");
  append_json_string(out, comm.host);
  field(out, "pid");
  append_number(out, comm.pid);
  field(out, "clocks");
  out += "\"host_ns: CLOCK_REALTIME; gpu_start_ns: GPU globaltimer\"";
  out += '}';
  return out;
}

std::string Recorder::record_line(const OpRecord& r) {
  std::string out = "{";
  field(out, "i");
  append_number(out, r.index);
  if (!r.p2p) {
    field(out, "seq");
    append_number(out, r.seq);
  }
  field(out, "op");
  append_json_string(out, r.func);
  field(out, "type");
  append_json_string(out, r.datatype);
  field(out, "count");
  append_number(out, r.count);
  field(out, r.p2p ? "peer" : "root");
  append_number(out, r.root_or_peer);
  if (!r.p2p) {
    field(out, "algo");
    append_json_string(out, r.algo);
    field(out, "proto");
    append_json_string(out, r.proto);
  }
  field(out, "channels");
  append_number(out, r.channels);
  field(out, "host_ns");
  append_number(out, r.host_start_ns);
  if (r.host_stop_ns >= r.host_start_ns && r.host_stop_ns > 0) {
    field(out, "enqueue_ns");
    append_number(out, r.host_stop_ns - r.host_start_ns);
  }
  const auto started = r.channels_started.load(std::memory_order_acquire);
  const auto stopped = r.channels_stopped.load(std::memory_order_acquire);
  const auto g0 = r.gpu_start.load(std::memory_order_acquire), g1 = r.gpu_stop.load(std::memory_order_acquire);
  if (stopped > 0 && g0 != UINT64_MAX && g1 >= g0) {
    field(out, "gpu_start_ns");
    append_number(out, g0);
    field(out, "gpu_ns");
    append_number(out, g1 - g0);
  }
  field(out, "kernel_channels");
  append_number(out, stopped);
  if (started > stopped) {
    field(out, "channels_unfinished");
    append_number(out, started - stopped);
  }
  out += '}';
  return out;
}

Recorder::Recorder(CommInfo comm, std::string path, std::size_t capacity, std::size_t flush_bytes)
    : comm_(std::move(comm)), path_(std::move(path)), flush_bytes_(flush_bytes), ring_(capacity == 0 ? 1 : capacity) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error_ = std::string("cannot create ") + path_ + ": " + std::strerror(errno);
    return;
  }
  // The header at once: a process killed before its first flush still leaves a file that says what it is.
  const std::string header = header_line(comm_) + "\n";
  if (!write_all(fd_, header.data(), header.size())) {
    error_ = std::string("cannot write ") + path_ + ": " + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    return;
  }
  buffer_.reserve(flush_bytes_ + 4096);
  last_flush_ns_ = coarse_now_ns();
}

Recorder::~Recorder() {
  flush_all();
  if (fd_ >= 0) ::close(fd_);
}

OpRecord* Recorder::start_op(const OpStart& op) {
  std::lock_guard lock(mutex_);
  OpRecord& r = ring_[next_ % ring_.size()];
  if (r.used) write_out(r);
  r.used = true;
  r.p2p = op.p2p;
  r.seq = op.seq;
  r.index = next_++;
  copy_name(r.func, sizeof r.func, op.func);
  copy_name(r.datatype, sizeof r.datatype, op.datatype);
  copy_name(r.algo, sizeof r.algo, op.algo);
  copy_name(r.proto, sizeof r.proto, op.proto);
  r.count = op.count;
  r.root_or_peer = op.root_or_peer;
  r.channels = op.channels;
  r.host_start_ns = now_ns();
  r.host_stop_ns = 0;
  r.gpu_start.store(UINT64_MAX, std::memory_order_relaxed);
  r.gpu_stop.store(0, std::memory_order_relaxed);
  r.channels_started.store(0, std::memory_order_relaxed);
  r.channels_stopped.store(0, std::memory_order_release);
  // Written out when the buffer is full, and at least once a second while operations come (a job killed by a
  // signal keeps what came before its last second).
  if (buffer_.size() >= flush_bytes_ || (!buffer_.empty() && coarse_now_ns() - last_flush_ns_ > 1000000000)) flush_buffer();
  return &r;
}

void Recorder::stop_op(OpRecord* r) {
  if (r) r->host_stop_ns = now_ns();
}

void Recorder::kernel_start(OpRecord* r, std::uint64_t gpu_ns) {
  if (!r) return;
  auto cur = r->gpu_start.load(std::memory_order_relaxed);
  while (gpu_ns < cur && !r->gpu_start.compare_exchange_weak(cur, gpu_ns, std::memory_order_acq_rel)) {
  }
  r->channels_started.fetch_add(1, std::memory_order_acq_rel);
}

void Recorder::kernel_stop(OpRecord* r, std::uint64_t gpu_ns) {
  if (!r) return;
  // A stop without a matching start (its slot reused by a later operation) is dropped.
  auto stopped = r->channels_stopped.load(std::memory_order_acquire);
  do {
    if (stopped >= r->channels_started.load(std::memory_order_acquire)) return;
  } while (!r->channels_stopped.compare_exchange_weak(stopped, stopped + 1, std::memory_order_acq_rel));
  auto cur = r->gpu_stop.load(std::memory_order_relaxed);
  while (gpu_ns > cur && !r->gpu_stop.compare_exchange_weak(cur, gpu_ns, std::memory_order_acq_rel)) {
  }
}

void Recorder::write_out(const OpRecord& r) {
  buffer_ += record_line(r);
  buffer_ += '\n';
}

void Recorder::flush_buffer() {
  if (fd_ >= 0 && !buffer_.empty() && !write_all(fd_, buffer_.data(), buffer_.size())) {
    error_ = std::string("cannot write ") + path_ + ": " + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;  // stop recording; the job goes on
  }
  buffer_.clear();
  last_flush_ns_ = coarse_now_ns();
}

void Recorder::flush_all() {
  std::lock_guard lock(mutex_);
  const std::uint64_t n = ring_.size();
  const std::uint64_t first = next_ > n ? next_ - n : 0;
  for (std::uint64_t i = first; i < next_; ++i) {
    OpRecord& r = ring_[i % n];
    if (r.used && r.index == i) {
      write_out(r);
      r.used = false;
    }
  }
  flush_buffer();
}

}  // namespace scalescope::nccl_plugin
