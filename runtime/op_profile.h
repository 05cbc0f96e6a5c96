// OpProfile: where a training run's time goes, by class of work, so that a gap between
// machines (a slow BLAS kernel, page faults, a store on a slow disk) shows without perf.
// `scion train|adapt|run --profile` prints one (docs/cli.md, "Profiling").
//
// Backend operations are timed by ProfilingBackend (profiling_backend.h), which wraps the
// backend a group trains on; the trainer times building batches (data), the workbench
// times writing the store and setting groups up. Each timing is wall time on the calling
// thread around one call. On the CPU a call returns when its work is done, so the times
// add up to the run; a device backend (CUDA) runs its operations asynchronously, so there
// they are the host's time to issue each call, and the work lands wherever the host
// next waits (a copy to the host): the profile says so rather than pretending.
//
// Products also report what the CPU backend's libraries did (cpu/product_tally.h): calls
// and FLOPs per library, so an achieved rate per run can be read off.
//
// Not thread-safe: one profile per run, added to from the training thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

#include "runtime/cpu/product_tally.h"

namespace scion::runtime {

enum class OpClass {
  kProducts,     // linear layers' matmuls (matmul_*), in either precision
  kAttention,    // attention forward and backward: its products and its softmax
  kNorms,        // layer norms and RMS norms
  kActivations,  // GELU, SwiGLU, tanh, dropout
  kLoss,         // the loss: softmax and cross-entropy over the outputs, pooling
  kEmbeddings,   // token, position and prompt embeddings, rotary positions
  kElementwise,  // residuals, copies, scaled adds, norms for clipping, shared key/values
  kOptimizer,    // AdamW and SGD updates
  kTransfers,    // allocation, zeroing, copies between host and backend
  kData,         // building each step's batches from the datasets (host)
  kStore,        // the lineage store: runs, metrics, commits, checkpoints
  kSetup,        // loading and initialising parameters, making jobs and optimizers
};
inline constexpr int kOpClasses = 12;
const char* op_class_name(OpClass op_class);

class OpProfile {
 public:
  struct Entry {
    double seconds = 0;
    std::int64_t calls = 0;
  };

  // Starts the run's clock and takes the product tallies' starting values.
  OpProfile();

  void add(OpClass op_class, double seconds) {
    Entry& e = entries_[static_cast<int>(op_class)];
    e.seconds += seconds;
    ++e.calls;
  }
  const Entry& entry(OpClass op_class) const { return entries_[static_cast<int>(op_class)]; }
  // Seconds since the profile was made.
  double elapsed_seconds() const;
  // Products and FLOPs of each CPU library since the profile was made.
  cpu::ProductTally products_since_start(cpu::ProductLibrary library) const;

  // Set when a timed backend ran asynchronously (see the header comment).
  bool asynchronous = false;

 private:
  std::chrono::steady_clock::time_point start_;
  std::array<Entry, kOpClasses> entries_{};
  std::array<cpu::ProductTally, cpu::kProductLibraries> tally_at_start_{};
};

// Adds the time from its construction to its destruction to `profile` (may be null).
class ScopedOpTimer {
 public:
  ScopedOpTimer(OpProfile* profile, OpClass op_class)
      : profile_(profile),
        op_class_(op_class),
        start_(profile ? std::chrono::steady_clock::now()
                       : std::chrono::steady_clock::time_point{}) {}
  ~ScopedOpTimer() {
    if (profile_)
      profile_->add(
          op_class_,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  ScopedOpTimer(const ScopedOpTimer&) = delete;
  ScopedOpTimer& operator=(const ScopedOpTimer&) = delete;

 private:
  OpProfile* profile_;
  OpClass op_class_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace scion::runtime
