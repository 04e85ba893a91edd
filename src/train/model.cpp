#include "train/model.h"

#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"

namespace scalescope::train {

void Model::log_replayed_loss() {
  throw std::logic_error(describe() + ": log_replayed_loss on a model that cannot be replayed");
}

void Model::gather_embedding_gradient(int) {
  throw std::logic_error(describe() + ": gather_embedding_gradient on a model without a tied embedding to gather");
}

EmbeddingGatherBuffers Model::embedding_gather_buffers() {
  throw std::logic_error(describe() + ": embedding_gather_buffers on a model without a tied embedding to gather");
}

void Model::apply_gathered_embedding_gradient() {
  throw std::logic_error(describe() + ": apply_gathered_embedding_gradient on a model without a tied embedding to gather");
}

void check_gradient_offsets(const std::vector<ParameterInfo>& layout, const std::vector<std::size_t>& offsets,
                            std::size_t total_elements) {
  if (offsets.size() != layout.size()) throw std::invalid_argument("allocate_gradients: expected one offset per parameter");
  for (std::size_t i = 0; i < offsets.size(); ++i)
    if (offsets[i] > total_elements || layout[i].numel > total_elements - offsets[i])
      throw std::invalid_argument("allocate_gradients: range of " + layout[i].name + " exceeds the buffer");
}

void check_token_batch(const TokenBatchView& batch, int row_tokens, const std::string& row_tokens_formula, int vocab,
                       const std::string& remedy) {
  if (batch.rows < 1) throw core::Error(fmt::format("batch has {} rows; at least 1 is needed", batch.rows), remedy);
  if (batch.row_tokens != row_tokens)
    throw core::Error(fmt::format("batch rows have {} tokens; the model expects {} = {}", batch.row_tokens,
                                  row_tokens_formula, row_tokens),
                      remedy);
  if (batch.tokens == nullptr) throw core::Error("batch has no token data (null pointer)", remedy);
  const std::size_t n = static_cast<std::size_t>(batch.rows) * static_cast<std::size_t>(batch.row_tokens);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t t = batch.tokens[i];
    if (t < 0 || t >= vocab)
      throw core::Error(fmt::format("batch token {} at row {}, position {} is outside the vocabulary [0, {})", t,
                                    i / static_cast<std::size_t>(batch.row_tokens),
                                    i % static_cast<std::size_t>(batch.row_tokens), vocab),
                        remedy);
  }
}

}  // namespace scalescope::train
