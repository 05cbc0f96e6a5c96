// Prefix tuning's reparametrisation (Li & Liang, 2021): while training, every chosen
// layer's prefix keys and values are the output of a small MLP over a (P, C) embedding,
//   [keys_0 | values_0 | keys_1 | ...] (P, 2·Lp·C) = W2 · tanh(W1 · E + b1) + b2,
// which trains more stably than the raw vectors. Only the MLP's output is a model
// parameter (blk.N.prefix.<model>.{keys,values} in runtime/model/parameter_table.h), so the
// store, inference and co-batching see plain prefixes; the MLP lives here and is
// discarded after training.
//
// Training loop with a reparametrised prefix (PrefixSpec::reparam_hidden > 0):
//   reparam.materialise(params);      // before each forward: write keys/values
//   ... forward, grads.zero(), backward ...
//   reparam.zero_grad(); reparam.backward(grads.binding());
//   optimizer over reparam.trainable_tensors() plus the model's other trainable tensors
//   (those for which reparam.produces(name) is false).
// Owns its parameters, gradients and activations (one Arena each). Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/arena.h"
#include "runtime/backend.h"
#include "runtime/model/optimizer.h"
#include "runtime/model/parameter_binding.h"
#include "spec/workspace.h"

namespace scion::runtime {

class PrefixReparametrisation {
 public:
  // REQUIRES: model.adaptation.prefix with reparam_hidden > 0. E and W1, W2 are drawn
  // from normal(0, 0.02) streams seeded by `seed`; biases start at zero.
  // Errors: kOutOfMemory.
  static Result<std::unique_ptr<PrefixReparametrisation>> create(Backend& backend,
                                                                 const spec::Workspace& workspace,
                                                                 const spec::Model& model,
                                                                 std::uint64_t seed);

  // Writes the MLP's output into the model's keys/values views in `params`.
  void materialise(const ParameterBinding& params);
  // Accumulates into the MLP's gradients from the keys/values gradients in `grads`.
  // REQUIRES: materialise() since the last parameter update.
  void backward(const ParameterBinding& grads);
  void zero_grad() { grads_.zero(); }
  std::vector<TrainableTensor> trainable_tensors() const;
  // Whether `name` is one of the keys/values this MLP produces.
  bool produces(const std::string& name) const;

 private:
  PrefixReparametrisation(Backend& backend, const spec::Workspace& workspace,
                          const spec::Model& model);
  Status allocate();
  void initialise(std::uint64_t seed);

  Backend& backend_;
  std::vector<std::string> outputs_;  // keys/values names, in output column order
  int P_, C_, hidden_;
  Arena params_, grads_, acts_;
};

}  // namespace scion::runtime
