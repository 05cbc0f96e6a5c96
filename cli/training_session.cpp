#include "cli/training_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <csignal>
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/exit_codes.h"
#include "cli/output.h"

namespace scion::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted.store(true); }

// Prints what training says as it goes on stderr; -q leaves it out.
class StderrObserver : public workbench::TrainingObserver {
 public:
  explicit StderrObserver(int verbosity) : verbosity_(verbosity) {}

  void note(const std::string& message) override { print_note(message); }
  void warning(const std::string& message) override { print_warning(message); }
  void group_started(const std::vector<std::string>& models) override {
    if (verbosity_ < 0) return;
    std::cerr << paint(models.size() > 1 ? "co-batched group" : "training", Color::kBold,
                       stderr_is_tty())
              << ": " << fmt::format("{}", fmt::join(models, ", ")) << "\n";
  }
  void resuming(const std::string& model, std::int64_t step) override {
    if (verbosity_ >= 0) std::cerr << "  resuming " << model << " at step " << step << "\n";
  }
  void step(const runtime::StepReport& r, std::size_t group_size) override;

 private:
  int verbosity_;
};

void StderrObserver::step(const runtime::StepReport& r, std::size_t group_size) {
  if (verbosity_ < 0) return;
  const bool tty = stderr_is_tty();
  const runtime::TrainingJob& job = *r.job;
  const bool last = r.step >= job.total_steps() || job.stopped_early();
  std::string line = fmt::format("  {:<20} step {:>5}/{:<5} loss {:.4f}  lr {:.2e}",
                                 job.model().name, r.step, job.total_steps(), r.loss, r.lr);
  if (r.validation) {
    line += fmt::format("  val_loss {:.4f}", r.validation->loss);
    if (r.validation->accuracy) line += fmt::format("  val_acc {:.3f}", *r.validation->accuracy);
  }
  // On a terminal, one line per job is rewritten in place for a single job; otherwise
  // log every validation and the last step, so logs stay short.
  if (tty && group_size == 1 && !last && !r.validation) {
    std::cerr << "\r" << line << std::flush;
  } else if (r.validation || last || verbosity_ > 0) {
    std::cerr << (tty && group_size == 1 ? "\r" : "") << line << "\n";
  }
}

void print_summary_json(const workbench::TrainingOutcome& outcome) {
  nlohmann::json models = nlohmann::json::array(), groups = nlohmann::json::array();
  for (const workbench::ModelOutcome& o : outcome.models) {
    nlohmann::json m = {{"model", o.name}, {"status", o.status}};
    if (o.run_id) {
      m["run"] = o.run_id;
      m["steps"] = o.steps;
      if (o.resumed_from > 0) m["resumed_from"] = o.resumed_from;
      m["final_loss"] = o.final_loss;
      m["seconds"] = o.seconds;
    }
    if (o.val_loss) m["val_loss"] = *o.val_loss;
    if (o.val_accuracy) m["val_accuracy"] = *o.val_accuracy;
    models.push_back(m);
  }
  for (const workbench::GroupOutcome& g : outcome.groups)
    groups.push_back({{"models", g.models},
                      {"status", g.status},
                      {"seconds", g.seconds},
                      {"tokens_per_second", g.tokens_per_second}});
  print_json({{"models", models}, {"groups", groups}});
}

void print_summary(const workbench::TrainingOutcome& outcome) {
  const bool tty = stdout_is_tty();
  for (const workbench::GroupOutcome& g : outcome.groups)
    std::cout << fmt::format("{} {} {} {} ({:.0f} tokens/s)\n",
                             g.status != "trained" ? g.status
                             : g.models.size() > 1 ? "co-batched"
                                                   : "trained",
                             fmt::join(g.models, ", "), g.status == "trained" ? "in" : "after",
                             human_duration(g.seconds), g.tokens_per_second);
  for (const workbench::ModelOutcome& o : outcome.models) {
    std::string detail;
    if (o.run_id)
      detail = fmt::format("run {}, {} steps, loss {:.4f}", o.run_id, o.steps, o.final_loss);
    if (o.resumed_from > 0) detail += fmt::format(" (resumed at step {})", o.resumed_from);
    if (o.val_loss) detail += fmt::format(", val_loss {:.4f}", *o.val_loss);
    if (o.val_accuracy) detail += fmt::format(", val_acc {:.3f}", *o.val_accuracy);
    const Color color = o.status == "trained"      ? Color::kGreen
                        : o.status == "up to date" ? Color::kDim
                                                   : Color::kRed;
    std::cout << fmt::format("  {:<20} {}", o.name, paint(o.status, color, tty))
              << (detail.empty() ? "" : "  " + detail) << "\n";
  }
}

// "; run the same command with --resume to continue from step N": how to continue what
// the interruption left checkpoints of (empty when it left none).
std::string resume_hint(const workbench::TrainingOutcome& outcome) {
  const auto& checkpointed = outcome.checkpointed;
  if (checkpointed.empty()) return "";
  std::vector<std::string> where;
  for (const auto& [model, step] : checkpointed)
    where.push_back(checkpointed.size() == 1 ? fmt::format("from step {}", step)
                                             : fmt::format("{} from step {}", model, step));
  return fmt::format("; run the same command with --resume to continue {}", fmt::join(where, ", "));
}

}  // namespace

int run_training(const GlobalOptions& global, const workbench::TrainRequest& request) {
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  auto store = open_store(global, /*create=*/true);
  if (!store) return fail(store.status());
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  StderrObserver observer(global.verbosity);
  workbench::TrainRequest quiet_aware = request;
  quiet_aware.quiet = global.verbosity < 0;
  auto outcome = workbench::train(*ws, **store, quiet_aware, observer, &g_interrupted);
  if (!outcome) return fail(outcome.status());
  if (global.json)
    print_summary_json(*outcome);
  else
    print_summary(*outcome);
  Status status = outcome->status;
  if (status.is_ok() && !outcome->diverged.empty()) {
    // Every divergence is an error of its own; the last one sets the exit status.
    for (std::size_t i = 0; i + 1 < outcome->diverged.size(); ++i)
      print_error(outcome->diverged[i]);
    status = Status(StatusCode::kDiverged, outcome->diverged.back());
  }
  if (status.code() == StatusCode::kCancelled) {
    print_warning("interrupted: finished models are stored; the rest are marked interrupted" +
                  resume_hint(*outcome));
    return kExitInterrupted;
  }
  return status.is_ok() ? kExitOk : fail(status);
}

}  // namespace scion::cli
