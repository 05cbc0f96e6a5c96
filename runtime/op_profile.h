// OpProfile: where a training run's time goes, by class of work, so that a gap between
// machines (a slow BLAS kernel, page faults, a store on a slow disk) shows without perf.
// `scion train|adapt|run --profile` prints one (docs/cli.md, "Profiling").
//
// Backend operations are timed by ProfilingBackend (profiling_backend.h), which wraps the
// backend a group trains on; the trainer times building batches (data), the workbench
// times writing the store and setting groups up. Each timing is wall time on the calling
// thread around one call, exclusive: time a nested timing takes (the backend's copies
// while setting up, say) counts to the nested class only, so the classes never count a
// second twice and their sum is at most the run's wall time. On the CPU a call returns when its
// work is done, so the times add up to the run. A device backend (CUDA) runs its operations
// asynchronously, so ProfilingBackend waits for each one before stopping its clock: the times
// are the device's (with one launch and one wait each), and the profiled run is slower than
// one that is not profiled; the profile says so.
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
#include <vector>

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

  // A timing of `op_class` starts and ends; they nest (see above).
  void begin(OpClass op_class);
  void end();
  const Entry& entry(OpClass op_class) const { return entries_[static_cast<int>(op_class)]; }
  // Seconds since the profile was made.
  double elapsed_seconds() const;
  // Products and FLOPs of each CPU library since the profile was made.
  cpu::ProductTally products_since_start(cpu::ProductLibrary library) const;

  // Set when a timed backend was waited for after each operation (a device; see above).
  bool waited_per_operation = false;

 private:
  struct Open {
    OpClass op_class;
    std::chrono::steady_clock::time_point start;
    double nested_seconds;
  };
  std::chrono::steady_clock::time_point start_;
  std::vector<Open> open_;
  std::array<Entry, kOpClasses> entries_{};
  std::array<cpu::ProductTally, cpu::kProductLibraries> tally_at_start_{};
};

// Times its scope as `op_class` in `profile` (which may be null: then nothing).
class ScopedOpTimer {
 public:
  ScopedOpTimer(OpProfile* profile, OpClass op_class) : profile_(profile) {
    if (profile_) profile_->begin(op_class);
  }
  ~ScopedOpTimer() {
    if (profile_) profile_->end();
  }
  ScopedOpTimer(const ScopedOpTimer&) = delete;
  ScopedOpTimer& operator=(const ScopedOpTimer&) = delete;

 private:
  OpProfile* profile_;
};

}  // namespace scion::runtime
