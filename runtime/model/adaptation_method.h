// AdaptationMethod: what an adaptation method (runtime/adapters/<method>/) gives the model
// code, so that the parameter table, the initialisation, the weights resolver, the batch
// plan, the forward and backward passes, the layer trie, the FLOP count, the memory plan and
// the host merges loop over the registered methods instead of naming each one.
//
// A method is a stateless singleton: adaptation_methods() lists them, in one registration
// file (runtime/adapters/registry.cpp). Binding a model's parameters gives, per linear layer
// of a block, a LinearAdaptation: that model's bound state of the method on that linear
// (backend pointers into the parameter and gradient bindings, which must outlive it). The
// passes call it over a segment's rows at its site:
//
//   kInput:   on the linear's input rows, before the frozen product reads them
//   kBeside:  a product beside the frozen one: reads the linear's input rows (after the
//             input-site adaptations) and adds into its output rows, before the output
//             sites; it may read the linear's fp32 weight (LinearRows::weight)
//   kOutput:  on the linear's output rows, after the frozen product and the kBeside terms
//
// A method that acts on a block's residual stream instead of a linear (the bottleneck
// adapter) binds, per block, a BlockAdaptation at a BlockSite:
//
//   kAfterAttention: reads the attention sublayer's output y (after its dropout) and adds
//                    into the residual stream that has just received y
//   kAfterFfn:       likewise after the feed-forward sublayer
//
// Its backward is handed the gradient of that residual stream and adds its share into y's
// gradient, before the sublayer's own backward reads it. Block adaptations of one site run
// in BlockWeights::block_adaptations order (ancestors first), forward and backward alike.
//
// A linear of a model carries at most one adaptation at kInput and one at kOutput (the
// spec's rules across models keep it so; resolve_model refuses otherwise), so an input-site
// backward is handed the linear's own input; kBeside adaptations may stack (a model's and
// its ancestors'), and the spec's rules keep them off a linear that has an input-site one.
// They run in BlockWeights::adaptations order (ancestors first); the output sites' backward
// in reverse, the kBeside sums' in that order. Methods and adaptations are immutable, so
// sharing them across threads is fine; their forward and backward write only the buffers
// they are handed and the gradients they hold.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/backend.h"
#include "runtime/model/parameter_table.h"
#include "spec/workspace.h"

namespace scion::runtime {

enum class LinearSite { kInput, kBeside, kOutput };

// The shape of one segment of a linear as the batch plan sizes an adaptation's buffers.
struct LinearShape {
  std::int64_t rows = 0;
  int in = 0, out = 0;    // the linear's widths
  bool training = false;  // the batch trains: dropout applies
  bool backward = false;  // a backward pass may follow (training, or targets on every row)
};

// One row range of a linear as a pass hands it to an adaptation: a unit's rows in the
// forward pass, a segment's in the backward pass. Every pointer is backend memory.
struct LinearRows {
  std::int64_t n = 0;             // rows
  int in = 0, out = 0;            // the linear's widths
  const float* weight = nullptr;  // (out, in) the linear's fp32 weight; null when held in bf16
  // Forward: the rows transformed in place, (n, in) at kInput and (n, out) at kOutput; at
  // kBeside the linear's output rows (n, out), which it adds into. Null in the backward.
  float* rows = nullptr;
  // The linear's input rows (n, in): at kBeside (after the input-site adaptations), and in
  // an input-site backward (the rows before the transform); null otherwise.
  const float* input = nullptr;
  // The buffers activation_sizes asked for, the segment's own (kept from forward to
  // backward), and those scratch_sizes asked for, shared by every adaptation of the batch
  // (valid during one call); an entry of size 0 is null.
  std::span<float*const> activations, scratch;
  // Dropout on what it reads (training only): the segment's seed, the adaptation's position
  // among its linear's adaptations (to tell an ancestor's stream from the model's own), and
  // where the rows' first element lies in the batch's streams (data parallelism).
  std::uint64_t dropout_seed = 0;
  int position = 0;
  std::uint64_t first_element = 0;
};

// One method's state on one linear of one model's block. Parameter gradients accumulate
// (+=); an adaptation whose gradient pointers are null (an ancestor's, or inference) is
// frozen.
class LinearAdaptation {
 public:
  virtual ~LinearAdaptation() = default;

  virtual LinearSite site() const = 0;

  // Whether the model it was bound for trains it (it holds gradient pointers).
  virtual bool trained() const = 0;

  // Why the adaptation cannot run on a linear whose weight is held in fp32 or not (one
  // that reads the weight needs it in fp32), naming it `linear` ("blk.0.attn_q"); empty
  // when it can. resolve_model refuses the model with it.
  virtual std::string refusal(const std::string& linear, bool weight_in_fp32) const = 0;

  // The buffers (floats each) the batch plan lays out for the adaptation over one segment:
  // activations (the segment's own, from forward to backward) and scratch (the widest ask
  // of each entry over every adaptation of the batch, shared). The passes hand them back in
  // LinearRows in this order; the batch signature holds them.
  virtual std::vector<std::int64_t> activation_sizes(const LinearShape& shape) const = 0;
  virtual std::vector<std::int64_t> scratch_sizes(const LinearShape& shape) const = 0;

  // Forward FLOPs over `rows` rows of a linear (in, out), for the plan's count.
  virtual double forward_flops(std::int64_t rows, int in, int out) const = 0;

  // At kInput and kOutput: transforms r.rows in place. At kInput the backward pass runs it
  // again over the same rows (the adapted input's buffer is shared by every linear), so it
  // must depend on nothing but its parameters and the rows. At kBeside: adds its term into
  // r.rows from r.input.
  virtual void forward(Backend& be, const LinearRows& r) const = 0;

  // Given dout, the gradient of what forward wrote, and the parameters' gradients:
  //   kInput:  din (n, in) = the gradient of the rows before the transform (may be dout);
  //   kOutput: din (n, out) likewise (may be dout);
  //   kBeside: dout (n, out) the output rows' gradient; din (n, in) += the input rows'
  //            share (the frozen product has already assigned or added per the pass's
  //            mode); din null: only the parameters' gradients are wanted.
  virtual void backward(Backend& be, const LinearRows& r, float* din, const float* dout) const = 0;

  // Whether `other` applies exactly the same transform (the same parameter buffers): the
  // layer trie shares a block between two models only then.
  virtual bool same_as(const LinearAdaptation& other) const = 0;
};

// Where a BlockAdaptation sits on a block's residual stream (the order of
// BlockWeights::block_adaptations).
enum class BlockSite { kAfterAttention, kAfterFfn };
inline constexpr int kBlockSiteCount = 2;

// The shape of one segment at a block site as the batch plan sizes an adaptation's buffers.
struct BlockShape {
  std::int64_t rows = 0;
  int width = 0;          // the residual stream's (C)
  bool backward = false;  // a backward pass may follow (training, or targets on every row)
};

// One row range at a block site as a pass hands it to a BlockAdaptation: a unit's rows in
// the forward pass, a segment's in the backward pass. Every pointer is backend memory.
struct BlockRows {
  std::int64_t n = 0;  // rows
  int width = 0;       // C
  // The sublayer's output rows y (n, C) that the adaptation reads.
  const float* output = nullptr;
  // Forward only (null in the backward): the residual stream's rows (n, C) it adds into, and
  // (n, C) rows the pass lends it for its own output before the addition.
  float* residual = nullptr;
  float* delta = nullptr;
  // As LinearRows': the segment's activations (activation_sizes) and the batch's shared
  // scratch (scratch_sizes, valid during one call); an entry of size 0 is null.
  std::span<float*const> activations, scratch;
};

// One method's state at one site of one model's block. Parameter gradients accumulate (+=);
// null gradient pointers (an ancestor's, or inference) mean frozen.
class BlockAdaptation {
 public:
  virtual ~BlockAdaptation() = default;

  virtual BlockSite site() const = 0;

  // Whether the model it was bound for trains it (it holds gradient pointers).
  virtual bool trained() const = 0;

  // As LinearAdaptation's: the segment's buffers and the shared scratch's asks, floats each.
  virtual std::vector<std::int64_t> activation_sizes(const BlockShape& shape) const = 0;
  virtual std::vector<std::int64_t> scratch_sizes(const BlockShape& shape) const = 0;

  // Forward FLOPs over `rows` rows of a residual stream of `width`, for the plan's count.
  virtual double forward_flops(std::int64_t rows, int width) const = 0;

  // r.residual += its term of r.output.
  virtual void forward(Backend& be, const BlockRows& r) const = 0;

  // Given dres (n, C), the gradient of the residual stream it added into: dy (n, C) += the
  // gradient of r.output through it, and its parameters' gradients.
  virtual void backward(Backend& be, const BlockRows& r, const float* dres, float* dy) const = 0;

  // Whether `other` applies exactly the same transform (the same parameter buffers): the
  // layer trie shares a block between two models only then.
  virtual bool same_as(const BlockAdaptation& other) const = 0;
};

// How a parameter is initialised when the model that introduces it is first trained
// (runtime/model/parameter_binding.h: initialize_new_parameters).
// kWeightRowNorms: the row norms of the linear weight the parameter's name starts with
// ("blk.N.<linear>."), read in whatever dtype it is held, summed in double.
enum class InitRule { kNormal, kOnes, kZeros, kKaimingUniform, kWeightRowNorms };

// A parameter as the weights resolver bound it: its value and, when the model trains it,
// its gradient (null: frozen).
struct BoundParameter {
  const float* value = nullptr;
  float* grad = nullptr;
};
// The resolver's lookup: nullopt when the model's table has no parameter of that name.
using ParameterLookup = std::function<std::optional<BoundParameter>(const std::string& name)>;

// Tensors on the host by scion name, as a merge into the trunk holds them.
using HostTensors = std::map<std::string, std::vector<float>>;

class AdaptationMethod {
 public:
  virtual ~AdaptationMethod() = default;

  // The method's key under a model's `adapt:`, which names its folder (adapters/<key>/) too.
  virtual std::string_view key() const = 0;

  // The method's spec side (spec/adaptation_method.h): its `adapt:` block, registered with
  // the loader by register_adaptation_methods (runtime/adapters/registry.h).
  virtual std::unique_ptr<const spec::MethodBlock> spec_block() const = 0;

  // Appends the parameters `model`'s own settings of the method put on block `layer` (none
  // when it does not use the method): trainable, introduced by `model`.
  virtual void add_parameters(const spec::Model& model, const spec::Architecture& arch, int layer,
                              std::vector<ParameterSpec>& table) const = 0;

  // When `name` is one of the method's parameters: the model that introduced it (its
  // names carry it); nullopt otherwise.
  virtual std::optional<std::string> parameter_model(const std::string& name) const = 0;

  // REQUIRES: parameter_model(name) has a value.
  virtual InitRule init_rule(const std::string& name) const = 0;

  // `model`'s own state of the method on `linear` (a kLinearStems name) of block `layer`,
  // from its bound parameters; null when it puts none there.
  virtual std::shared_ptr<const LinearAdaptation> bind(const spec::Model& model, int layer,
                                                       const std::string& linear,
                                                       const ParameterLookup& lookup) const = 0;

  // `model`'s own state of the method at `site` of block `layer` (on a base of `arch`), from
  // its bound parameters; null when it puts none there. The default: none (a method that
  // acts on linears only).
  virtual std::shared_ptr<const BlockAdaptation> bind_block(const spec::Model& model,
                                                            const spec::Architecture& arch,
                                                            int layer, BlockSite site,
                                                            const ParameterLookup& lookup) const;

  // Floats a training pass over `tokens` tokens holds for the method under these settings
  // (its saved rows and its share of the pass's scratch buffers); 0 when they do not use
  // it. The memory plan (workbench/training_groups.h) adds them.
  virtual std::int64_t training_floats(const spec::Adaptation& settings,
                                       const spec::Architecture& arch,
                                       std::int64_t tokens) const = 0;

  // Folds `own` (`owner`'s parameters of the method, by name, every one it introduced) into
  // the trunk's weights and biases, on the host: --format huggingface and merged PEFT bases
  // (workbench/hf_export.cpp), and runtime::merge_adaptations. Only for a method that
  // folds (folds_into_weights); the merges skip the others, whose adapter no merged model
  // can hold (the exports refuse a model with one first). The default aborts: a method
  // that folds overrides it.
  virtual void fold(const spec::Model& owner, const HostTensors& own, HostTensors& trunk) const;
};

// Whether `method`'s parameters are a change of the trunk's weights that fold() folds: its
// spec block names no unfoldable adapter (spec::MethodBlock::unfoldable_adapter).
bool folds_into_weights(const AdaptationMethod& method);

// Every registered method, in registration order (runtime/adapters/registry.cpp).
const std::vector<const AdaptationMethod*>& adaptation_methods();

// The registered method whose parameter `name` is; null for the trunk's, heads' and the
// adapters not (yet) behind the interface (prefix, prompt).
const AdaptationMethod* method_of_parameter(const std::string& name);

}  // namespace scion::runtime
