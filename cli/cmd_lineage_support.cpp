#include "cli/cmd_lineage_support.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>

#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/safetensors.h"
#include "lineage/spec_records.h"
#include "runtime/memory_info.h"

namespace scion::cli {

int fail(const Status& status) {
  print_error(status);
  return exit_code_for(status);
}

std::string human_bytes(std::int64_t bytes) { return runtime::memory_size(bytes); }

std::string human_duration(double seconds) {
  char text[32];
  if (seconds < 60) {
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  } else if (seconds < 3600) {
    const int s = static_cast<int>(seconds);
    std::snprintf(text, sizeof text, "%dm%02ds", s / 60, s % 60);
  } else {
    const int m = static_cast<int>(seconds / 60);
    std::snprintf(text, sizeof text, "%dh%02dm", m / 60, m % 60);
  }
  return text;
}

nlohmann::json run_to_json(const lineage::RunRecord& r) {
  nlohmann::json out = {{"run", r.id},
                        {"model", r.model},
                        {"kind", lineage::run_kind_name(r.kind)},
                        {"status", lineage::run_status_name(r.status)},
                        {"recipe_hash", r.recipe_hash},
                        {"started_at", r.started_at},
                        {"duration_s", r.duration_s},
                        {"seed", r.seed},
                        {"host", r.host},
                        {"scion_version", r.scion_version},
                        {"hyperparameters", r.hyperparameters},
                        {"steps", r.steps},
                        {"message", r.message}};
  out["finished_at"] = r.finished_at ? nlohmann::json(*r.finished_at) : nlohmann::json();
  out["dataset_digest"] = r.dataset_digest ? nlohmann::json(*r.dataset_digest) : nlohmann::json();
  out["final_loss"] = r.final_loss ? nlohmann::json(*r.final_loss) : nlohmann::json();
  out["pid"] = r.pid ? nlohmann::json(*r.pid) : nlohmann::json();
  out["cases"] = r.cases ? nlohmann::json(*r.cases) : nlohmann::json();
  return out;
}

nlohmann::json stored_model_to_json(const lineage::StoredModel& m) {
  nlohmann::json out = {{"model", m.name},
                        {"adaptation", m.adaptation},
                        {"architecture", m.architecture},
                        {"created_at", m.created_at},
                        {"updated_at", m.updated_at},
                        {"parameters", m.parameter_count},
                        {"own_parameters", m.own_count},
                        {"shared_with_parent", m.shared_with_parent}};
  out["parent"] = m.parent.empty() ? nlohmann::json() : nlohmann::json(m.parent);
  out["recipe_hash"] = m.recipe_hash ? nlohmann::json(*m.recipe_hash) : nlohmann::json();
  return out;
}

}  // namespace scion::cli
