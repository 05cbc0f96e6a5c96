// TextGenerator: continues prompts with causal language models of a family, token by
// token, each sequence with its own key/value cache (runtime/model/kv_cache.h), and the
// sequences of every model on one trunk co-batched: different descendants (LoRA, prefix,
// prompt, bottleneck adapters) generate together, their rows through one frozen product
// per layer, as FamilyEvaluator batches classifiers.
//
// Each (model, prompt) pair is one sequence. Its prompt is framed as causal-LM training
// and scoring frame a text, [BOS] prompt (runtime/data/batcher.h), with the model's
// prompt-tuning tokens before it and its prefix in the cache. The first forward runs the
// whole framed prompt; every later one runs only the token picked last, attending to the
// cache. The next token comes from the logits of the last position
// (runtime/evaluation/token_sampler.h); a sampled sequence draws from its own stream
// (seed, kTokenSampling, the hash of its model's name + its prompt's index), so its text
// does not depend on what else generates beside it, or on the chunk size.
//
// A sequence ends at the first of: the tokenizer's EOS (SEP) token, kept as the last
// token (as transformers' generate() keeps it); a stop string appearing in the decoded
// text (the text is cut before it; the tokens stay as generated); max_new_tokens; and the
// model's max_length (its positions, virtual tokens included, are used up). Ended
// sequences leave the batch.
//
// Batching: the pairs are cut into chunks of at most chunk_size sequences, prompt by
// prompt and, within a prompt, model by model; the models of another trunk (another
// base, or a model retraining trunk weights) generate in batches of their own. Memory:
// each sequence's cache, layers × 2 × (prefix + positions) × width floats, and one
// step's activations. The generator borrows the models and tokenizers; they must outlive
// the call. Not thread-safe (one SegmentedTransformer inside).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/backend.h"
#include "runtime/evaluation/continuation_scorer.h"
#include "runtime/evaluation/token_sampler.h"
#include "runtime/model/transformer.h"

namespace scion::runtime {

struct GenerationOptions {
  int max_new_tokens = 32;        // REQUIRES: > 0
  SamplingOptions sampling;       // temperature 0: greedy
  std::vector<std::string> stop;  // stop strings; none may be empty
  int chunk_size = 16;            // most sequences generated at once; REQUIRES: > 0
  // What errors call each prompt ("--text 2", "prompts.jsonl:3"); empty: "prompt N".
  std::vector<std::string> prompt_names;
};

enum class FinishReason { kLength, kEos, kStop };
// "length" | "eos" | "stop"
const char* finish_reason_name(FinishReason reason);

struct Generation {
  std::vector<std::int32_t> prompt_tokens;  // the framed prompt: [BOS] prompt
  std::vector<std::int32_t> tokens;         // generated, an ending EOS included
  std::string text;                         // the tokens decoded, cut before a stop string
  FinishReason finish = FinishReason::kLength;
};

// Errors (kInvalidArgument): a bad option (check_generation).
Status check_generation(const GenerationOptions& options);

class TextGenerator {
 public:
  explicit TextGenerator(Backend& backend) : backend_(backend), net_(backend) {}

  // outputs[m][q]: models[m]'s continuation of prompts[q]. Errors (kInvalidArgument): a
  // bad option; a model that is not a causal LM (a decoder resolved with objective
  // kCausalLm); a prompt that leaves a model no position to generate in; kDiverged for a
  // logit that is not finite; and the transformer's and backend's errors.
  Result<std::vector<std::vector<Generation>>> generate(std::span<const ScoredModel> models,
                                                        std::span<const std::string> prompts,
                                                        const GenerationOptions& options);

 private:
  // Generates with models[members] (one trunk) for every prompt, chunk by chunk.
  Status generate_group(std::span<const ScoredModel> models,
                        const std::vector<std::size_t>& members,
                        std::span<const std::string> prompts, const GenerationOptions& options,
                        std::vector<std::vector<Generation>>& outputs);

  Backend& backend_;
  SegmentedTransformer net_;
};

}  // namespace scion::runtime
