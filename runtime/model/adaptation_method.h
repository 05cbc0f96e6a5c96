// AdaptationMethod: what an adaptation method (runtime/adapters/<method>/) gives the model
// code, so that the parameter table, the initialisation, the weights resolver, the batch
// plan, the forward and backward passes, the layer trie, the memory plan and the host merge
// loop over the registered methods instead of naming each one.
//
// A method is a stateless singleton: adaptation_methods() lists them, in one registration
// file (runtime/adapters/registry.cpp). Binding a model's parameters gives, per linear layer
// of a block, a LinearAdaptation: that model's bound state of the method on that linear
// (backend pointers into the parameter and gradient bindings, which must outlive it). The
// passes call it over a segment's rows at its site:
//
//   kInput:   on the linear's input rows, before the frozen product reads them
//   kOutput:  on the linear's output rows, after the frozen product (and LoRA's terms)
//
// A linear of a model carries at most one adaptation per site (the spec's rules across
// models keep it so; resolve_model refuses otherwise), so an input-site backward is handed
// the linear's own input. Methods and adaptations are immutable, so sharing them across
// threads is fine; their forward and backward write only the buffers they are handed and
// the gradients they hold.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/backend.h"
#include "runtime/model/parameter_table.h"
#include "spec/workspace.h"

namespace scion::runtime {

enum class LinearSite { kInput, kOutput };

// One method's state on one linear of one model's block. Rows are (n, width), width the
// linear's input width at kInput and its output width at kOutput; every pointer is backend
// memory. Parameter gradients accumulate (+=), activation gradients are assigned (=); an
// adaptation whose gradient pointers are null (an ancestor's, or inference) is frozen.
class LinearAdaptation {
 public:
  virtual ~LinearAdaptation() = default;

  virtual LinearSite site() const = 0;

  // Floats per row the forward keeps in training for the backward (`saved` below).
  virtual std::int64_t saved_floats_per_row(int width) const = 0;

  // Transforms `rows` in place. `saved`: null in inference, else saved_floats_per_row ·
  // n floats for the backward. At kInput the backward pass runs it again over the same rows
  // (the adapted input's buffer is shared by every linear), so it must depend on nothing
  // but its parameters and `rows`.
  virtual void forward(Backend& be, float* rows, float* saved, std::int64_t n, int width) const = 0;

  // Given dout, the gradient of the transformed rows: din = the gradient of the rows before
  // the transform (din may be dout), and the parameters' gradients. `input`: the rows before
  // the transform at kInput (the linear's input), null at kOutput; `saved`: what forward
  // kept (null when saved_floats_per_row is 0).
  virtual void backward(Backend& be, float* din, const float* dout, const float* input,
                        const float* saved, std::int64_t n, int width) const = 0;

  // Whether `other` applies exactly the same transform (the same parameter buffers): the
  // layer trie shares a block between two models only then.
  virtual bool same_as(const LinearAdaptation& other) const = 0;
};

// How a parameter is initialised when the model that introduces it is first trained
// (runtime/model/parameter_binding.h: initialize_new_parameters).
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

  // Floats per token a training pass holds for the method under these settings (its saved
  // rows and its share of the pass's scratch buffers); 0 when they do not use it. The
  // memory plan (workbench/training_groups.h) adds them.
  virtual std::int64_t training_floats_per_token(const spec::Adaptation& settings,
                                                 const spec::Architecture& arch) const = 0;

  // Folds `own` (one model's parameters of the method, by name, every one that model
  // introduced) into the trunk's weights and biases, on the host: --format huggingface
  // and merged PEFT bases (workbench/hf_export.cpp).
  virtual void fold(const HostTensors& own, HostTensors& trunk) const = 0;
};

// Every registered method, in registration order (runtime/adapters/registry.cpp).
const std::vector<const AdaptationMethod*>& adaptation_methods();

// The registered method whose parameter `name` is; null for the trunk's, heads' and the
// adapters not (yet) behind the interface.
const AdaptationMethod* method_of_parameter(const std::string& name);

}  // namespace scion::runtime
