#pragma once
// What the data-parallel engine needs from a workload. Implementations, for the MLP LM and the GPT decoder:
//   cpu/MlpLmCpu, cpu/GptCpu     fp32 references on the host (OpenBLAS GEMMs; common part cpu/HostModel)
//   cuda/MlpLmCuda, cuda/GptCuda bf16 mixed precision on one GPU (cuBLASLt GEMMs, fp32 master weights and
//                                gradients)

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace scalescope::train {

/// One trainable tensor, as DDP sees it: a name and a size. Parameters are listed in forward order.
struct ParameterInfo {
  std::string name;       ///< e.g. "hidden.0.weight"
  std::size_t numel = 0;  ///< number of elements
};

/// A rank's batch on the host: `rows` rows of `row_tokens` token ids each, row-major. For a next-token
/// model a row is an input context followed by its target(s). The memory belongs to the caller and is only
/// read during Model::stage_batch.
struct TokenBatchView {
  int rows = 0;
  int row_tokens = 0;
  const std::int32_t* tokens = nullptr;
};

/// Parameters [first, end) by their index in Model::parameters() (forward order); first ≤ end (size() assumes
/// it; Model::optimizer_step_part refuses an empty or reversed range).
struct ParameterRange {
  std::size_t first = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - first; }
};

/// AdamW hyper-parameters (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019;
/// defaults as torch.optim.AdamW). Weight decay applies to weight matrices only, not biases or embeddings.
struct AdamWConfig {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.0f;
};

/// A model whose output head is tied to its token embedding (a GPT) can let the data-parallel engine exchange the
/// embedding's input-side gradient by all-gather instead of all-reducing the whole table at the end of backward
/// (DataParallelEngine, EmbeddingExchange). The table's gradient is the head's part, complete right after the
/// head's backward (the start of backward), plus the input embedding's part, a scatter-add of the gradient at the
/// embedding output over the batch's tokens, complete only at the end. The head's part is all-reduced as soon as
/// it is ready, overlapping backward; at the end every rank all-gathers the others' tokens and embedding-output
/// gradients and adds every rank's scatter-add itself. This is how Horovod exchanges sparse embedding gradients
/// (tf.IndexedSlices: allgather instead of allreduce). Same arithmetic up to summation order; every rank adds
/// the same gathered values in the same order, so the replicas stay identical.
struct EmbeddingGather {
  std::size_t token_table = 0;     ///< parameter index of the tied token table (wte), whose head part is all-reduced
  std::size_t position_table = 0;  ///< parameter index of the position table (wpe): its gradient comes from the
                                   ///< gathered rows only and is never all-reduced
  /// Bytes one rank sends per batch row: its tokens plus its embedding-output gradient.
  std::size_t gather_bytes_per_row = 0;
  /// Bytes of the token and position tables' fp32 gradients: what the all-reduce exchange reduces at the end.
  std::size_t table_gradient_bytes = 0;
};

/// One step's all-gather buffers, on the model's device, valid from stage_batch() to the next: the send sides
/// hold this rank's data once the work issued so far has run (tokens after staging, the embedding-output
/// gradient after backward); each received side holds world_size × the send size, rank-major.
struct EmbeddingGatherBuffers {
  const void* tokens = nullptr;
  void* gathered_tokens = nullptr;
  std::size_t token_bytes = 0;  ///< per rank
  const void* row_gradients = nullptr;
  void* gathered_row_gradients = nullptr;
  std::size_t row_gradient_bytes = 0;  ///< per rank
};

/// A trainable next-token model on one device. All work is issued in order on the model's compute
/// timeline (asynchronous on GPU); methods return once the work is issued, not completed.
///
/// Memory layout contract:
///  - master parameters are fp32, concatenated in forward order in one buffer (flat_parameters());
///  - gradients are fp32 in a flat buffer laid out by the engine (allocate_gradients), so each DDP bucket
///    is a contiguous range that can be all-reduced in place (like DDP's gradient_as_bucket_view=True).
class Model {
 public:
  virtual ~Model() = default;

  /// Human-readable description, e.g. "mlp-lm: ctx 32 × embed 64 → 4 × 1024 → 256".
  virtual std::string describe() const = 0;
  /// Trainable tensors in forward order.
  virtual const std::vector<ParameterInfo>& parameters() const = 0;
  /// Total number of trainable elements.
  std::size_t parameter_count() const;
  /// Training FLOPs per predicted token (forward + backward, multiply-add = 2 FLOPs); used for MFU.
  virtual double flops_per_token() const = 0;
  /// Tokens the model expects per batch row (e.g. context + 1 for the MLP LM).
  virtual int row_tokens() const = 0;
  /// Predicted tokens per batch row (1 for the MLP LM; seq for a decoder).
  virtual int predictions_per_row() const = 0;

  /// Allocates the flat fp32 gradient buffer of `total_elements` on the model's device; parameter i's
  /// gradient lives at `offsets[i]` (offsets.size() == parameters().size()). Returns its base pointer
  /// (device memory on GPU). Called once, before the first backward.
  virtual float* allocate_gradients(const std::vector<std::size_t>& offsets, std::size_t total_elements) = 0;

  /// Master parameters: fp32, forward order, parameter_count() elements, on the model's device.
  virtual float* flat_parameters() = 0;
  /// Must be called after flat_parameters() was overwritten (e.g. by a broadcast): refreshes any derived
  /// copies (bf16 weights on GPU).
  virtual void parameters_changed() = 0;

  /// Copies the batch to the device (GPU: host→device copy on the compute stream). Throws core::Error if
  /// the shape does not match row_tokens() or a token is outside the vocabulary.
  virtual void stage_batch(const TokenBatchView& batch) = 0;
  /// Forward pass over the staged batch: mean cross-entropy (nats per predicted token) is kept on the
  /// device and returned later by take_losses().
  virtual void forward() = 0;
  /// Backward pass. Overwrites (does not accumulate) every parameter's gradient (with the embedding gathered:
  /// the token table's head part only, and not the position table's; see gather_embedding_gradient). Calls
  /// `on_gradient_ready(i)` once per parameter i as soon as the work that writes its gradient has been
  /// issued, in backward order (last layer first), so the engine can start that bucket's all-reduce. One backward
  /// per forward: a model may overwrite what forward kept (GptCuda does, and refuses a second backward with
  /// std::logic_error).
  virtual void backward(const std::function<void(std::size_t parameter_index)>& on_gradient_ready) = 0;
  /// One AdamW step on the master parameters with the gradients in the flat buffer (already averaged). Throws
  /// std::logic_error before allocate_gradients() or when a part of the previous step was left out.
  void optimizer_step(const AdamWConfig& config) { optimizer_step_part(config, {0, parameters().size()}); }
  /// AdamW on parameters `part` only, so that a step can be applied in parts (DataParallelEngine's
  /// overlap_optimizer updates every parameter outside the last bucket while that bucket is all-reduced). Each
  /// parameter counts its own steps, as torch.optim.AdamW does (AdamWStepCounts), so the parts of one step give
  /// exactly what one whole step gives. Throws std::logic_error before allocate_gradients(), for an empty part or
  /// one beyond parameters(), or when the part's parameters have taken different numbers of steps (a part of a
  /// step applied twice, or one forgotten).
  virtual void optimizer_step_part(const AdamWConfig& config, ParameterRange part) = 0;
  /// Losses of the forward passes since the last call, in order. Blocks until they are computed.
  virtual std::vector<float> take_losses() = 0;

  /// Whether forward() and backward() may be captured once and replayed (train/step_replay.h): they only
  /// enqueue device work on the compute stream, at addresses fixed for one batch shape, and a forward() being
  /// captured writes its loss to a fixed place instead of logging it. Default: no (CPU and MLP models).
  virtual bool replayable() const { return false; }
  /// After a captured or replayed forward ran (or was enqueued): logs the loss it wrote, so take_losses() returns
  /// it as it returns an eager forward's. Only for replayable() models; the default throws std::logic_error.
  virtual void log_replayed_loss();

  /// The tied embedding this model can exchange by all-gather (see EmbeddingGather); std::nullopt (the default)
  /// when it has none.
  virtual std::optional<EmbeddingGather> embedding_gather() const { return std::nullopt; }
  /// From now on backward() exchanges the embedding gradient by all-gather among `world_size` ranks (≥ 2): it
  /// reports the token table ready right after the head's backward, never reports the position table, and
  /// leaves the input embedding's part to apply_gathered_embedding_gradient(). Call before allocate_gradients.
  /// The default throws std::logic_error (the model has no embedding_gather()).
  virtual void gather_embedding_gradient(int world_size);
  /// This step's buffers (after stage_batch). The default throws std::logic_error.
  virtual EmbeddingGatherBuffers embedding_gather_buffers();
  /// After both all-gathers completed (issue it after Communicator::join): adds (1 / world_size) × every rank's
  /// input-embedding scatter-add to the token table's gradient (by then the all-reduced head part) and
  /// overwrites the position table's with (1 / world_size) × every rank's sum, in a fixed order. The default
  /// throws std::logic_error.
  virtual void apply_gathered_embedding_gradient();

  /// Host copies for tests and checkpoints: fp32 in forward order.
  virtual std::vector<float> parameters_to_host() = 0;
  virtual std::vector<float> gradients_to_host() = 0;  ///< the flat gradient buffer, engine layout
};

/// The check every Model::allocate_gradients makes first: one offset per parameter of `layout`, and each
/// parameter's range [offsets[i], offsets[i] + numel) inside [0, total_elements). Throws
/// std::invalid_argument naming the first parameter whose range does not fit.
void check_gradient_offsets(const std::vector<ParameterInfo>& layout, const std::vector<std::size_t>& offsets,
                            std::size_t total_elements);

/// The batch check behind check_mlp_lm_batch and check_gpt_batch: rows ≥ 1, batch.row_tokens equal to
/// `row_tokens` (spelt `row_tokens_formula` in the message, e.g. "seq + 1"), tokens not null, every token in
/// [0, vocab). Throws core::Error naming the first problem, with `remedy` as its hint.
void check_token_batch(const TokenBatchView& batch, int row_tokens, const std::string& row_tokens_formula, int vocab,
                       const std::string& remedy);

inline std::size_t Model::parameter_count() const {
  std::size_t n = 0;
  for (const auto& p : parameters()) n += p.numel;
  return n;
}

}  // namespace scalescope::train
