// ContinuationScorer: log p(continuation | input) for many language models of a family and
// many (input, continuation) pairs, deduplicated and co-batched like
// FamilyEvaluator::classify.
//
// The score is the sum, over the continuation's tokens, of each token's log-probability
// (natural log), with the input and the continuation tokenised separately:
//   causal LM (decoder, objective kCausalLm): one row [BOS] input continuation[:-1], as
//     causal-LM training frames a text; the logit at position t predicts token t+1, so
//     the continuation's j-th token is read at position |input| + j (BOS is position 0).
//   masked LM (encoder, objective kMaskedLm): the pseudo-log-likelihood of Salazar et
//     al. (ACL 2020): the row [CLS] input continuation [SEP] once per continuation token,
//     with that token replaced by [MASK], read at the masked position. The input's tokens
//     are never masked: they are the condition.
// A row must fit the model's max_length minus its prompt tokens: the input is truncated
// from the LEFT (the tokens nearest the continuation stay, BOS/CLS stays first); the
// continuation is never truncated, and one that does not fit alone is an error.
//
// Batching: the pairs are cut into chunks (at most chunk_size pairs, and as many rows as
// keep the widest stage of the trie under max_rows token rows). For each chunk the models
// on one trunk storage form ONE FamilyBatch, one segment per model over the same rows,
// with share_identical on: identical layer applications are computed once and the
// models' different adapters are co-batched over the frozen products. Models of another
// trunk batch separately. Memory is bounded by the chunk: the trunk's activations for
// its rows, plus each segment's LM logits (rows × positions × vocabulary floats).
//
// The scorer borrows the models' weights and tokenizers; they must outlive the call. Not
// thread-safe (one SegmentedTransformer inside).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/backend.h"
#include "runtime/evaluation/family_evaluator.h"
#include "runtime/model/model_weights.h"
#include "runtime/model/transformer.h"
#include "runtime/text/tokenizer.h"

namespace scion::runtime {

// One language model to score with. Pointers are borrowed.
struct ScoredModel {
  // Resolved for inference (no gradients) with objective kCausalLm for a decoder or
  // kMaskedLm for an encoder (spec::Workspace::objective_of says which a model has).
  const ModelWeights* weights = nullptr;
  const text::Tokenizer* tokenizer = nullptr;
};

struct ContinuationQuery {
  std::string input;
  std::string continuation;  // scored after `input` exactly as written (mind the space)
};

// Most continuation tokens one row of `model` holds: max_length minus its prompt tokens,
// and minus [CLS] and [SEP] for a masked LM. REQUIRES: an LM objective.
std::size_t max_continuation_tokens(const ModelWeights& model);

// The tokens a continuation's score sums over: the continuation tokenised alone, as
// score() tokenises it. A per-token (mean) score divides by this count.
std::size_t continuation_tokens(const ScoredModel& model, std::string_view continuation);

class ContinuationScorer {
 public:
  explicit ContinuationScorer(Backend& backend) : backend_(backend), net_(backend) {}

  // scores[m][q]: log p(queries[q].continuation | queries[q].input) under models[m], in
  // nats (<= 0). Errors (kInvalidArgument): a model with a classification objective or one
  // that does not match its architecture, an encoder tokenizer without [MASK], an empty
  // continuation, a continuation too long for a model's max_length, a bad chunk size;
  // and the transformer's errors.
  Result<std::vector<std::vector<double>>> score(std::span<const ScoredModel> models,
                                                 std::span<const ContinuationQuery> queries,
                                                 const EvaluationOptions& options = {});

 private:
  // Scores queries with models[members] (one trunk), chunk by chunk, into scores.
  Status score_group(std::span<const ScoredModel> models, const std::vector<std::size_t>& members,
                     std::span<const ContinuationQuery> queries, const EvaluationOptions& options,
                     std::vector<std::vector<double>>& scores);

  Backend& backend_;
  SegmentedTransformer net_;
};

}  // namespace scion::runtime
