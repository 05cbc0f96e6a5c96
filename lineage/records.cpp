#include "lineage/records.h"

namespace scion::lineage {

const char* run_kind_name(RunKind kind) {
  switch (kind) {
    case RunKind::kTrain:
      return "train";
    case RunKind::kAdapt:
      return "adapt";
    case RunKind::kTest:
      return "test";
    case RunKind::kImport:
      return "import";
    case RunKind::kRestore:
      return "restore";
  }
  return "?";
}

const char* run_status_name(RunStatus status) {
  switch (status) {
    case RunStatus::kRunning:
      return "running";
    case RunStatus::kFinished:
      return "finished";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kInterrupted:
      return "interrupted";
    case RunStatus::kDiverged:
      return "diverged";
    case RunStatus::kAbandoned:
      return "abandoned";
  }
  return "?";
}

std::optional<RunKind> parse_run_kind(std::string_view name) {
  for (RunKind k :
       {RunKind::kTrain, RunKind::kAdapt, RunKind::kTest, RunKind::kImport, RunKind::kRestore}) {
    if (name == run_kind_name(k)) return k;
  }
  return std::nullopt;
}

std::optional<RunStatus> parse_run_status(std::string_view name) {
  for (RunStatus s :
       {RunStatus::kRunning, RunStatus::kFinished, RunStatus::kFailed, RunStatus::kInterrupted,
        RunStatus::kDiverged, RunStatus::kAbandoned}) {
    if (name == run_status_name(s)) return s;
  }
  return std::nullopt;
}

}  // namespace scion::lineage
