// ProfilingBackend: a Backend that runs every operation on another backend and adds the
// wall time of each call to an OpProfile under its class (op_profile.h). It changes no
// value: the same calls reach the inner backend in the same order with the same pointers.
// Borrows the profile; owns the inner backend. Not thread-safe, as every Backend.
#pragma once

#include <memory>

#include "runtime/backend.h"
#include "runtime/op_profile.h"

namespace scion::runtime {

// `inner` wrapped so that its operations are timed into `profile`.
std::unique_ptr<Backend> make_profiling_backend(std::unique_ptr<Backend> inner, OpProfile& profile);

}  // namespace scion::runtime
