// Binding parameter names to tensor views, and the storage behind them.
//
// A model never owns its parameters: it sees them through a ParameterBinding, a lookup
// from the names of runtime/model/parameter_table.h to views. Bindings can point anywhere, so
// models that share a parameter (an inherited trunk, a `share` declaration) bind the very
// same buffer, and the weight-dedup pool (one buffer per digest) plugs in by binding its
// views under each model's names.
//
// ParameterStore is that pool for a family built in memory: it keys storage by
// (introduced_by, name) — two models hold the same value exactly when the same model
// introduced it, or when a `share` declaration makes two keys one (SharedModules) — and
// lays out each newly seen group of parameters in one Arena. A pool made with
// `frozen_linear_dtype` bf16 (a bf16 training group's) holds the trunk linear weights a
// model runs frozen (is_trunk_linear_weight, not trainable) in bf16: 2 bytes a parameter,
// converted once when loaded and shared by every model that binds them, which run them
// through the bf16-weight products (runtime/backend.h); everything else stays fp32
// (trained parameters are fp32 masters, rounded to bf16 for each product).
// GradientSet holds one job's gradients for its trainable parameters, one Arena.
// Nothing here is thread-safe to mutate; reading views concurrently is fine.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "runtime/arena.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/shared_modules.h"
#include "runtime/tensor.h"
#include "spec/workspace.h"

namespace scion::runtime {

class Backend;

class ParameterBinding {
 public:
  // Points `name` at `view` (replacing an earlier binding of that name).
  void bind(const std::string& name, const Tensor& view) { views_[name] = view; }
  // Binds every view of `arena` under its own name.
  void bind_all(const Arena& arena);
  // nullptr when unbound.
  const Tensor* find(const std::string& name) const;
  const std::map<std::string, Tensor>& views() const { return views_; }

 private:
  std::map<std::string, Tensor> views_;
};

class ParameterStore {
 public:
  explicit ParameterStore(Backend& backend, SharedModules shares = {},
                          DType frozen_linear_dtype = DType::kF32)
      : backend_(&backend), shares_(std::move(shares)), frozen_linear_dtype_(frozen_linear_dtype) {}

  // Binds every parameter of `model`, allocating storage for the ones no earlier model of
  // this store introduced. Inherited values the model retrains (BitFit, full, unfreeze)
  // get their own storage holding a copy of the parent's value; new parameters start at
  // zero: call initialize_new_parameters or load them.
  // REQUIRES: the model's parent was added (and initialised) before it.
  // Errors: kOutOfMemory when the storage cannot be allocated.
  Result<ParameterBinding> add_model(const spec::Workspace& workspace, const spec::Model& model);

  // The same for stored values about to be loaded: `digests` maps the names the model
  // introduces or retrains to their content digests. A name whose digest an earlier
  // tensor of this store already has is bound to that buffer, with no storage of its own:
  // one buffer per digest, whichever models use it. The caller fills only the views that
  // are_new() says were allocated by this call.
  // REQUIRES: nothing writes the bound views (shared buffers serve several models).
  Result<ParameterBinding> add_stored_model(const spec::Workspace& workspace,
                                            const spec::Model& model,
                                            const std::map<std::string, std::string>& digests);
  // The dtype this pool holds `p` in (of `model`'s table): frozen_linear_dtype for a frozen
  // trunk linear weight, fp32 for everything else.
  DType dtype_of(const ParameterSpec& p) const;
  // Whether the buffer behind `view` was allocated by the last add_*_model call.
  bool is_new(const Tensor& view) const;

  // Bytes of parameter storage held (each buffer once).
  std::int64_t bytes_held() const;

 private:
  Result<ParameterBinding> add(const spec::Workspace& workspace, const spec::Model& model,
                               const std::map<std::string, std::string>* digests);

  Backend* backend_;
  SharedModules shares_;
  DType frozen_linear_dtype_;
  std::vector<std::unique_ptr<Arena>> arenas_;
  std::map<std::pair<std::string, std::string>, Tensor> by_author_and_name_;
  std::map<std::string, Tensor> by_digest_;
  const Arena* last_arena_ = nullptr;
};

// Gradients of one job: a zeroed view for every trainable parameter of its table, except
// those `shared` binds (a ShareGroup's, for the job's shared modules), which it binds to
// those views instead. zero() clears only its own.
class GradientSet {
 public:
  // `model` names the owner in an out-of-memory error. Errors: kOutOfMemory.
  static Result<GradientSet> create(const std::vector<ParameterSpec>& table, Backend& backend,
                                    const std::string& model, const ParameterBinding& shared = {});
  const ParameterBinding& binding() const { return binding_; }
  void zero() { arena_.zero(); }
  // Its own gradients (not the shared ones it binds), as one flat fp32 tensor of backend
  // memory: what data parallelism sums over the ranks.
  Tensor own_values() const { return arena_.flat_f32(); }

 private:
  GradientSet() = default;

  Arena arena_;
  ParameterBinding binding_;
};

// Whether `name` is a value `model` creates fresh (a base's trunk, a descendant's own
// adapters and head), as opposed to an inherited value it may retrain (BitFit, full).
bool is_new_parameter(const std::string& name, const spec::Model& model);

// Initialises, in place, every parameter of `model`'s table that is new to it and that it
// holds itself (not a module it shares with an earlier model of its unit, which that
// model initialises):
// normal(0, 0.02) for embeddings and linear weights, ones/zeros for layer norms, zero
// biases; a registered method's parameters by its AdaptationMethod::init_rule (kaiming
// uniform: uniform(±1/sqrt(in)), with a=√5 as PyTorch's Linear; the row norms of the
// weight a parameter adapts, which must be in `params` already: inherited values are
// copied in first; zeros where a fresh adapter must add nothing); prefix and prompt
// vectors normal(0, 0.02).
// Each tensor draws from its own stream, base::SeededRng(seed, kParameterInit,
// stable_hash(name)), so values do not depend on table order or on which other models
// exist; normals come from base::NormalSampler, uniforms from (2·uniform01() - 1)·bound,
// both computed in double and rounded to float: the same on every standard library. A
// large tensor is drawn in blocks on the OpenMP team, each from its own position of the
// stream (SeededRng::skipped): the values of drawing it in order, at any thread count.
// The values are drawn on the host and copied into `backend`'s memory behind `params`.
void initialize_new_parameters(Backend& backend, const spec::Workspace& workspace,
                               const spec::Model& model, const ParameterBinding& params,
                               std::uint64_t seed, const SharedModules& shares = {});

// Prompt tuning from text: row p of `prompt` (P, C) becomes the embedding of token
// ids[p % ids.size()], copied within `backend`'s memory. REQUIRES: !ids.empty(), every
// id < V, both fp32.
void init_prompt_from_tokens(Backend& backend, const Tensor& prompt, const Tensor& tok_emb,
                             const std::vector<std::int32_t>& ids);

}  // namespace scion::runtime
