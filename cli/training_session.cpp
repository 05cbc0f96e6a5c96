#include "cli/training_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <optional>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/exit_codes.h"
#include "cli/interrupts.h"
#include "cli/output.h"
#include "cli/profile_output.h"
#include "cli/progress_clock.h"
#include "runtime/comm/communicator.h"
#include "runtime/memory_info.h"
#include "workbench/context.h"
#include "workbench/training.h"

namespace scion::cli {
namespace {

// Prints what training says as it goes on stderr; -q leaves it out. With --json, the
// progress is JSON events, one object per line (docs/json.md, "Progress events").
class StderrObserver : public workbench::TrainingObserver {
 public:
  StderrObserver(int verbosity, bool json) : verbosity_(verbosity), json_(json) {}

  void note(const std::string& message) override { print_note(message); }
  void warning(const std::string& message) override { print_warning(message); }
  void group_started(const std::vector<std::string>& models) override {
    if (verbosity_ < 0) return;
    if (json_) return event({{"event", "group_started"}, {"models", models}});
    std::cerr << paint(models.size() > 1 ? "co-batched group" : "training", Color::kBold,
                       stderr_is_tty())
              << ": " << fmt::format("{}", fmt::join(models, ", ")) << "\n";
  }
  void resuming(const std::string& model, std::int64_t step) override {
    if (verbosity_ < 0) return;
    if (json_) return event({{"event", "resuming"}, {"model", model}, {"step", step}});
    std::cerr << "  resuming " << model << " at step " << step << "\n";
  }
  void step(const runtime::StepReport& r, std::size_t group_size) override;
  void group_step(const workbench::GroupProgress& progress) override;
  void prepared(const workbench::ModelOutcome& outcome) override;

 private:
  static void event(const nlohmann::json& e) { std::cerr << e.dump() << "\n" << std::flush; }
  // Ends a group line rewritten in place, so that what follows starts on a line of its own.
  void end_group_line() {
    if (group_line_width_ > 0) std::cerr << "\n";
    group_line_width_ = 0;
  }

  int verbosity_;
  bool json_;
  ProgressClock progress_clock_;
  std::size_t group_line_width_ = 0;  // a group's progress line is on the terminal
};

void StderrObserver::step(const runtime::StepReport& r, std::size_t group_size) {
  if (verbosity_ < 0) return;
  // In place on a terminal, whatever NO_COLOR says: "\r" is no colour, and works on a
  // dumb terminal too.
  const bool tty = stderr_is_terminal() && !json_;
  const runtime::TrainingJob& job = *r.job;
  const bool last = r.step >= job.total_steps() || job.stopped_early();
  // On a terminal, one line per job is rewritten in place for a single job; otherwise
  // log every validation and the last step, so logs stay short. A group's steps have a
  // line of their own (group_step).
  const bool in_place = tty && group_size == 1 && !last && !r.validation;
  if (!in_place && !r.validation && !last && verbosity_ <= 0) return;
  if (json_) {
    nlohmann::json e = {{"event", "step"}, {"model", job.model().name},
                        {"step", r.step},  {"total_steps", job.total_steps()},
                        {"loss", r.loss},  {"lr", r.lr}};
    if (r.validation)  // val_loss and the task's other metrics (docs/spec.md)
      for (const auto& [name, value] : r.validation->metrics) e[name] = value;
    return event(e);
  }
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
  if (in_place) {
    std::cerr << "\r" << line << "  " << progress_clock_.annotate(&job, r.step, job.total_steps())
              << std::flush;
    return;
  }
  end_group_line();
  std::cerr << (tty && group_size == 1 ? "\r" : "") << line << "\n";
}

// One line per step of a co-batched group: in place on a terminal; in a log, about 20
// lines over the group's steps and its last step.
void StderrObserver::group_step(const workbench::GroupProgress& p) {
  if (verbosity_ < 0) return;
  const std::optional<double>& eta = p.eta_seconds;
  if (json_) {
    nlohmann::json losses = nlohmann::json::object();
    for (std::size_t i = 0; i < p.models.size(); ++i)
      losses[p.models[i]] = p.losses[i] ? nlohmann::json(*p.losses[i]) : nlohmann::json();
    return event({{"event", "group_step"},
                  {"models", p.models},
                  {"step", p.step},
                  {"total_steps", p.total_steps},
                  {"running", p.running},
                  {"losses", losses},
                  {"mean_loss", p.mean_loss},
                  {"tokens_per_second", p.tokens_per_second},
                  {"elapsed_s", p.elapsed_seconds},
                  {"eta_s", eta ? nlohmann::json(*eta) : nlohmann::json()}});
  }
  const bool tty = stderr_is_terminal();
  const bool last = p.step >= p.total_steps;
  const std::int64_t every = std::max<std::int64_t>(1, p.total_steps / 20);
  if (!tty && !last && p.step % every != 0 && verbosity_ <= 0) return;
  std::string losses;
  if (p.models.size() <= 4) {
    for (std::size_t i = 0; i < p.models.size(); ++i)
      if (p.losses[i]) losses += fmt::format("{} {:.4f}  ", p.models[i], *p.losses[i]);
  }
  const std::string line = fmt::format(
      "  group of {} ({} running) step {:>5}/{:<5} {}mean loss {:.4f}  {:.0f} tokens/s  {} "
      "elapsed, ETA {}",
      p.models.size(), p.running, p.step, p.total_steps, losses, p.mean_loss, p.tokens_per_second,
      clock_time(p.elapsed_seconds), eta ? clock_time(*eta) : "-");
  if (!tty) {
    std::cerr << line << "\n";
    return;
  }
  std::cerr << "\r" << line
            << std::string(group_line_width_ > line.size() ? group_line_width_ - line.size() : 0,
                           ' ')
            << std::flush;
  group_line_width_ = line.size();
  if (last) end_group_line();
}

void StderrObserver::prepared(const workbench::ModelOutcome& o) {
  if (verbosity_ < 0) return;
  if (json_)
    return event(
        {{"event", workbench::outcome_words(o)},
         {"model", o.name},
         {"run", o.run_id},
         {"restored_run", o.restored_run ? nlohmann::json(*o.restored_run) : nlohmann::json()}});
  end_group_line();
  std::cerr << paint(workbench::outcome_words(o), Color::kBold, stderr_is_tty()) << ": " << o.name
            << " (run " << o.run_id
            << (o.restored_run
                    ? fmt::format(", the version run {} made; no training", *o.restored_run)
                    : std::string())
            << ")\n";
}

void print_summary_json(const workbench::TrainingOutcome& outcome,
                        const runtime::OpProfile* profile) {
  nlohmann::json models = nlohmann::json::array(), groups = nlohmann::json::array();
  for (const workbench::ModelOutcome& o : outcome.models)
    models.push_back(workbench::model_outcome_json(o));
  for (const workbench::GroupOutcome& g : outcome.groups)
    groups.push_back(workbench::group_outcome_json(g));
  nlohmann::json summary = {{"models", models}, {"groups", groups}};
  if (profile) summary["profile"] = profile_json(*profile);
  print_json(summary);
}

// "co-batched a, b in 1.2 s": what a group did.
std::string group_line(const workbench::GroupOutcome& g) {
  using workbench::OutcomeStatus;
  const bool trained = g.status == OutcomeStatus::kTrained;
  const std::string what = !trained ? std::string(workbench::outcome_status_name(g.status))
                           : g.models.size() > 1 ? "co-batched"
                                                 : "trained";
  return fmt::format("{} {} {} {} ({:.0f} tokens/s, {})\n", what, fmt::join(g.models, ", "),
                     trained ? "in" : "after", human_duration(g.seconds), g.tokens_per_second,
                     g.precision);
}

// "run 4, 30 steps, loss 0.6931 (resumed at step 10), val_loss ...": a model's figures.
std::string model_detail(const workbench::ModelOutcome& o) {
  using workbench::OutcomeStatus;
  std::string detail;
  if (o.run_id)
    detail = fmt::format("run {}, {} steps, loss {:.4f}", o.run_id, o.steps, o.final_loss);
  if (o.status == OutcomeStatus::kRestored)
    detail = fmt::format("run {}, 0 steps: the version run {} made", o.run_id,
                         o.restored_run ? std::to_string(*o.restored_run) : "?");
  if (o.status == OutcomeStatus::kImported) detail = fmt::format("run {}, 0 steps", o.run_id);
  if (o.resumed_from > 0) detail += fmt::format(" (resumed at step {})", o.resumed_from);
  if (o.val_loss) detail += fmt::format(", val_loss {:.4f}", *o.val_loss);
  if (o.val_accuracy) detail += fmt::format(", val_acc {:.3f}", *o.val_accuracy);
  if (o.kept) detail += "; " + workbench::kept_message(*o.kept);
  if (!o.keep_best_unmet.empty()) detail += "; " + o.keep_best_unmet;
  return detail;
}

Color status_color(workbench::OutcomeStatus status) {
  using workbench::OutcomeStatus;
  switch (status) {
    case OutcomeStatus::kTrained:
    case OutcomeStatus::kRestored:
    case OutcomeStatus::kImported:
      return Color::kGreen;
    case OutcomeStatus::kUpToDate:
      return Color::kDim;
    default:
      return Color::kRed;
  }
}

void print_summary(const workbench::TrainingOutcome& outcome) {
  const bool tty = stdout_is_tty();
  for (const workbench::GroupOutcome& g : outcome.groups) {
    std::cout << group_line(g);
    if (g.steps > 1)
      std::cout << fmt::format(
          "  steps: {}, steady {:.3f} s a step ({:.0f} tokens/s); first "
          "step done {:.1f} s after the process started\n",
          g.steps, g.steady_step_seconds, g.steady_tokens_per_second, g.first_step_end_seconds);
    if (g.peak_resident_bytes > 0)
      std::cout << fmt::format(
          "  memory: peak {} resident, {} above the {} before the group (plan: {})\n",
          runtime::memory_size(g.peak_resident_bytes),
          runtime::memory_size(g.peak_resident_bytes - g.resident_before_bytes),
          runtime::memory_size(g.resident_before_bytes), runtime::memory_size(g.planned_bytes));
  }
  for (const workbench::ModelOutcome& o : outcome.models) {
    const std::string detail = model_detail(o);
    std::cout << fmt::format("  {:<20} {}", o.name,
                             paint(workbench::outcome_words(o), status_color(o.status), tty))
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

int run_training(const GlobalOptions& global, const workbench::TrainRequest& request,
                 bool profile) {
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  workbench::ContextOptions options = context_options(global, workbench::StoreAccess::kNone);
  options.ranks = true;
  auto context = workbench::Context::open(options);
  if (!context) return fail(context.status());
  runtime::Communicator& comm = (*context)->comm();
  // Under mpirun (docs/distributed.md) the ranks' machines decide the parallelism, and so
  // how each rank opens the store.
  auto placement = workbench::prepare_training(**context, *ws, request);
  if (!placement) return fail(placement.status());
  if (placement->note && comm.rank() == 0) print_note(*placement->note);
  note_abandoned_runs(global, **context);
  // The other ranks print only their errors.
  const int verbosity = comm.rank() == 0 ? global.verbosity : std::min(global.verbosity, -1);
  const std::atomic<bool>& interrupted = catch_interrupts();
  StderrObserver observer(verbosity, global.json);
  workbench::TrainRequest placed = request;
  placed.parallel = placement->parallel;
  placed.quiet = verbosity < 0;
  std::optional<runtime::OpProfile> timed;
  if (profile) (*context)->set_profile(&timed.emplace());
  auto outcome = workbench::train(*ws, **context, placed, observer, &interrupted);
  if (!outcome) return fail(outcome.status());
  if (comm.rank() == 0) {
    if (global.json) {
      print_summary_json(*outcome, timed ? &*timed : nullptr);
    } else {
      print_summary(*outcome);
      if (timed) print_profile(*timed);
    }
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
