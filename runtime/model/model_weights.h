// ModelWeights: one model of a family resolved from names to pointers, ready to run.
//
// resolve_model walks the model's parameter table (runtime/model/parameter_table.h) and its
// ancestry, and gathers pointers from a ParameterBinding: the frozen trunk, then every
// ancestor's adapters (which the model runs frozen) and its own. Gradient pointers come
// from a second binding and are set exactly for the parameters the model trains
// (ParameterSpec::trainable); every other gradient pointer is null, which is how kernels
// know to skip a frozen weight. The pointers stay owned by the bindings' storage, which
// must outlive the ModelWeights.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/backend.h"
#include "runtime/model/adaptation_method.h"
#include "runtime/model/parameter_binding.h"
#include "spec/workspace.h"

namespace scion::runtime {

struct NormWeights {
  const float* weight = nullptr;  // (C)
  const float* bias = nullptr;    // (C); null for RMSNorm
  float* dweight = nullptr;
  float* dbias = nullptr;
};

struct LinearWeights {
  const float* weight = nullptr;  // (out, in); null when held in bf16
  const float* bias = nullptr;    // (out), may be null
  float* dweight = nullptr;
  float* dbias = nullptr;
  int in = 0, out = 0;
  // (out, in) bf16 bits: a frozen trunk weight a bf16 pool holds in 2 bytes
  // (runtime/model/parameter_binding.h); then `weight` is null and dweight too.
  const std::uint16_t* weight_bf16 = nullptr;

  // The weight's storage, whichever dtype holds it: what identifies the layer.
  const void* weight_storage() const {
    return weight ? static_cast<const void*>(weight) : weight_bf16;
  }
};

// The linear layers of a block, in spec::kLinearTargets order. ffn_gate exists only in a gated
// FFN (Llama's gate_proj; Architecture::gated_ffn()); elsewhere its weight is null.
enum Linear { kAttnQ, kAttnK, kAttnV, kAttnO, kFfnIn, kFfnOut, kFfnGate, kLinearCount };
inline constexpr const char* kLinearStems[kLinearCount] = {
    "attn_q", "attn_k", "attn_v", "attn_o", "ffn_in", "ffn_out", "ffn_gate"};

struct PrefixWeights {
  const float* keys = nullptr;    // (P, C)
  const float* values = nullptr;  // (P, C)
  float* dkeys = nullptr;
  float* dvalues = nullptr;
  int tokens = 0;
};

struct BlockWeights {
  NormWeights ln1, ln2;
  std::array<LinearWeights, kLinearCount> linear;
  // The registered methods' states on each linear (runtime/model/adaptation_method.h), the
  // model's and its ancestors', ancestors first (each model's in registration order); at
  // most one at kInput and one at kOutput.
  std::array<std::vector<std::shared_ptr<const LinearAdaptation>>, kLinearCount> adaptations;
  std::vector<PrefixWeights> prefixes;
  // The registered methods' states on the block's residual stream, per BlockSite: the
  // model's and its ancestors', ancestors first (each model's in registration order).
  std::array<std::vector<std::shared_ptr<const BlockAdaptation>>, kBlockSiteCount>
      block_adaptations;
};

struct PromptWeights {
  const float* embeddings = nullptr;  // (P, C)
  float* dembeddings = nullptr;
  int tokens = 0;
};

// The head a model predicts with (spec::HeadTask says what it predicts and its loss).
// Sequence tasks pool the final hidden states (through BERT's pooler, where the base has
// one) into (B, C) and map them to (B, K); token classification maps every position's
// hidden state to (B·S, K), without pooling or pooler, as AutoModelForTokenClassification.
struct ClassifierWeights {
  LinearWeights linear;  // (K, C)
  PoolMode pooling = PoolMode::kCls;
  spec::HeadTask task = spec::HeadTask::kClassification;
  // Training only: (K) backend memory, each class's weight in the classification loss
  // (spec::ClassWeightsSpec), with host_class_weights their host copy; null: unweighted.
  const float* class_weights = nullptr;
  std::vector<float> host_class_weights;

  bool per_token() const { return task == spec::HeadTask::kTokenClassification; }
};

struct ModelWeights {
  std::string name;
  spec::Architecture arch;
  spec::Objective objective = spec::Objective::kClassification;

  const float* tok_emb = nullptr;  // (V, C)
  const float* pos_emb = nullptr;  // (T, C); null with rotary positions
  float* dtok_emb = nullptr;
  float* dpos_emb = nullptr;
  // (types, C) BERT's token-type embeddings; every token is type 0, so row 0 is added to
  // every position (Architecture::type_vocab_size > 0; null otherwise).
  const float* type_emb = nullptr;
  float* dtype_emb = nullptr;
  NormWeights emb_ln;  // post-norm only
  NormWeights ln_f;    // pre-norm only
  std::vector<BlockWeights> blocks;
  const float* lm_head = nullptr;  // (V, C): tok_emb when tied
  float* dlm_head = nullptr;
  std::vector<PromptWeights> prompts;  // ancestors first
  // BERT's pooler: the classifier reads tanh(pooler(pooled)) (Architecture::pooler; the
  // weight is null otherwise).
  LinearWeights pooler;
  bool has_classifier = false;
  ClassifierWeights classifier;

  // True when any trunk parameter (embeddings, blocks, final norm, LM head) is trained;
  // such a model can only be batched alone.
  bool trunk_trainable = false;
  // The lowest block holding a trained parameter; -1 when embeddings or prompts train,
  // L when only the head does. The backward pass stops there.
  int lowest_trained_block = 0;

  int prompt_tokens() const;
  int prefix_tokens(int block) const;
};

// REQUIRES: model belongs to workspace. `grads` null resolves for inference (every
// gradient pointer null, nothing trains). `objective` picks the head: classification uses
// the nearest classifier up the ancestry (the model's own head, an ancestor's, or the
// base's `head.*`); masked/causal LM use the (tied or untied) LM head.
// Errors: kNotFound when a parameter of the table is unbound (or its gradient, for a
// trainable one), kInvalidArgument for a shape mismatch, a missing classifier, a linear
// with two adaptations at its input or output site, or an adaptation that refuses its
// linear (LinearAdaptation::refusal: a weight held in bf16 that it must read in fp32).
Result<ModelWeights> resolve_model(const spec::Workspace& workspace, const spec::Model& model,
                                   spec::Objective objective, const ParameterBinding& params,
                                   const ParameterBinding* grads);

// Folds `model`'s own adaptations into weights (each registered method's
// AdaptationMethod::fold): the trunk linears' weights and biases bound in `params` are
// written, folded, into the views `merged` binds under their names (which may be their own
// storage). After merging, running the parent's adaptations with the merged weights equals
// running `model` unfolded (up to float rounding). The values cross to the host and back
// (`backend` holds all of them); every linear weight must be held in fp32.
// Errors: kNotFound when a trunk linear lacks its merged destination.
Status merge_adaptations(Backend& backend, const spec::Workspace& workspace,
                         const spec::Model& model, const ParameterBinding& params,
                         const ParameterBinding& merged);

}  // namespace scion::runtime
