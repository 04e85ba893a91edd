// The Kineto trace reader (trace_reader.h): the trace's top-level object and its metadata (distributedInfo,
// deviceProperties …), the event array parsed one event at a time (simdjson over the spans trace_json_scanner.h
// finds, from the bytes of trace_byte_source.h), the events the analysis keeps (trace_event_names.h) interned into
// the Trace record, and the counts and warnings of what was left.

#include "readers/trace/trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "core/parse_count.h"
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "core/error.h"
#include "readers/trace/trace_byte_source.h"
#include "readers/trace/trace_event_names.h"
#include "readers/trace/trace_json_scanner.h"

namespace scalescope::analyze {

bool is_cpu_collective_name(std::string_view n) {
  return n.substr(0, 5) == "gloo:" || n.substr(0, 4) == "mpi:" || n.substr(0, 4) == "ucc:";
}

namespace {

using namespace trace_reader_internal;

namespace od = simdjson::ondemand;

constexpr std::size_t kMaxMetadataBytes = std::size_t{64} << 20;

// ---------------------------------------------------------------------------------------------------------
// The reader proper.

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

/// A small counter keyed by short strings (categories, phases): a linear scan beats a map for ~20 keys.
class SmallCounter {
 public:
  void add(std::string_view key) {
    for (auto& [k, n] : entries_)
      if (k == key) {
        ++n;
        return;
      }
    if (entries_.size() < 256) entries_.emplace_back(std::string(key), 1);
    else ++overflow_;
  }
  std::map<std::string, std::uint64_t> to_map() const {
    std::map<std::string, std::uint64_t> m;
    for (const auto& [k, n] : entries_) m[k] += n;
    if (overflow_ > 0) m["(other)"] += overflow_;
    return m;
  }

 private:
  std::vector<std::pair<std::string, std::uint64_t>> entries_;
  std::uint64_t overflow_ = 0;
};

// Everything one event holds that the reader may keep, read in one pass over its fields.
struct EventFields {
  std::string_view ph, cat, name;
  bool has_ph = false, has_cat = false, has_name = false;
  std::optional<std::int64_t> ts, dur;
  bool bad_ts = false, bad_dur = false;
  std::optional<std::int64_t> pid_num, tid_num;
  std::string_view pid_str, tid_str;
  bool pid_is_str = false, tid_is_str = false, has_pid = false, has_tid = false;
  std::int64_t correlation = -1, external_id = -1, bytes = -1, device = -1, stream = -1;
  std::string_view arg_name, arg_labels;
  // collective metadata
  std::string_view coll_name, dtype, pg_name, pg_desc, input_type;
  std::optional<std::int64_t> in_nelems, out_nelems, group_size, seq, input_numel;
  // a kernel's launch configuration, args "grid" and "block" ([x, y, z] each); empty when absent or malformed
  std::string launch_grid, launch_block;
};

class TraceReader {
 public:
  TraceReader(ByteSource& src, std::string name, const TraceReadOptions& options, std::uint64_t size_hint)
      : scanner_(src, name, options, size_hint), name_(std::move(name)), options_(options) {
    trace_.source = name_;
    trace_.names.emplace_back();
    name_index_.emplace(std::string(), 0);
  }

  Trace run() {
    scanner_.skip_bom();
    const int c = scanner_.peek_nonspace();
    if (c < 0)
      throw core::Error("'" + name_ + "' is empty", "pass the trace file that torch.profiler wrote (.json or .json.gz)");
    if (c == '{') {
      read_object();
    } else if (c == '[') {
      trace_.array_format = true;
      read_events(/*top_level=*/true);
    } else {
      scanner_.invalid(scanner_.position(), What{"the first value of the file"});
    }
    if (scanner_.peek_nonspace() >= 0)
      scanner_.fail_here("unexpected data after the end of the trace's JSON",
                         "the file holds more than one JSON document; pass one trace per file");
    if (!saw_events_)
      throw core::Error("'" + name_ + "' holds no \"traceEvents\" array: not a Chrome/Kineto trace",
                        "pass the trace that torch.profiler wrote (export_chrome_trace or tensorboard_trace_handler)");
    finish();
    return std::move(trace_);
  }

 private:
  void read_object() {
    scanner_.advance();
    bool first = true;
    for (;;) {
      int c = scanner_.peek_nonspace();
      if (c < 0) scanner_.truncated(scanner_.position(), What{"the top-level object"});
      if (c == '}' && first) {
        scanner_.advance();
        return;
      }
      if (c != '"') scanner_.invalid(scanner_.position(), What{"the top-level object (a key was expected)"});
      const std::string key = scanner_.read_key();
      c = scanner_.peek_nonspace();
      if (c != ':') {
        if (c < 0) scanner_.truncated(scanner_.position(), What{"the top-level object"});
        scanner_.invalid(scanner_.position(), What{"the top-level object (':' was expected)"});
      }
      scanner_.advance();
      c = scanner_.peek_nonspace();
      if (c < 0) scanner_.truncated(scanner_.position(), What{"the value of \"" + key + "\""});
      if (key == "traceEvents" && c == '[') {
        read_events(/*top_level=*/false);
      } else if (key == "distributedInfo" || key == "deviceProperties" || key == "baseTimeNanoseconds" ||
                 key == "schemaVersion" || key == "traceName") {
        read_metadata(key);
      } else {
        if (key == "traceEvents") trace_.warnings.push_back("\"traceEvents\" is not an array; ignored");
        scanner_.scan_value(false, What{"the value of \"" + key + "\""});
      }
      c = scanner_.peek_nonspace();
      if (c == ',') {
        scanner_.advance();
        first = false;
        continue;
      }
      if (c == '}') {
        scanner_.advance();
        return;
      }
      if (c < 0) scanner_.truncated(scanner_.position(), What{"the top-level object"});
      scanner_.invalid(scanner_.position(), What{"the top-level object (',' or '}' was expected)"});
    }
  }

  void read_metadata(const std::string& key) {
    const Span s = scanner_.scan_value(true, What{"the value of \"" + key + "\""});
    if (s.end - s.begin > kMaxMetadataBytes) {
      trace_.warnings.push_back(fmt::format("\"{}\" is larger than {} MiB; ignored", key, kMaxMetadataBytes >> 20));
      return;
    }
    const nlohmann::json j = nlohmann::json::parse(scanner_.data(s.begin), scanner_.data(s.end), nullptr, false);
    if (j.is_discarded()) {
      trace_.warnings.push_back("\"" + key + "\" is not valid JSON; ignored");
      return;
    }
    auto int_of = [](const nlohmann::json& v) -> std::optional<std::int64_t> {
      if (v.is_number_integer()) return v.get<std::int64_t>();
      if (v.is_number_unsigned() && v.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX))
        return static_cast<std::int64_t>(v.get<std::uint64_t>());
      if (v.is_string()) {  // some writers quote numbers
        const std::string t = v.get<std::string>();
        char* e = nullptr;
        errno = 0;
        const long long x = std::strtoll(t.c_str(), &e, 10);
        if (!t.empty() && e == t.c_str() + t.size() && errno == 0) return x;
      }
      return std::nullopt;
    };
    auto str_of = [](const nlohmann::json& o, const char* k) -> std::string {
      if (!o.is_object()) return {};
      auto it = o.find(k);
      if (it == o.end()) return {};
      if (it->is_string()) return it->get<std::string>();
      if (it->is_number()) return it->dump();
      return {};
    };
    auto field_int = [&](const nlohmann::json& o, const char* k) -> std::optional<std::int64_t> {
      if (!o.is_object()) return std::nullopt;
      auto it = o.find(k);
      return it == o.end() ? std::nullopt : int_of(*it);
    };
    if (key == "baseTimeNanoseconds") {
      trace_.base_time_ns = int_of(j);
      if (trace_.base_time_ns && (*trace_.base_time_ns < 0 || *trace_.base_time_ns > (std::int64_t{1} << 62)))
        trace_.base_time_ns.reset();  // beyond the year 2116: not a time, and it would overflow sums
      if (!trace_.base_time_ns) trace_.warnings.push_back("\"baseTimeNanoseconds\" is not a plausible integer; ignored");
    } else if (key == "schemaVersion") {
      trace_.schema_version = int_of(j);
    } else if (key == "traceName") {
      if (j.is_string()) trace_.trace_name = j.get<std::string>();
    } else if (key == "distributedInfo") {
      if (!j.is_object()) {
        trace_.warnings.push_back("\"distributedInfo\" is not an object; ignored");
        return;
      }
      DistributedInfo d;
      d.rank = field_int(j, "rank");
      d.world_size = field_int(j, "world_size");
      d.backend = str_of(j, "backend");
      d.nccl_version = str_of(j, "nccl_version");
      if (auto it = j.find("pg_config"); it != j.end() && it->is_array()) {
        for (const auto& pg : *it) {
          if (!pg.is_object()) continue;
          ProcessGroupConfig c;
          c.name = str_of(pg, "pg_name");
          c.desc = str_of(pg, "pg_desc");
          c.backend_config = str_of(pg, "backend_config");
          c.size = field_int(pg, "pg_size");
          if (auto r = pg.find("ranks"); r != pg.end() && r->is_array())
            for (const auto& x : *r)
              if (auto v = int_of(x)) c.ranks.push_back(*v);
          d.pg_config.push_back(std::move(c));
        }
      }
      trace_.distributed = std::move(d);
    } else if (key == "deviceProperties") {
      std::vector<DeviceProperties> devs;
      if (j.is_array()) {
        for (const auto& o : j) {
          if (!o.is_object()) continue;
          DeviceProperties p;
          p.id = field_int(o, "id").value_or(-1);
          p.name = str_of(o, "name");
          p.total_global_mem = field_int(o, "totalGlobalMem");
          p.num_sms = field_int(o, "numSms");
          p.compute_major = field_int(o, "computeMajor");
          p.compute_minor = field_int(o, "computeMinor");
          devs.push_back(std::move(p));
        }
      }
      trace_.device_properties = std::move(devs);
    }
  }

  void read_events(bool top_level) {
    saw_events_ = true;
    scanner_.advance();  // '['
    bool expect_value = true;
    for (;;) {
      int c = scanner_.peek_nonspace();
      if (c < 0) {
        // The JSON Array Format allows the closing ']' to be missing (a crashed writer).
        if (top_level) {
          trace_.warnings.push_back("the event array has no closing ']' (allowed by the JSON Array Format)");
          return;
        }
        scanner_.truncated(scanner_.position(), What{"the \"traceEvents\" array"});
      }
      if (c == ']') {
        if (expect_value && trace_.events_read > 0) trailing_commas_++;
        scanner_.advance();
        return;
      }
      if (!expect_value) scanner_.invalid(scanner_.position(), What{"the event array (',' or ']' was expected)"});
      const What what{{}, trace_.events_read + 1};
      if (trace_.events_read >= options_.max_events)
        throw core::Error(fmt::format("'{}' holds more than {} events: the bound on one trace", name_, options_.max_events),
                          "profile fewer steps, or raise the bound (analyze --max-trace-events N) if the trace is genuine");
      if (c == '{') {
        const Span s = scanner_.scan_value(true, what);
        ++trace_.events_read;
        process_event(s, what);
      } else {
        scanner_.scan_value(false, what);
        ++trace_.events_read;
        ++non_objects_;
      }
      c = scanner_.peek_nonspace();
      if (c == ',') {
        scanner_.advance();
        expect_value = true;
      } else {
        expect_value = false;
      }
    }
  }

  // ---- one event ----

  /// The string value, or leaves `out` unchanged when the value is not a string.
  static bool get_str(od::value& v, std::string_view& out) { return v.get_string().get(out) == simdjson::SUCCESS; }

  static std::optional<std::int64_t> get_int(od::value& v) {
    std::int64_t x = 0;
    if (!v.get_int64().get(x)) return x;
    double d = 0;
    if (!v.get_double().get(d) && std::isfinite(d) && std::fabs(d) < 9.2e18 && d == std::floor(d))
      return static_cast<std::int64_t>(d);
    return std::nullopt;
  }

  /// "[x, y, z]" → "x,y,z" for an array of up to three non-negative integers; "" otherwise.
  static std::string get_dims(od::value& v) {
    od::array a;
    if (v.get_array().get(a)) return {};
    std::string out;
    int n = 0;
    for (auto x : a) {
      std::int64_t d = 0;
      if (x.get_int64().get(d) || d < 0 || ++n > 3) return {};
      if (!out.empty()) out += ',';
      out += std::to_string(d);
    }
    return out;
  }

  static bool get_id(od::value& v, std::optional<std::int64_t>& num, std::string_view& str, bool& is_str) {
    od::json_type t;
    if (v.type().get(t)) return false;
    if (t == od::json_type::number) {
      std::int64_t x = 0;
      if (!v.get_int64().get(x)) {
        num = x;
        is_str = false;
        return true;
      }
      std::string_view raw;
      raw = v.raw_json_token();
      while (!raw.empty() && raw.back() == ' ') raw.remove_suffix(1);
      str = raw;
      is_str = true;
      return true;
    }
    if (t == od::json_type::string) {
      if (v.get_string().get(str)) return false;
      is_str = true;
      return true;
    }
    return false;
  }

  static std::optional<std::int64_t> get_time(od::value& v, bool& bad) {
    od::json_type t;
    if (v.type().get(t)) {
      bad = true;
      return std::nullopt;
    }
    std::string_view raw;
    if (t == od::json_type::number) {
      raw = v.raw_json_token();
    } else if (t == od::json_type::string) {
      if (v.get_string().get(raw)) {
        bad = true;
        return std::nullopt;
      }
    } else {
      bad = true;
      return std::nullopt;
    }
    auto r = us_to_ns(raw);
    if (!r) bad = true;
    return r;
  }

  simdjson::error_code read_args(od::value& v, EventFields& f) {
    od::object args;
    if (auto err = v.get_object().get(args)) return err;
    for (auto field_result : args) {
      od::field field;
      if (auto err = std::move(field_result).get(field)) return err;
      std::string_view key;
      if (auto err = field.unescaped_key().get(key)) return err;
      od::value val = field.value();
      if (key.empty()) continue;
      switch (key[0]) {
        case 'E':
          if (key == "External id") f.external_id = get_int(val).value_or(-1);
          break;
        case 'c':
          if (key == "correlation") f.correlation = get_int(val).value_or(-1);
          break;
        case 's':
          if (key == "stream") f.stream = get_int(val).value_or(-1);
          else if (key == "seq") f.seq = get_int(val);
          break;
        case 'd':
          if (key == "device") f.device = get_int(val).value_or(-1);
          else if (key == "dtype") get_str(val, f.dtype);
          break;
        case 'b':
          if (key == "bytes") f.bytes = get_int(val).value_or(-1);
          else if (key == "block") f.launch_block = get_dims(val);
          break;
        case 'g':
          if (key == "grid") f.launch_grid = get_dims(val);
          break;
        case 'n':
          if (key == "name") get_str(val, f.arg_name);
          break;
        case 'l':
          if (key == "labels") get_str(val, f.arg_labels);
          break;
        case 'C':
          if (key == "Collective name") get_str(val, f.coll_name);
          break;
        case 'I':
          if (key == "In msg nelems") {
            f.in_nelems = get_int(val);
          } else if ((key == "Input Dims" || key == "Input type") && (!f.has_name || starts_with(f.name, "nccl:"))) {
            if (key == "Input type") {
              od::array a;
              if (!val.get_array().get(a))
                for (auto x : a) {
                  std::string_view s;
                  if (!x.get_string().get(s)) f.input_type = s;
                  break;
                }
            } else {
              od::array outer;
              if (!val.get_array().get(outer))
                for (auto inner_result : outer) {
                  od::array inner;
                  if (inner_result.get_array().get(inner)) break;
                  std::int64_t numel = 1;
                  bool ok = true;
                  for (auto d : inner) {
                    std::int64_t x = 0;
                    if (d.get_int64().get(x) || x < 0 || (x > 0 && numel > INT64_MAX / x)) {
                      ok = false;
                      break;
                    }
                    numel *= x;
                  }
                  if (ok) f.input_numel = numel;
                  break;
                }
            }
          }
          break;
        case 'O':
          if (key == "Out msg nelems") f.out_nelems = get_int(val);
          break;
        case 'G':
          if (key == "Group size") f.group_size = get_int(val);
          break;
        case 'P':
          if (key == "Process Group Name") get_str(val, f.pg_name);
          else if (key == "Process Group Description") get_str(val, f.pg_desc);
          break;
        case 'S':
          if (key == "Seq") f.seq = get_int(val);
          break;
        default:
          break;
      }
    }
    return simdjson::SUCCESS;
  }

  simdjson::error_code parse_event(const Span& s, EventFields& f, std::size_t& error_index) {
    od::document doc;
    if (auto err = parser_.iterate(scanner_.data(s.begin), s.end - s.begin, scanner_.capacity_from(s.begin)).get(doc))
      return err;
    const simdjson::error_code err = parse_fields(doc, f);
    if (err) {
      const char* loc = nullptr;
      if (!doc.current_location().get(loc) && loc >= scanner_.data(s.begin) && loc < scanner_.data(s.end))
        error_index = s.begin + static_cast<std::size_t>(loc - scanner_.data(s.begin));
    }
    return err;
  }

  simdjson::error_code parse_fields(od::document& doc, EventFields& f) {
    od::object obj;
    if (auto err = doc.get_object().get(obj)) return err;
    for (auto field_result : obj) {
      od::field field;
      if (auto err = std::move(field_result).get(field)) return err;
      std::string_view key;
      if (auto err = field.unescaped_key().get(key)) return err;
      od::value v = field.value();
      if (key == "ph") {
        f.has_ph = !v.get_string().get(f.ph);
      } else if (key == "cat") {
        f.has_cat = !v.get_string().get(f.cat);
        if (f.has_cat && !scanner_.saw_plugin_category && is_nccl_plugin_category(f.cat))
          scanner_.saw_plugin_category = true;
        // Flows and other unkept categories: nothing further is needed (the rest of the event is skipped).
        if (f.has_cat && f.has_ph && f.ph == "X" && kind_of_category(f.cat) == EventKind::other) return simdjson::SUCCESS;
        if (f.has_cat && f.has_ph && (f.ph == "s" || f.ph == "f" || f.ph == "t")) return simdjson::SUCCESS;
      } else if (key == "name") {
        f.has_name = !v.get_string().get(f.name);
      } else if (key == "ts") {
        f.ts = get_time(v, f.bad_ts);
      } else if (key == "dur") {
        f.dur = get_time(v, f.bad_dur);
      } else if (key == "pid") {
        f.has_pid = get_id(v, f.pid_num, f.pid_str, f.pid_is_str);
      } else if (key == "tid") {
        f.has_tid = get_id(v, f.tid_num, f.tid_str, f.tid_is_str);
      } else if (key == "args") {
        if (auto err = read_args(v, f)) {
          if (err != simdjson::INCORRECT_TYPE) return err;
        }
      }
    }
    return simdjson::SUCCESS;
  }

  void process_event(const Span& s, const What& what) {
    EventFields f;
    std::size_t error_index = s.begin;
    if (const auto err = parse_event(s, f, error_index)) {
      if (err == simdjson::UTF8_ERROR) {  // one event's text, not the file's structure: skip it
        ++bad_utf8_;
        return;
      }
      scanner_.fail(error_index, fmt::format("{} is not valid JSON ({})", what.str(), simdjson::error_message(err)),
                    "pass a Chrome trace written by torch.profiler; if the file was edited or cut, regenerate it");
    }
    counted_cat_.add(f.has_cat ? f.cat : std::string_view());
    counted_ph_.add(f.has_ph ? f.ph : std::string_view());
    if (!f.has_ph) return;
    if (f.ph == "M") {
      take_metadata(f);
      return;
    }
    if (f.ph == "B" || f.ph == "E") {
      ++begin_end_;
      return;
    }
    if (f.ph != "X") return;
    const std::string_view name = f.has_name ? f.name : std::string_view();
    // A step annotation written without "cat" (hand-made or converted traces) is still a step; any other event
    // without "cat" is an operator or record_function range of the legacy autograd profiler's export (PyTorch
    // built without Kineto, e.g. Debian's 1.13: pid "CPU functions", no categories).
    const EventKind kind = f.has_cat ? kind_of_category(f.cat)
                           : starts_with(name, "ProfilerStep#") ? EventKind::user_annotation
                                                                : EventKind::cpu_op;
    if (kind == EventKind::other) return;
    if (kind == EventKind::cpu_op && f.ts && f.dur && *f.dur > 0 && !f.bad_dur && counts_as_cpu_work(name) &&
        *f.ts > -(std::int64_t{1} << 60) && *f.ts < (std::int64_t{1} << 62) && *f.dur < (std::int64_t{1} << 60)) {
      const std::uint32_t tid = f.has_tid ? intern_id(f.tid_is_str, f.tid_num.value_or(0), f.tid_str) : intern_id(true, 0, "");
      add_cpu_work(tid, *f.ts, *f.ts + *f.dur);
    }
    const bool has_coll = !f.coll_name.empty();
    bool keep = false;
    switch (kind) {
      case EventKind::kernel:
      case EventKind::memcpy:
      case EventKind::memset:
        keep = true;
        break;
      case EventKind::cuda_runtime:
      case EventKind::cuda_driver:
        keep = is_kept_api_call(name);
        break;
      case EventKind::cpu_op:
      case EventKind::user_annotation:
        keep = is_kept_cpu_name(name) || has_coll;
        break;
      case EventKind::other:
        break;
    }
    if (!keep) return;
    if (!f.ts) {
      if (f.bad_ts) ++bad_ts_;
      else ++no_ts_;
      return;
    }
    const bool gpu = is_gpu_activity(kind);
    if (f.bad_dur) {
      ++bad_dur_;
      gpu_dur_skipped_ += gpu;
      return;
    }
    if (f.dur && *f.dur < 0) {
      ++negative_dur_;
      gpu_dur_skipped_ += gpu;
      return;
    }
    if (!f.dur) ++no_dur_;
    TraceEvent e;
    e.kind = kind;
    e.ts_ns = *f.ts;
    e.dur_ns = f.dur.value_or(0);
    // Bounds that keep every sum and difference of the analysis inside int64: ts in [−2^60, 2^62] ns (unix ns
    // until the year 2116), dur ≤ 2^60 ns (36 years).
    if (e.ts_ns < -(std::int64_t{1} << 60) || e.ts_ns > (std::int64_t{1} << 62) || e.dur_ns > (std::int64_t{1} << 60)) {
      ++bad_ts_;
      if (e.dur_ns > (std::int64_t{1} << 60)) gpu_dur_skipped_ += gpu;  // a ts fault alone is no duration's
      return;
    }
    if (!f.dur) gpu_dur_missing_ += gpu;  // kept, as instantaneous
    e.correlation = f.correlation;
    e.external_id = f.external_id;
    e.bytes = f.bytes;
    e.device = clamp32(f.device);
    e.stream = clamp32(f.stream);
    e.name = intern(name);
    if (kind == EventKind::kernel && !f.launch_grid.empty() && !f.launch_block.empty())
      e.launch = intern("grid [" + f.launch_grid + "] block [" + f.launch_block + "]");
    e.pid = f.has_pid ? intern_id(f.pid_is_str, f.pid_num.value_or(0), f.pid_str) : intern_id(true, 0, "");
    e.tid = f.has_tid ? intern_id(f.tid_is_str, f.tid_num.value_or(0), f.tid_str) : intern_id(true, 0, "");
    if (has_coll || (f.input_numel && starts_with(name, "nccl:"))) {
      CollectiveArgs c;
      if (has_coll) {
        c.collective = std::string(f.coll_name);
        c.in_nelems = f.in_nelems;
        c.out_nelems = f.out_nelems;
        c.dtype = std::string(f.dtype);
      } else {
        c.collective = std::string(name.substr(5));
        c.in_nelems = f.input_numel;
        c.dtype = std::string(f.input_type);
        c.from_input_dims = true;
      }
      c.group_size = f.group_size;
      c.seq = f.seq;
      c.pg_name = std::string(f.pg_name);
      c.pg_desc = std::string(f.pg_desc);
      e.collective = static_cast<std::int32_t>(trace_.collectives.size());
      trace_.collectives.push_back(std::move(c));
    }
    trace_.events.push_back(e);
  }

  static std::int32_t clamp32(std::int64_t v) {
    return v >= 0 && v <= std::numeric_limits<std::int32_t>::max() ? static_cast<std::int32_t>(v) : -1;
  }

  void take_metadata(const EventFields& f) {
    if (!f.has_name) return;
    const std::uint32_t pid = f.has_pid ? intern_id(f.pid_is_str, f.pid_num.value_or(0), f.pid_str) : 0;
    if (f.name == "process_labels" && !f.arg_labels.empty()) {
      trace_.process_labels[pid] = std::string(f.arg_labels);
    } else if (f.name == "process_name" && !f.arg_name.empty()) {
      trace_.process_names[pid] = std::string(f.arg_name);
    } else if (f.name == "thread_name" && !f.arg_name.empty()) {
      const std::uint32_t tid = f.has_tid ? intern_id(f.tid_is_str, f.tid_num.value_or(0), f.tid_str) : 0;
      trace_.thread_names[{pid, tid}] = std::string(f.arg_name);
    }
  }

  std::uint32_t intern(std::string_view s) {
    if (auto it = name_index_.find(s); it != name_index_.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(trace_.names.size());
    name_bytes_ += s.size();
    if (name_bytes_ > options_.max_name_bytes)
      throw core::Error(fmt::format("'{}' holds more than {} bytes of distinct event names: the bound on one trace", name_,
                                    options_.max_name_bytes),
                        "this is no profiler trace of a training job (its events would share a few thousand names)");
    trace_.names.emplace_back(s);
    name_index_.emplace(std::string(s), id);
    return id;
  }

  /// Adds [begin, end) to the thread's CPU work, merging with the last interval when they touch (operators nest
  /// and mostly come in order; finish() sorts and merges the rest).
  void add_cpu_work(std::uint32_t tid, std::int64_t begin, std::int64_t end) {
    auto& v = trace_.cpu_work[tid];
    if (!v.empty() && begin >= v.back().first && begin <= v.back().second) v.back().second = std::max(v.back().second, end);
    else v.emplace_back(begin, end);
  }

  std::uint32_t intern_id(bool is_str, std::int64_t num, std::string_view str) {
    if (!is_str) {
      if (auto it = num_ids_.find(num); it != num_ids_.end()) return it->second;
      const auto id = static_cast<std::uint32_t>(trace_.ids.size());
      trace_.ids.push_back(TraceId{false, num, {}});
      num_ids_.emplace(num, id);
      return id;
    }
    if (auto it = str_ids_.find(str); it != str_ids_.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(trace_.ids.size());
    trace_.ids.push_back(TraceId{true, 0, std::string(str)});
    str_ids_.emplace(std::string(str), id);
    return id;
  }

  void finish() {
    for (auto& [tid, v] : trace_.cpu_work) {
      std::sort(v.begin(), v.end());
      std::vector<std::pair<std::int64_t, std::int64_t>> merged;
      for (const auto& iv : v)
        if (!merged.empty() && iv.first <= merged.back().second) merged.back().second = std::max(merged.back().second, iv.second);
        else merged.push_back(iv);
      v = std::move(merged);
    }
    // A duration over a day is no measurement: no profiler window lasts that long (its buffers fill in minutes).
    // One kernel of 11 days in a 40 ms trace made the GPU "100 % busy" and invented overlap findings. Shorter long
    // events stay, however they compare with the rest: an NCCL kernel that waited 30 minutes for a late rank is
    // the evidence of a hang, not a corrupt value.
    std::uint64_t gpu_kept = 0;
    {
      constexpr std::int64_t longest = std::int64_t{86400} * 1000000000;  // one day, ns
      std::erase_if(trace_.events, [&](const TraceEvent& e) {
        const bool gpu = is_gpu_activity(e.kind);
        if (e.dur_ns <= longest) {
          gpu_kept += gpu;
          return false;
        }
        ++too_long_dur_;
        gpu_dur_skipped_ += gpu;
        return true;
      });
    }
    trace_.json_bytes = scanner_.bytes_read();
    trace_.events_by_category = counted_cat_.to_map();
    trace_.events_by_phase = counted_ph_.to_map();
    auto note = [&](std::uint64_t n, const char* text) {
      if (n > 0) trace_.warnings.push_back(fmt::format("{} {}", n, text));
    };
    note(no_ts_, "kept-kind events without \"ts\" skipped");
    note(bad_ts_, "kept-kind events with an unreadable or out-of-range \"ts\" or \"dur\" skipped");
    note(bad_dur_, "kept-kind events with an unreadable \"dur\" skipped");
    note(negative_dur_, "kept-kind events with a negative \"dur\" skipped");
    note(no_dur_, "complete ('X') events without \"dur\" taken as instantaneous");
    note(too_long_dur_, "events with a \"dur\" longer than a day skipped");
    // A few damaged GPU events are told and passed over; beyond 5 % of them the GPU's busy time, overlap and
    // exposed communication would be made of what is missing, so the trace is refused instead.
    const std::uint64_t gpu_seen = gpu_kept + gpu_dur_skipped_;
    const std::uint64_t gpu_without_duration = gpu_dur_skipped_ + gpu_dur_missing_;
    if (gpu_without_duration > 0 && gpu_without_duration * 20 > gpu_seen)
      throw core::Error(fmt::format("'{}': {} of its {} GPU events (kernels, copies, memsets) have no usable "
                                    "\"dur\" (unreadable, negative, missing, or longer than a day): its GPU "
                                    "busy time, overlap and exposed communication would be invented",
                                    trace_.source, gpu_without_duration, gpu_seen),
                        "record the trace again (torch.profiler with ProfilerActivity.CUDA); a tool that rewrote it "
                        "may have dropped or rescaled \"dur\"");
    note(begin_end_, "begin/end ('B'/'E') events ignored: only complete ('X') events are analysed");
    note(non_objects_, "elements of the event array that are not objects ignored");
    note(trailing_commas_, "trailing comma before the closing ']' of the event array tolerated");
    note(bad_utf8_, "events with invalid UTF-8 text skipped");
  }

  Scanner scanner_;
  std::string name_;
  TraceReadOptions options_;
  std::uint64_t name_bytes_ = 0;  // of trace_.names
  Trace trace_;
  od::parser parser_;
  bool saw_events_ = false;
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> name_index_;
  std::unordered_map<std::int64_t, std::uint32_t> num_ids_;
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> str_ids_;
  SmallCounter counted_cat_, counted_ph_;
  std::uint64_t no_ts_ = 0, bad_ts_ = 0, bad_dur_ = 0, negative_dur_ = 0, no_dur_ = 0, begin_end_ = 0,
                non_objects_ = 0, trailing_commas_ = 0, bad_utf8_ = 0, too_long_dur_ = 0;
  /// GPU-kind events skipped for their "dur" (unreadable, negative, beyond 2^60 ns or a day), and those kept
  /// without one (instantaneous): together the GPU events without a usable duration.
  std::uint64_t gpu_dur_skipped_ = 0, gpu_dur_missing_ = 0;
};

Trace read_from(std::unique_ptr<ByteSource> src, std::string name, const TraceReadOptions& options,
                std::uint64_t file_bytes) {
  // Sniff the gzip magic (1f 8b) rather than trusting the file name.
  std::string head(2, '\0');
  std::size_t got = 0;
  while (got < 2) {
    const std::size_t n = src->read(head.data() + got, 2 - got);
    if (n == 0) break;
    got += n;
  }
  head.resize(got);
  const bool gz = got == 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b;
  std::unique_ptr<ByteSource> source;
  if (gz) {
    source = std::make_unique<GzipSource>(std::move(src), name, head);
  } else {
    // Put the sniffed bytes back in front.
    struct Prefixed final : ByteSource {
      Prefixed(std::unique_ptr<ByteSource> in, std::string p) : inner(std::move(in)), prefix(std::move(p)) {}
      std::size_t read(char* dst, std::size_t n) override {
        if (at < prefix.size()) {
          const std::size_t k = std::min(n, prefix.size() - at);
          std::memcpy(dst, prefix.data() + at, k);
          at += k;
          return k;
        }
        return inner->read(dst, n);
      }
      std::unique_ptr<ByteSource> inner;
      std::string prefix;
      std::size_t at = 0;
    };
    source = std::make_unique<Prefixed>(std::move(src), head);
  }
  TraceReader reader(*source, name, options, gz ? kInitialWindow : file_bytes);
  Trace t = reader.run();
  t.gzip = gz;
  t.file_bytes = file_bytes;
  return t;
}

}  // namespace

std::string_view to_string(EventKind k) noexcept {
  switch (k) {
    case EventKind::kernel: return "kernel";
    case EventKind::memcpy: return "memcpy";
    case EventKind::memset: return "memset";
    case EventKind::cuda_runtime: return "cuda_runtime";
    case EventKind::cuda_driver: return "cuda_driver";
    case EventKind::cpu_op: return "cpu_op";
    case EventKind::user_annotation: return "user_annotation";
    case EventKind::other: return "other";
  }
  return "other";
}

std::string TraceId::to_string() const { return is_string ? text : std::to_string(number); }

Trace read_trace_file(const std::string& path, const TraceReadOptions& options) {
  core::count_parse("kineto_trace", path);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw core::Error(fmt::format("cannot open trace '{}': {}", path, std::strerror(errno)),
                      "check the path; traces are the .json or .json.gz files torch.profiler writes");
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw core::Error(fmt::format("trace '{}' is not a regular file", path),
                      "pass the trace file itself, not a directory, device or pipe");
  }
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return read_from(std::make_unique<FileSource>(fd, path), path, options, static_cast<std::uint64_t>(st.st_size));
}

Trace read_trace_bytes(std::string_view bytes, std::string source_name, const TraceReadOptions& options) {
  return read_from(std::make_unique<MemorySource>(bytes), std::move(source_name), options, bytes.size());
}

}  // namespace scalescope::analyze
