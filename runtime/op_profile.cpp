#include "runtime/op_profile.h"

namespace scion::runtime {

const char* op_class_name(OpClass op_class) {
  switch (op_class) {
    case OpClass::kProducts:
      return "products";
    case OpClass::kAttention:
      return "attention";
    case OpClass::kNorms:
      return "norms";
    case OpClass::kActivations:
      return "activations";
    case OpClass::kLoss:
      return "loss";
    case OpClass::kEmbeddings:
      return "embeddings";
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kOptimizer:
      return "optimizer";
    case OpClass::kTransfers:
      return "transfers";
    case OpClass::kData:
      return "data";
    case OpClass::kStore:
      return "store";
    case OpClass::kSetup:
      return "setup";
  }
  return "?";
}

OpProfile::OpProfile() : start_(std::chrono::steady_clock::now()) {
  for (int l = 0; l < cpu::kProductLibraries; ++l)
    tally_at_start_[l] = cpu::product_tally(static_cast<cpu::ProductLibrary>(l));
}

void OpProfile::begin(OpClass op_class) {
  open_.push_back({op_class, std::chrono::steady_clock::now(), 0.0});
}

void OpProfile::end() {
  const Open done = open_.back();
  open_.pop_back();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - done.start).count();
  Entry& e = entries_[static_cast<int>(done.op_class)];
  e.seconds += seconds - done.nested_seconds;
  ++e.calls;
  if (!open_.empty()) open_.back().nested_seconds += seconds;
}

double OpProfile::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

cpu::ProductTally OpProfile::products_since_start(cpu::ProductLibrary library) const {
  const cpu::ProductTally now = cpu::product_tally(library);
  const cpu::ProductTally& then = tally_at_start_[static_cast<int>(library)];
  return {now.calls - then.calls, now.flops - then.flops};
}

}  // namespace scion::runtime
