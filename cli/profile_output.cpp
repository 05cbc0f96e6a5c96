#include "cli/profile_output.h"

#include <fmt/format.h>

#include <iostream>

namespace scion::cli {
namespace {

using runtime::OpClass;

constexpr runtime::OpClass kClasses[] = {
    OpClass::kProducts,  OpClass::kAttention,  OpClass::kNorms,       OpClass::kActivations,
    OpClass::kLoss,      OpClass::kEmbeddings, OpClass::kElementwise, OpClass::kOptimizer,
    OpClass::kTransfers, OpClass::kData,       OpClass::kStore,       OpClass::kSetup};

double timed_seconds(const runtime::OpProfile& profile) {
  double sum = 0;
  for (OpClass c : kClasses) sum += profile.entry(c).seconds;
  return sum;
}

}  // namespace

void print_profile(const runtime::OpProfile& profile) {
  const double total = profile.elapsed_seconds();
  const auto share = [&](double seconds) { return total > 0 ? 100 * seconds / total : 0.0; };
  std::cout << fmt::format("profile: {:.2f} s of training, by class of work\n", total);
  for (OpClass c : kClasses) {
    const runtime::OpProfile::Entry& e = profile.entry(c);
    if (e.calls == 0) continue;
    std::cout << fmt::format("  {:<12} {:>9.3f} s {:>5.1f}%  {:>9} calls\n",
                             runtime::op_class_name(c), e.seconds, share(e.seconds), e.calls);
  }
  const double other = std::max(0.0, total - timed_seconds(profile));
  std::cout << fmt::format("  {:<12} {:>9.3f} s {:>5.1f}%  (planning, bookkeeping: untimed)\n",
                           "other", other, share(other));
  // What the CPU libraries multiplied: the linear layers' products and attention's.
  double flops = 0;
  std::string libraries;
  for (int l = 0; l < runtime::cpu::kProductLibraries; ++l) {
    const auto library = static_cast<runtime::cpu::ProductLibrary>(l);
    const runtime::cpu::ProductTally t = profile.products_since_start(library);
    if (t.calls == 0) continue;
    flops += t.flops;
    libraries += fmt::format("{}{} {:.1f} GFLOP in {} calls", libraries.empty() ? "" : "; ",
                             runtime::cpu::product_library_name(library), t.flops / 1e9, t.calls);
  }
  if (flops > 0) {
    const double seconds =
        profile.entry(OpClass::kProducts).seconds + profile.entry(OpClass::kAttention).seconds;
    std::cout << fmt::format(
        "  CPU products (linear layers and attention): {}; {:.1f} GFLOP/s over the products' "
        "and attention's time\n",
        libraries, seconds > 0 ? flops / seconds / 1e9 : 0.0);
  }
  if (profile.waited_per_operation)
    std::cout << "  (a device backend: each operation was waited for, so its time is the "
                 "device's plus one launch and one wait; the profiled run is slower than "
                 "one without --profile)\n";
}

nlohmann::json profile_json(const runtime::OpProfile& profile) {
  nlohmann::json classes = nlohmann::json::object();
  for (OpClass c : kClasses) {
    const runtime::OpProfile::Entry& e = profile.entry(c);
    classes[runtime::op_class_name(c)] = {{"seconds", e.seconds}, {"calls", e.calls}};
  }
  nlohmann::json libraries = nlohmann::json::object();
  for (int l = 0; l < runtime::cpu::kProductLibraries; ++l) {
    const auto library = static_cast<runtime::cpu::ProductLibrary>(l);
    const runtime::cpu::ProductTally t = profile.products_since_start(library);
    libraries[runtime::cpu::product_library_name(library)] = {{"calls", t.calls},
                                                              {"flops", t.flops}};
  }
  const double total = profile.elapsed_seconds();
  return {{"seconds", total},
          {"classes", classes},
          {"other_seconds", std::max(0.0, total - timed_seconds(profile))},
          {"product_libraries", libraries},
          {"waited_per_operation", profile.waited_per_operation}};
}

}  // namespace scion::cli
