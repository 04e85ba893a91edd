#pragma once
// A collective benchmark sweep — the rows of an nccl-tests table — whether measured live by
// `scalescope comm` or read from a saved nccl-tests output by `scalescope comm --from`.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/collectives.h"

namespace scalescope::analyze {

/// One direction of one row: out-of-place or in-place. Times in microseconds, bandwidths in GB/s (1e9 B/s)
/// as nccl-tests prints them. Absent values (a cut-off row, "N/A") are std::nullopt, never 0.
struct SweepTiming {
  std::optional<double> time_us;
  std::optional<double> algbw_gbps;
  std::optional<double> busbw_gbps;
  /// Wrong elements (nccl-tests "#wrong"), or, in old outputs, the max error ("error" column).
  std::optional<double> wrong;
  // Measured live only (not in nccl-tests outputs): per-iteration statistics, microseconds.
  std::optional<double> median_us, p95_us, cv, min_us, max_us;
  /// Largest difference between ranks' mean times (live only), microseconds.
  std::optional<double> rank_skew_us;
};

struct SweepRow {
  std::uint64_t size_bytes = 0;
  std::optional<std::uint64_t> count;
  std::optional<comm::DataType> type;
  std::optional<comm::RedOp> redop;
  std::optional<int> root;
  SweepTiming out_of_place;
  SweepTiming in_place;
  /// The type / reduction as printed when scalescope does not model it ("uint8", "f8e4m3", "mulsum"), so a
  /// parsed row keeps it; empty when `type` / `redop` holds the value or the column is absent.
  std::string type_name;
  std::string redop_name;
};

/// A whole sweep of one collective.
struct Sweep {
  comm::Collective collective = comm::Collective::all_reduce;
  std::optional<int> ranks;            ///< world size n (from the device list or "nranks"), if known
  std::string source;                  ///< "scalescope comm (nccl)", "nccl-tests 2.17.8", "rccl-tests", file name…
  std::optional<std::string> nccl_version;  ///< e.g. "2.28.3"
  std::vector<std::string> devices;    ///< one line per rank/device as reported
  std::vector<SweepRow> rows;          ///< in the order measured/printed
  std::optional<double> reported_avg_busbw_gbps;  ///< nccl-tests' "# Avg bus bandwidth" footer, if present
  /// Read from a saved text (the nccl-tests parser), not measured by `scalescope comm`: a summary then repeats only
  /// the footer lines the text had.
  bool from_text = false;
  std::vector<std::string> warnings;   ///< what could not be read, each naming the line
  /// Rows whose #wrong counts wrong elements (> 0) in either direction: the run failed its data check, so their
  /// bandwidths are not those of a correct collective. Counted by the nccl-tests parser (not for old outputs whose
  /// "error" column is a maximum error, nor for fractional values of a headerless table) and by `comm` live.
  std::size_t rows_with_wrong_elements = 0;
};

/// JSON objects with one key per field, named as the fields; absent values are null (never 0).
/// Enums as their nccl-tests names (comm::to_string). Time µs, bandwidth GB/s (1e9 B/s), sizes bytes.
void to_json(nlohmann::json& j, const SweepTiming& t);
void to_json(nlohmann::json& j, const SweepRow& r);
void to_json(nlohmann::json& j, const Sweep& s);
/// The inverse of to_json (for hand-overs between scalescope processes). Throws nlohmann::json::exception
/// on a malformed object and core::Error on an unknown collective, type or operation name.
void from_json(const nlohmann::json& j, SweepTiming& t);
void from_json(const nlohmann::json& j, SweepRow& r);
void from_json(const nlohmann::json& j, Sweep& s);

}  // namespace scalescope::analyze
