#include "workbench/job_checkpoints.h"

#include <list>
#include <string>
#include <vector>

#include "workbench/checkpoints.h"

namespace scion::workbench {

Result<bool> JobCheckpoints::save_if_due(const runtime::StepReport& r) {
  const runtime::ShareGroup* share = r.job->share_group();
  // A share unit checkpoints as a whole, by its group's steps, once per step.
  const bool due = share ? share->steps_done() % kCheckpointEvery == 0 && !share->finished() &&
                               unit_saved_at_[share] != share->steps_done()
                         : r.step % kCheckpointEvery == 0 && !r.job->finished();
  if (!options_.writer || !due) return false;
  runtime::ScopedOpTimer store_time(options_.profile, runtime::OpClass::kStore);
  SCION_RETURN_IF_ERROR(save_unit(*r.job));
  if (share) unit_saved_at_[share] = share->steps_done();
  return true;
}

Status JobCheckpoints::save(const runtime::TrainingJob& job) {
  CheckpointWrite checkpoint{
      .model = job.model().name, .recipe_hash = job.model().recipe_hash, .steps = job.steps_done()};
  std::list<std::vector<std::byte>> host_values;  // the bytes, where copied off the backend
  auto add = [&](const std::string& prefix,
                 const std::vector<std::pair<std::string, runtime::Tensor>>& list) {
    for (const auto& [name, t] : list)
      checkpoint.tensors.push_back(
          {prefix + name, lineage::DType::kF32, t.shape,
           runtime::host_bytes(job.backend(), t, host_values.emplace_back())});
  };
  add("", job.checkpoint_tensors());
  if (const runtime::ShareGroup* share = job.share_group()) {
    add("share.", share->checkpoint_tensors());
    checkpoint.share_steps = share->steps_done();
  }
  return write_checkpoint(store_.env(), store_.dir(), checkpoint);
}

// Every member of a share unit is checkpointed at the same moment (finished members
// included: they are stored only when the unit is), so that the unit resumes exactly.
Status JobCheckpoints::save_unit(const runtime::TrainingJob& job) {
  const runtime::ShareGroup* share = job.share_group();
  if (!share) return save(job);
  for (const runtime::TrainingJob* member : share->members()) SCION_RETURN_IF_ERROR(save(*member));
  return Status::ok();
}

void JobCheckpoints::remove(const spec::Model& model) {
  if (options_.writer) remove_checkpoint(store_.env(), store_.dir(), model.recipe_hash);
}

Result<std::optional<Checkpoint>> JobCheckpoints::read_current(const spec::Model& model) {
  const std::filesystem::path path = checkpoint_path(store_.dir(), model.recipe_hash);
  if (!has_checkpoint(store_.env(), store_.dir(), model.recipe_hash))
    return std::optional<Checkpoint>();
  auto checkpoint = read_checkpoint(store_.env(), path);
  if (!checkpoint) return checkpoint.status();
  if (checkpoint->recipe_hash != model.recipe_hash) {
    observer_.note("the checkpoint " + path.string() + " is of another recipe of '" + model.name +
                   "'; its recipe changed since, so it trains from the start");
    return std::optional<Checkpoint>();
  }
  return std::optional<Checkpoint>(std::move(*checkpoint));
}

// --resume found no checkpoint of the current recipe: says so when there is one of an
// earlier recipe, which cannot continue (its parameters and schedule belong to another).
void JobCheckpoints::note_outdated_checkpoints(const spec::Model& model) const {
  auto checkpoints = list_checkpoints(store_, &ws_);
  if (!checkpoints) return;  // only a note: training starts over either way
  for (const CheckpointFile& c : *checkpoints)
    if (c.model == model.name && c.recipe_hash != model.recipe_hash)
      observer_.note("'" + model.name + "' starts over instead of resuming: " + c.stale +
                     ", so its checkpoint " + c.path.string() +
                     " cannot continue (`scion gc` removes it)");
}

// Notes a checkpoint that --resume would have continued. Returns whether to resume.
bool JobCheckpoints::resume_wanted(const spec::Model& model) const {
  if (!has_checkpoint(store_.env(), store_.dir(), model.recipe_hash)) {
    if (options_.resume) note_outdated_checkpoints(model);
    return false;
  }
  if (!options_.resume && !options_.quiet)
    observer_.note("'" + model.name +
                   "' has a checkpoint of an interrupted run; starting over (use "
                   "--resume to continue it)");
  return options_.resume;
}

Status JobCheckpoints::resume(runtime::TrainingJob& job) {
  if (!resume_wanted(job.model())) return Status::ok();
  auto checkpoint = read_current(job.model());
  if (!checkpoint) return checkpoint.status();
  if (!checkpoint->has_value()) return Status::ok();
  SCION_RETURN_IF_ERROR(job.restore((*checkpoint)->steps, (*checkpoint)->values));
  observer_.resuming(job.model().name, (*checkpoint)->steps);
  return Status::ok();
}

Status JobCheckpoints::resume_unit(runtime::ShareGroup& share) {
  bool wanted = false;
  for (const runtime::TrainingJob* member : share.members())
    wanted = resume_wanted(member->model()) || wanted;
  if (!wanted) return Status::ok();
  std::vector<Checkpoint> checkpoints;
  for (const runtime::TrainingJob* member : share.members()) {
    auto checkpoint = read_current(member->model());
    if (!checkpoint) return checkpoint.status();
    const bool matches =
        checkpoint->has_value() && (*checkpoint)->share_steps &&
        (checkpoints.empty() || checkpoints.front().share_steps == (*checkpoint)->share_steps);
    if (!matches) {
      observer_.note("the checkpoints of '" + share.unit().front()->name +
                     "' and the models it shares "
                     "modules with are not from one moment; starting them over");
      return Status::ok();
    }
    checkpoints.push_back(std::move(**checkpoint));
  }
  for (std::size_t i = 0; i < checkpoints.size(); ++i) {
    runtime::TrainingJob& member = *share.members()[i];
    SCION_RETURN_IF_ERROR(member.restore(checkpoints[i].steps, checkpoints[i].values));
    observer_.resuming(member.model().name, checkpoints[i].steps);
  }
  std::map<std::string, std::span<const std::byte>> shared;
  for (const auto& [name, bytes] : checkpoints.front().values)
    if (name.starts_with("share.")) shared[name.substr(6)] = bytes;
  return share.restore(*checkpoints.front().share_steps, shared);
}

}  // namespace scion::workbench
