// A model's parameter gradients in the whole transformer against finite differences: the
// check the method and task tests share (runtime_adaptation, runtime_dora, runtime_ia3,
// runtime_task_heads).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/model/parameter_table.h"
#include "runtime/model/transformer.h"
#include "runtime_family.h"
#include "runtime_gradcheck.h"

namespace scion::test {

struct ModelGradientCheck {
  spec::Objective objective = spec::Objective::kClassification;
  bool training = false;         // the batch's training flag (dropout on)
  std::size_t max_checks = 400;  // entries per tensor; a strided sample beyond
  float h = 1e-2f;               // the central difference's step
  std::uint64_t family_seed = 99, data_seed = 5, dropout_seed = 1234;
};

using ParameterFilter = std::function<bool(const runtime::ParameterSpec&)>;

// One forward and backward pass of `model` over `segment` (of the model's weights), then
// the analytic gradient of every parameter `which` selects against central differences
// of the loss; `check`'s objective and seeds are the segment's business here. Returns how
// many parameters it checked.
inline int check_segment_gradients(Family& family, const std::string& model,
                                   const runtime::Segment& segment, const ParameterFilter& which,
                                   const ModelGradientCheck& check = {}) {
  runtime::FamilyBatch batch{{segment}, check.training};
  runtime::SegmentedTransformer net(family.backend());
  auto loss = [&]() -> double {
    auto out = net.forward(batch);
    REQUIRE(out.is_ok());
    return out->at(0).loss;
  };
  loss();
  family.grads(model).zero();
  REQUIRE(net.backward().is_ok());
  int checked = 0;
  for (const runtime::ParameterSpec& p :
       runtime::parameter_table(family.workspace(), family.model(model))) {
    if (!which(p)) continue;
    const runtime::Tensor& value = *family.params(model).find(p.name);
    const runtime::Tensor& grad = *family.grads(model).binding().find(p.name);
    std::vector<float> analytic(grad.f32(), grad.f32() + grad.numel());
    check_gradient(model + ":" + p.name, loss, value.f32(), static_cast<std::size_t>(value.numel()),
                   analytic.data(), {}, check.max_checks, check.h);
    ++checked;
  }
  return checked;
}

// The same over a 3 x 5 TinyBatch, after randomising `family`.
inline int check_parameter_gradients(Family& family, const std::string& model,
                                     const ParameterFilter& which,
                                     const ModelGradientCheck& check = {}) {
  constexpr int kB = 3, kT = 5;
  family.randomise(check.family_seed);
  const runtime::ModelWeights w = family.weights(model, check.objective);
  const TinyBatch data(kB, kT, w.arch.vocab_size, 2, check.data_seed);
  const bool lm = check.objective != spec::Objective::kClassification;
  return check_segment_gradients(family, model, data.segment(&w, kB, kT, check.dropout_seed, lm),
                                 which, check);
}

}  // namespace scion::test
