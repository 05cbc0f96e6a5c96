#include "workbench/training_outcome.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>

namespace scion::workbench {
namespace {

constexpr std::array<std::pair<OutcomeStatus, std::string_view>, 9> kStatusNames = {{
    {OutcomeStatus::kUpToDate, "up to date"},
    {OutcomeStatus::kImported, "imported"},
    {OutcomeStatus::kRestored, "restored"},
    {OutcomeStatus::kRunning, "running"},
    {OutcomeStatus::kTrained, "trained"},
    {OutcomeStatus::kInterrupted, "interrupted"},
    {OutcomeStatus::kFailed, "failed"},
    {OutcomeStatus::kDiverged, "diverged"},
    {OutcomeStatus::kNotTrained, "not trained"},
}};

// A loss as JSON: a NaN (a diverged job's) is null in text JSON, and stays NaN in CBOR.
double loss_from_json(const nlohmann::json& value) {
  return value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>();
}

}  // namespace

std::string_view outcome_status_name(OutcomeStatus status) {
  for (const auto& [known, name] : kStatusNames)
    if (known == status) return name;
  return "unknown";
}

std::optional<OutcomeStatus> outcome_status_from_name(std::string_view words) {
  for (const auto& [status, name] : kStatusNames)
    if (words == name || (words.starts_with(name) && words.substr(name.size()).starts_with(":")))
      return status;
  return std::nullopt;
}

std::string outcome_words(const ModelOutcome& outcome) {
  std::string words(outcome_status_name(outcome.status));
  if (outcome.status == OutcomeStatus::kNotTrained && !outcome.blocked_by.empty())
    words += ": '" + outcome.blocked_by + "' diverged";
  return words;
}

nlohmann::json model_outcome_json(const ModelOutcome& o) {
  nlohmann::json m = {{"model", o.name}, {"status", outcome_words(o)}};
  if (!o.blocked_by.empty()) m["blocked_by"] = o.blocked_by;
  if (o.restored_run) m["restored_run"] = *o.restored_run;
  // Only a model that ran has a run's figures (a rank that records no runs has steps).
  if (o.run_id != 0 || o.steps != 0) {
    m["run"] = o.run_id;
    m["steps"] = o.steps;
    if (o.resumed_from > 0) m["resumed_from"] = o.resumed_from;
    m["final_loss"] = o.final_loss;
    m["seconds"] = o.seconds;
  }
  if (o.val_loss) m["val_loss"] = *o.val_loss;
  if (o.val_accuracy) m["val_accuracy"] = *o.val_accuracy;
  m["validation"] = o.validation;
  m["kept"] = o.kept ? kept_json(*o.kept) : nlohmann::json();
  if (!o.keep_best_unmet.empty()) m["keep_best_unmet"] = o.keep_best_unmet;
  return m;
}

Result<ModelOutcome> model_outcome_from_json(const nlohmann::json& j) {
  try {
    const std::string words = j.at("status").get<std::string>();
    const std::optional<OutcomeStatus> status = outcome_status_from_name(words);
    if (!status) return corruption("a training outcome of an unknown status '" + words + "'");
    ModelOutcome o(j.at("model").get<std::string>(), *status, j.value("run", std::int64_t{0}));
    o.blocked_by = j.value("blocked_by", std::string());
    if (j.contains("restored_run")) o.restored_run = j.at("restored_run").get<std::int64_t>();
    o.steps = j.value("steps", std::int64_t{0});
    o.resumed_from = j.value("resumed_from", std::int64_t{0});
    if (j.contains("final_loss")) o.final_loss = loss_from_json(j.at("final_loss"));
    o.seconds = j.value("seconds", 0.0);
    if (j.contains("val_loss")) o.val_loss = loss_from_json(j.at("val_loss"));
    if (j.contains("val_accuracy")) o.val_accuracy = j.at("val_accuracy").get<double>();
    o.validation = j.at("validation").get<std::map<std::string, double>>();
    if (const nlohmann::json& k = j.at("kept"); !k.is_null()) {
      auto kept = kept_from_json(k);
      if (!kept) return kept.status();
      o.kept = *kept;
    }
    o.keep_best_unmet = j.value("keep_best_unmet", std::string());
    return o;
  } catch (const nlohmann::json::exception& e) {
    return corruption(std::string("a training outcome of another form: ") + e.what());
  }
}

nlohmann::json group_outcome_json(const GroupOutcome& g) {
  return {{"models", g.models},
          {"status", outcome_status_name(g.status)},
          {"seconds", g.seconds},
          {"tokens_per_second", g.tokens_per_second},
          {"precision", g.precision},
          {"planned_bytes", g.planned_bytes},
          {"resident_before_bytes", g.resident_before_bytes},
          {"peak_resident_bytes", g.peak_resident_bytes},
          {"steps", g.steps},
          {"steady_step_seconds", g.steady_step_seconds},
          {"steady_tokens_per_second", g.steady_tokens_per_second},
          {"first_step_end_seconds", g.first_step_end_seconds}};
}

Result<GroupOutcome> group_outcome_from_json(const nlohmann::json& j) {
  try {
    const std::string words = j.at("status").get<std::string>();
    const std::optional<OutcomeStatus> status = outcome_status_from_name(words);
    if (!status) return corruption("a group outcome of an unknown status '" + words + "'");
    return GroupOutcome{j.at("models").get<std::vector<std::string>>(),
                        *status,
                        j.at("seconds").get<double>(),
                        j.at("tokens_per_second").get<double>(),
                        j.at("precision").get<std::string>(),
                        j.at("planned_bytes").get<std::int64_t>(),
                        j.at("resident_before_bytes").get<std::int64_t>(),
                        j.at("peak_resident_bytes").get<std::int64_t>(),
                        j.at("steps").get<std::int64_t>(),
                        j.at("steady_step_seconds").get<double>(),
                        j.at("steady_tokens_per_second").get<double>(),
                        j.at("first_step_end_seconds").get<double>()};
  } catch (const nlohmann::json::exception& e) {
    return corruption(std::string("a group outcome of another form: ") + e.what());
  }
}

nlohmann::json kept_json(const runtime::KeptValidation& k) {
  return {{"step", k.step},
          {"metric", k.metric},
          {"value", k.value},
          {"last_step", k.last_step},
          {"last_value", k.last_value ? nlohmann::json(*k.last_value) : nlohmann::json()}};
}

std::string kept_message(const runtime::KeptValidation& k) {
  if (k.step == k.last_step)
    return fmt::format("kept the last step, {}: its {} {:.4g} is the best validation", k.step,
                       k.metric, k.value);
  return fmt::format("kept step {} of {}: the best {} ({:.4g}; the last validation had {})", k.step,
                     k.last_step, k.metric, k.value,
                     k.last_value ? fmt::format("{:.4g}", *k.last_value) : std::string("none"));
}

std::string keep_best_unmet_message(const std::string& metric) {
  return fmt::format(
      "keep_best: {} had no value at any validation (val_auc needs both classes in the "
      "validation data, val_pearson and val_spearman targets that vary), so the last step's "
      "parameters were stored",
      metric);
}

Result<runtime::KeptValidation> kept_from_json(const nlohmann::json& k) {
  try {
    return runtime::KeptValidation{
        .step = k.at("step").get<std::int64_t>(),
        .metric = k.at("metric").get<std::string>(),
        .value = k.at("value").get<double>(),
        .last_step = k.at("last_step").get<std::int64_t>(),
        .last_value = k.at("last_value").is_null()
                          ? std::nullopt
                          : std::optional(k.at("last_value").get<double>())};
  } catch (const nlohmann::json::exception& e) {
    return corruption(std::string("keep_best's choice of another form: ") + e.what());
  }
}

Status training_status(const TrainingOutcome& outcome) {
  if (outcome.status.is_ok() && !outcome.diverged.empty())
    return Status(StatusCode::kDiverged, outcome.diverged.back());
  return outcome.status;
}

}  // namespace scion::workbench
