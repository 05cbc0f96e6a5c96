// Exit codes of the scion command (documented in docs/cli.md).
#pragma once

#include "base/status.h"

namespace scion::cli {

inline constexpr int kExitOk = 0;           // success
inline constexpr int kExitFailures = 1;     // the work ran and found failures (e.g. tests failed)
inline constexpr int kExitUsage = 2;        // usage or spec errors
inline constexpr int kExitRuntime = 3;      // store or runtime errors
inline constexpr int kExitInterrupted = 130;  // stopped by Ctrl-C; the store is left consistent

inline int exit_code_for(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kSpecError:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists: return kExitUsage;  // e.g. a stored version not rewritten
    case StatusCode::kCancelled: return kExitInterrupted;
    default: return kExitRuntime;
  }
}

}  // namespace scion::cli
