#pragma once
// Deterministic normal draws for parameter initialisation, shared by every model: a counter-based generator
// (splitmix64, Steele, Lea & Flood 2014, + Box–Muller), so element i's value depends only on (seed, stream, i)
// and large tensors initialise in parallel, identically on any machine and for any thread count.

#include <cstddef>
#include <cstdint>

namespace scalescope::train {

/// Standard normal draw number `index` of stream `stream` under `seed` (Box–Muller, cosine branch).
float normal_draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t index);

/// out[i] = stddev · normal_draw(seed, stream, i) for i in [0, n); up to 16 threads for n ≥ 2^20.
void fill_normal(float* out, std::size_t n, float stddev, std::uint64_t seed, std::uint64_t stream);

}  // namespace scalescope::train
