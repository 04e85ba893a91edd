#include "train/adamw.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace scalescope::train {

AdamWStep adamw_step(const AdamWConfig& c, std::int64_t t) {
  const double step = static_cast<double>(t);
  return {c.beta1,
          c.beta2,
          c.epsilon,
          1.0f - c.learning_rate * c.weight_decay,
          static_cast<float>(c.learning_rate / (1.0 - std::pow(static_cast<double>(c.beta1), step))),
          static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(c.beta2), step)))};
}

std::int64_t AdamWStepCounts::advance(ParameterRange part, const std::string& model) {
  if (part.first >= part.end || part.end > steps_.size())
    throw std::logic_error(fmt::format("{}: AdamW on parameters [{}, {}) of {}", model, part.first, part.end, steps_.size()));
  const std::int64_t t = steps_[part.first];
  for (std::size_t i = part.first; i < part.end; ++i)
    if (steps_[i] != t)
      throw std::logic_error(fmt::format("{}: AdamW on parameters [{}, {}) whose steps differ ({} has taken {}, {} has "
                                         "taken {})", model, part.first, part.end, part.first, t, i, steps_[i]));
  for (std::size_t i = part.first; i < part.end; ++i) ++steps_[i];
  return t + 1;
}

void adamw_update(float* p, const float* g, float* m, float* v, std::size_t n, const AdamWStep& s, bool decays) {
  const float keep = decays ? s.decay : 1.0f;
  for (std::size_t e = 0; e < n; ++e) {
    m[e] = s.beta1 * m[e] + (1.0f - s.beta1) * g[e];
    v[e] = s.beta2 * v[e] + (1.0f - s.beta2) * g[e] * g[e];
    p[e] = p[e] * keep - s.step_size * m[e] / (std::sqrt(v[e]) / s.bc2_sqrt + s.epsilon);
  }
}

}  // namespace scalescope::train
