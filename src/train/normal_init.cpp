#include "train/normal_init.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <thread>
#include <vector>

namespace scalescope::train {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double uniform_open01(std::uint64_t bits) {  // (0, 1], never 0 so log() is finite
  return (static_cast<double>(bits >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

}  // namespace

float normal_draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  std::uint64_t base = splitmix64(seed ^ splitmix64(stream + 0x51ED27ull)) + 2 * index;
  double u1 = uniform_open01(splitmix64(base));
  double u2 = uniform_open01(splitmix64(base + 1));
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

void fill_normal(float* out, std::size_t n, float stddev, std::uint64_t seed, std::uint64_t stream) {
  unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  if (n < (1u << 20)) threads = 1;
  std::vector<std::thread> pool;
  std::size_t chunk = (n + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    std::size_t begin = t * chunk, end = std::min(n, begin + chunk);
    if (begin >= end) break;
    auto work = [=] {
      for (std::size_t i = begin; i < end; ++i) out[i] = stddev * normal_draw(seed, stream, i);
    };
    if (threads == 1) work(); else pool.emplace_back(work);
  }
  for (auto& th : pool) th.join();
}

}  // namespace scalescope::train
