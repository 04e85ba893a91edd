#include "train/model.h"

#include <stdexcept>

namespace scalescope::train {

void check_gradient_offsets(const std::vector<ParameterInfo>& layout, const std::vector<std::size_t>& offsets,
                            std::size_t total_elements) {
  if (offsets.size() != layout.size()) throw std::invalid_argument("allocate_gradients: expected one offset per parameter");
  for (std::size_t i = 0; i < offsets.size(); ++i)
    if (offsets[i] > total_elements || layout[i].numel > total_elements - offsets[i])
      throw std::invalid_argument("allocate_gradients: range of " + layout[i].name + " exceeds the buffer");
}

}  // namespace scalescope::train
