#pragma once
// The numbers of one sentence of prose, for the measurement grammar (readers/prose/measures.cpp): the GPU, process
// and machine counts it states and where, and its figures with their units ("40 seconds", "2.05 second / it",
// "245K FPS" is a table's; "busbw is 15.5" in GB/s), each with what it measures. The sentence is lower-cased by
// the caller; `raw` keeps its case where bytes and bits differ ("GB/s" against "Gb/s").

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "readers/prose/measures.h"

namespace scalescope::analyze::sentence {

std::string lower(std::string_view s);
/// Whether `w` occurs in `s`.
bool has(const std::string& s, std::string_view w);
/// Whether `w` occurs in `s` as a whole word.
bool word(const std::string& s, std::string_view w);
/// "one" → 1, "dual" → 2, "16" → 16; nullopt for other words.
std::optional<int> count_word(const std::string& w);

/// A GPU or process count stated in the sentence, and where.
struct Count {
  int n = 0;
  std::size_t pos = 0;
  bool processes = false;
};
/// The counts of `s` in order of position ("2 GPUs", "8 x A100", "2-GPU", "nproc_per_node=8", machines × the GPUs
/// per machine the text gave, kept in `state`).
std::vector<Count> counts(const std::string& s, MeasureState* state);
/// The count nearest to `pos`: the last one before it in the same clause, else the nearest (clause breaks weigh as
/// farther).
std::optional<Count> nearest(const std::vector<Count>& cs, const std::string& s, std::size_t pos);

struct Figure {
  double value = 0;
  std::string unit;       ///< "s", "ms", "GB/s", "Gb/s", "it/s", "s/it", "samples/s", "tokens/s", "%"
  std::size_t pos = 0, end = 0;
};
/// The figures of `s` (lower case) with their units, in order of position; `raw` is the same sentence as written.
std::vector<Figure> figures(const std::string& s, const std::string& raw);
/// What a time or rate figure measures, from the words around it ("epoch time", "busbw", "GPU utilisation"); "" when
/// nothing says.
std::string quantity_of(const std::string& s, const Figure& f);
/// A time figure in seconds.
double seconds(const Figure& f);

}  // namespace scalescope::analyze::sentence
