#pragma once
// The model table: what each named model costs to train — parameters (so gradient bytes per step) and forward FLOPs
// per sample or token (so compute per step) — read from data/models.json, which is compiled into the binary and
// validated the first time the table is used (every row needs a name, a parameter count and a source;
// a malformed row is a build defect, caught by tests/knowledge). FLOPs = 2 × multiply-adds. A training step costs
// about 3 × the forward FLOPs (backward is twice forward: Kaplan et al. 2020, arXiv:2001.08361, §2.1). Pure data
// once loaded: no file, GPU or network is touched.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace scalescope::knowledge {

struct ModelSpec {
  std::string name;                      ///< "ResNet-50", "BERT-base", "Llama-2-7B"
  std::vector<std::string> aliases;      ///< names users write ("resnet50", "bert-base-uncased", "meta-llama/Llama-2-7b-hf")
  std::string family;                    ///< cnn | transformer-encoder | transformer-decoder | encoder-decoder | diffusion-unet | moe
  double params = 0;                     ///< total parameters
  std::optional<double> active_params;   ///< per token, mixture-of-experts models only
  std::string input;                     ///< what one unit is: "image 224x224", "token"
  std::string unit;                      ///< "sample" or "token"
  double forward_gflops_per_unit = 0;    ///< forward FLOPs per sample or token, GFLOP (1e9); 0 when unsourced
  std::optional<double> context;         ///< tokens of context the per-token figure assumes
  std::string source;
};

/// Every model of data/models.json, in file order. Throws core::Error naming the row when the compiled data is
/// malformed (a build defect: tests load it).
std::span<const ModelSpec> model_table();

/// A name as users write it, normalised for comparison: lower-cased, every character that is not a letter or a
/// digit removed ("BERT-base-uncased" → "bertbaseuncased", "ResNet 50" → "resnet50").
std::string normalise_model_name(std::string_view name);

/// The model whose name or an alias normalises to `name`'s normal form; nullptr when none. A Hugging Face path
/// ("meta-llama/Llama-2-7b-hf") is tried whole and by its last part.
const ModelSpec* find_model(std::string_view name);

/// A model named in free text: the spec and where its name starts and ends in the text.
struct ModelMention {
  const ModelSpec* model = nullptr;
  std::size_t begin = 0, end = 0;
};

/// Every model named in `text`: runs of one to five words (split at blanks and punctuation other than '-', '_',
/// '.', '/') whose joined normal form is a model's name or alias, longest first, without overlaps ("BERT large"
/// is BERT-large, not BERT-base then "large"). Bare family words that name no size ("BERT", "GPT", "Llama") match
/// only where the table gives them as an alias.
std::vector<ModelMention> models_in_text(std::string_view text);

}  // namespace scalescope::knowledge
