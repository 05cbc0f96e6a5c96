#include "cli/training_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/progress_clock.h"
#include "runtime/comm/communicator.h"
#include "runtime/memory_info.h"
#include "workbench/rank_hosts.h"
#include "workbench/rank_store.h"

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
  ProgressClock progress_clock_;
};

void StderrObserver::step(const runtime::StepReport& r, std::size_t group_size) {
  if (verbosity_ < 0) return;
  // In place on a terminal, whatever NO_COLOR says: "\r" is no colour, and works on a
  // dumb terminal too.
  const bool tty = stderr_is_terminal();
  const runtime::TrainingJob& job = *r.job;
  const bool last = r.step >= job.total_steps() || job.stopped_early();
  std::string line = fmt::format("  {:<20} step {:>5}/{:<5} loss {:.4f}  lr {:.2e}",
                                 job.model().name, r.step, job.total_steps(), r.loss, r.lr);
  if (r.validation) {
    line += fmt::format("  val_loss {:.4f}", r.validation->loss);
    if (auto accuracy = r.validation->metric("val_accuracy"))
      line += fmt::format("  val_acc {:.3f}", *accuracy);
    // The metric the recipe selects or stops by, when it is another one.
    const spec::TrainingSpec& recipe = job.recipe();
    for (const std::string& name : {recipe.keep_best, recipe.early_stopping.metric})
      if (!name.empty() && name != "val_loss" && name != "val_accuracy")
        if (auto value = r.validation->metric(name)) {
          line += fmt::format("  {} {:.3f}", name, *value);
          break;
        }
  }
  // On a terminal, one line per job is rewritten in place for a single job; otherwise
  // log every validation and the last step, so logs stay short.
  if (tty && group_size == 1 && !last && !r.validation) {
    std::cerr << "\r" << line << "  "
              << progress_clock_.annotate(&job, r.step, job.total_steps()) << std::flush;
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
    m["validation"] = o.validation;
    m["kept"] = o.kept ? workbench::kept_json(*o.kept) : nlohmann::json();
    models.push_back(m);
  }
  for (const workbench::GroupOutcome& g : outcome.groups)
    groups.push_back(workbench::group_outcome_json(g));
  print_json({{"models", models}, {"groups", groups}});
}

void print_summary(const workbench::TrainingOutcome& outcome) {
  const bool tty = stdout_is_tty();
  for (const workbench::GroupOutcome& g : outcome.groups) {
    std::cout << fmt::format("{} {} {} {} ({:.0f} tokens/s, {})\n",
                             g.status != "trained" ? g.status
                             : g.models.size() > 1 ? "co-batched"
                                                   : "trained",
                             fmt::join(g.models, ", "), g.status == "trained" ? "in" : "after",
                             human_duration(g.seconds), g.tokens_per_second, g.precision);
    if (g.peak_resident_bytes > 0)
      std::cout << fmt::format(
          "  memory: peak {} resident, {} above the {} before the group (plan: {})\n",
          runtime::memory_size(g.peak_resident_bytes),
          runtime::memory_size(g.peak_resident_bytes - g.resident_before_bytes),
          runtime::memory_size(g.resident_before_bytes), runtime::memory_size(g.planned_bytes));
  }
  for (const workbench::ModelOutcome& o : outcome.models) {
    std::string detail;
    if (o.run_id)
      detail = fmt::format("run {}, {} steps, loss {:.4f}", o.run_id, o.steps, o.final_loss);
    if (o.resumed_from > 0) detail += fmt::format(" (resumed at step {})", o.resumed_from);
    if (o.val_loss) detail += fmt::format(", val_loss {:.4f}", *o.val_loss);
    if (o.val_accuracy) detail += fmt::format(", val_acc {:.3f}", *o.val_accuracy);
    if (o.kept) detail += "; " + workbench::kept_message(*o.kept);
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
  auto world = runtime::world_communicator();
  if (!world) return fail(world.status());
  runtime::Communicator& comm = **world;
  // Ranks on several machines never all write the store (workbench/rank_hosts.h): auto
  // runs data parallel there, and task is refused, on every rank alike.
  workbench::TrainRequest placed = request;
  if (comm.size() > 1 && request.parallel != workbench::Parallelism::kData) {
    auto hosts = workbench::rank_hosts(comm);
    if (!hosts) return fail(hosts.status());
    auto parallel = workbench::parallelism_on_hosts(request.parallel, *hosts);
    if (!parallel) return fail(parallel.status());
    if (*parallel != request.parallel && comm.rank() == 0)
      print_note(
          "the ranks are on several machines: every wave runs data parallel (rank 0 alone "
          "writes the store; docs/distributed.md, \"Several machines\")");
    placed.parallel = *parallel;
  }
  // Under mpirun (docs/distributed.md) rank 0 opens the store first. A task-parallel
  // wave's groups are stored by the rank that trains them, through the store's own
  // locking (lineage/store.h), so the others open it for writing too unless the job is
  // data parallel only, which needs read access.
  auto store = workbench::open_store_on_ranks(
      comm, [&] { return open_store(global, /*create=*/true); },
      [&] {
        return placed.parallel == workbench::Parallelism::kData
                   ? open_store_read_only(global)
                   : open_store(global, /*create=*/false);
      });
  if (!store) return fail(store.status());
  // The other ranks print only their errors.
  const int verbosity = comm.rank() == 0 ? global.verbosity : std::min(global.verbosity, -1);
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  StderrObserver observer(verbosity);
  workbench::TrainRequest quiet_aware = placed;
  quiet_aware.quiet = verbosity < 0;
  quiet_aware.device = global.compute_device;
  auto outcome = workbench::train(*ws, **store, quiet_aware, observer, &g_interrupted, &comm);
  if (!outcome) return fail(outcome.status());
  if (comm.rank() == 0) {
    if (global.json)
      print_summary_json(*outcome);
    else
      print_summary(*outcome);
  }
  const Status status = workbench::training_status(*outcome);
  // Every divergence is an error of its own; the last one is the status's message.
  if (status.code() == StatusCode::kDiverged)
    for (std::size_t i = 0; i + 1 < outcome->diverged.size(); ++i)
      print_error(outcome->diverged[i]);
  if (status.code() == StatusCode::kCancelled) {
    print_warning("interrupted: finished models are stored; the rest are marked interrupted" +
                  resume_hint(*outcome));
    return kExitInterrupted;
  }
  return status.is_ok() ? kExitOk : fail(status);
}

}  // namespace scion::cli
