#include "workbench/training.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "lineage/safetensors.h"
#include "lineage/spec_records.h"
#include "runtime/compute_device.h"
#include "runtime/data/training_data.h"
#include "runtime/memory_info.h"
#include "runtime/op_profile.h"
#include "runtime/parameter_binding.h"
#include "runtime/profiling_backend.h"
#include "runtime/shared_modules.h"
#include "runtime/text/tokenizer.h"
#include "runtime/training/family_trainer.h"
#include "runtime/training/share_group.h"
#include "spec/recipe_hash.h"
#include "workbench/checkpoints.h"
#include "workbench/declared_import.h"
#include "workbench/model_lookup.h"
#include "workbench/plan.h"
#include "workbench/rank_agreement.h"
#include "workbench/rank_assignment.h"
#include "workbench/spec_version.h"
#include "workbench/training_groups.h"

namespace scion::workbench {
namespace {

using Clock = std::chrono::steady_clock;

// Steps between checkpoints of a running job: often enough that a crash loses little,
// rarely enough that writing them stays a small part of the step time.
constexpr std::int64_t kCheckpointEvery = 100;
// Steps whose metrics are saved in one store transaction: one commit (an fsync) per step
// cost more than a small model's step. A crash loses at most these steps' metrics, never
// parameters (they are committed with the finished run).
constexpr std::size_t kMetricsEvery = 50;

// A job's checkpoint file, read back.
struct Checkpoint {
  lineage::MappedSafetensors file;  // owns the bytes `values` points into
  std::map<std::string, std::span<const std::byte>> values;
  std::int64_t steps = 0;
  std::optional<std::int64_t> share_steps;  // a member of a share unit: its group's steps
};

class Session {
 public:
  // Under mpirun every rank runs a Session over the same plan (docs/distributed.md). A
  // wave run data parallel runs every group on every rank, rank 0 alone writing the
  // store; a wave run task parallel runs each group on the one rank its trunk is
  // assigned to, which writes its runs and parameters itself.
  Session(const spec::Workspace& ws, lineage::LineageStore& store, TrainingObserver& observer,
          const std::atomic<bool>* interrupted, runtime::Communicator& comm)
      : ws_(ws),
        store_(&store),
        observer_(observer),
        interrupted_(interrupted),
        shares_(ws_),
        comm_(comm),
        group_comm_(&comm),
        writer_(comm.rank() == 0) {}

  Result<TrainingOutcome> run(const Plan& plan, const TrainRequest& request);

 private:
  // The plan's imports and restores, parents first, before any group trains (the groups'
  // models may be adapted from them): rank 0 does them, and the ranks agree.
  Status prepare_models(const Plan& plan);
  Status prepare_on_writer(const Plan& plan);
  Status train_group(const std::vector<const spec::Model*>& group, lineage::RunKind kind);
  // Trains the planned group `index`: its models less those below one that diverged.
  Status train_planned_group(const Plan& plan, std::size_t index);
  // After a task-parallel wave: every rank learns what the others trained in it, and the
  // wave's outcomes are put in plan order on every rank.
  Status share_wave_outcomes(std::size_t models_before, std::size_t groups_before,
                             std::size_t diverged_before, std::size_t checkpointed_before);
  // The rows of dataset `name` (the model's training data, or its dev set) as `model`'s
  // base tokenizes them for its recipe, recorded in the store once.
  Result<std::shared_ptr<const data::TokenizedDataset>> dataset_for(const spec::Model& model,
                                                                    const std::string& name);
  // Loads the values `model` inherits into the views `pool` just allocated for it (a view
  // an earlier member bound already holds them) and records their digests.
  Status load_inherited(runtime::Backend& backend, const spec::Model& model,
                        const runtime::ParameterStore& pool,
                        const runtime::ParameterBinding& binding,
                        std::map<std::string, std::string>& digests);
  Status commit(runtime::TrainingJob& job, std::int64_t run_id,
                const std::map<std::string, std::string>& inherited_digests);
  std::filesystem::path checkpoint_path(const spec::Model& model) const;
  Status save_checkpoint(const runtime::TrainingJob& job);
  Status save_unit_checkpoints(const runtime::TrainingJob& job);
  Result<std::optional<Checkpoint>> read_checkpoint(const spec::Model& model);
  bool resume_wanted(const spec::Model& model) const;
  void note_outdated_checkpoints(const spec::Model& model) const;
  Status resume_from_checkpoint(runtime::TrainingJob& job);
  Status resume_unit(runtime::ShareGroup& share);
  std::vector<const spec::Model*> without_descendants_of_diverged(
      const std::vector<std::string>& group);
  // The backend of a group's precision on the request's device (created on first use;
  // one per precision), or why it cannot start.
  Result<runtime::Backend*> backend_for(spec::Precision precision);

  const spec::Workspace& ws_;
  lineage::LineageStore* store_;
  TrainingObserver& observer_;
  const std::atomic<bool>* interrupted_;
  std::map<spec::Precision, std::unique_ptr<runtime::Backend>> backends_;
  runtime::Device device_ = runtime::Device::kCpu;
  runtime::SharedModules shares_;
  runtime::Communicator& comm_;  // the job's ranks
  // The ranks the current group runs on: comm_ (data parallel) or solo_ (task parallel).
  runtime::SingleProcessCommunicator solo_;
  runtime::Communicator* group_comm_;
  // Whether this rank writes the current group's runs, parameters and checkpoints: rank 0
  // in a data-parallel wave, the rank that trains it in a task-parallel one.
  bool writer_;
  std::map<std::string, std::shared_ptr<const data::TokenizedDataset>> datasets_;
  TrainingOutcome outcome_;
  bool resume_ = false;
  bool quiet_ = false;
  std::function<std::unique_ptr<runtime::Backend>(runtime::Precision)> make_backend_;
  runtime::OpProfile* profile_ = nullptr;  // TrainRequest::profile
};

// "'review-hot' (scion.yaml:40) diverged at step 3: loss is NaN; try a lower learning rate".
std::string divergence_message(const runtime::TrainingJob& job) {
  const spec::Model& model = job.model();
  return fmt::format(
      "'{}' ({}:{}) diverged at step {}: {}; try a lower learning rate (its "
      "optimizer lr is {:g}); nothing of it was stored",
      model.name, model.location.file, model.location.line, job.divergence()->step,
      job.divergence()->what, model.training->optimizer.lr);
}

Result<std::shared_ptr<const data::TokenizedDataset>> Session::dataset_for(
    const spec::Model& model, const std::string& name) {
  const spec::TrainingSpec& recipe = *model.training;
  const spec::Architecture& arch = ws_.architecture_of(model);
  const int max_length = recipe.max_length > 0 ? recipe.max_length : arch.max_length;
  // Bases of one family may tokenise differently (two Hugging Face folders): the rows are
  // per base as well as per dataset, objective and length.
  const std::string key = fmt::format("{}/{}/{}/{}", ws_.ancestry(model).back()->name, name,
                                      static_cast<int>(recipe.objective), max_length);
  if (auto it = datasets_.find(key); it != datasets_.end()) return it->second;
  auto tokenizer = text::make_tokenizer(arch.tokenizer, ws_.root_dir);
  if (!tokenizer) return tokenizer.status();
  const spec::Dataset& dataset = *ws_.find_dataset(name);
  auto data = data::load_tokenized_dataset(dataset, **tokenizer, recipe.objective, max_length);
  if (!data) return data.status();
  if (writer_)
    SCION_RETURN_IF_ERROR(store_->record_dataset({dataset.digest, dataset.path.string(),
                                                  static_cast<std::int64_t>((*data)->rows.size()),
                                                  spec::dataset_format_name(dataset.format)}));
  datasets_[key] = *data;
  return *data;
}

// Copies the parent's stored values into every inherited parameter of `model`.
Status Session::load_inherited(runtime::Backend& backend, const spec::Model& model,
                               const runtime::ParameterStore& pool,
                               const runtime::ParameterBinding& binding,
                               std::map<std::string, std::string>& digests) {
  if (model.is_base()) return Status::ok();
  auto parent = store_->load_parameters(model.from);
  if (!parent) return parent.status();
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws_, model)) {
    if (runtime::is_new_parameter(p.name, model)) continue;
    auto it = parent->find(p.name);
    const runtime::Tensor* view = binding.find(p.name);
    if (it == parent->end() || view == nullptr)
      return corruption("parameter '" + p.name + "' of '" + model.from +
                        "' is missing from the store; retrain it with `scion adapt " + model.from +
                        " --force`");
    const runtime::Tensor stored{const_cast<std::byte*>(it->second.bytes.data()), p.shape,
                                 runtime::DType::kF32, runtime::Device::kCpu};
    if (it->second.bytes.size() != stored.bytes() || view->numel() != stored.numel() ||
        it->second.dtype != lineage::DType::kF32)
      return corruption("stored parameter '" + p.name + "' of '" + model.from +
                        "' does not match the spec's shape " + runtime::shape_string(p.shape));
    digests[p.name] = it->second.digest;
    // A buffer an earlier member of the group bound holds this value already.
    if (!pool.is_new(*view)) continue;
    // A frozen trunk weight held in bf16 is converted on the way.
    runtime::copy_to_device_as(backend, *view, stored);
  }
  return Status::ok();
}

Status Session::commit(runtime::TrainingJob& job, std::int64_t run_id,
                       const std::map<std::string, std::string>& inherited_digests) {
  std::vector<lineage::ParameterWrite> writes;
  std::list<std::vector<std::byte>> host_values;  // what `writes` point into, where copied
  // A frozen weight held in bf16 is stored as the parent's fp32 value, unrounded.
  std::optional<lineage::LoadedParameters> parent;
  for (const runtime::ParameterSpec& p : job.table()) {
    const runtime::Tensor* view = job.parameters().find(p.name);
    lineage::ParameterWrite w;
    w.name = p.name;
    w.shape = p.shape;
    if (view->dtype == runtime::DType::kF32) {
      w.bytes = runtime::host_bytes(job.backend(), *view, host_values.emplace_back());
    } else {
      if (!parent) {
        auto loaded = store_->load_parameters(job.model().from);
        if (!loaded) return loaded.status();
        parent = std::move(*loaded);
      }
      auto it = parent->find(p.name);
      if (it == parent->end())
        return corruption("parameter '" + p.name + "' of '" + job.model().from +
                          "' went missing from the store while '" + job.model().name +
                          "' trained");
      w.bytes = it->second.bytes;
      w.digest = it->second.digest;
    }
    w.trainable = p.trainable;
    w.introduced_by = p.introduced_by;
    if (!p.trainable)
      if (auto it = inherited_digests.find(p.name); it != inherited_digests.end())
        w.digest = it->second;
    writes.push_back(std::move(w));
  }
  return store_->commit_model(run_id, lineage::model_record_for(ws_, job.model()), writes);
}

// Named by the recipe hash, never by the model's name: a name must not be able to name a
// file outside the store. The hash covers the name, so each model has its own file; the
// checkpoint's metadata keeps the name.
std::filesystem::path Session::checkpoint_path(const spec::Model& model) const {
  return store_->dir() / "checkpoints" / (model.recipe_hash + ".safetensors");
}

// A job's checkpoint: its own tensors, and for a member of a share unit its group's
// (prefixed "share.") with the group's step count, so the unit can resume as one.
Status Session::save_checkpoint(const runtime::TrainingJob& job) {
  std::vector<lineage::SafetensorsTensor> tensors;
  std::list<std::vector<std::byte>> host_values;  // the tensors' bytes, where copied off the backend
  auto add = [&](const std::string& prefix,
                 const std::vector<std::pair<std::string, runtime::Tensor>>& list) {
    for (const auto& [name, t] : list) {
      tensors.push_back({prefix + name, lineage::DType::kF32, t.shape,
                         runtime::host_bytes(job.backend(), t, host_values.emplace_back())});
    }
  };
  add("", job.checkpoint_tensors());
  std::map<std::string, std::string> metadata = {{"model", job.model().name},
                                                 {"recipe_hash", job.model().recipe_hash},
                                                 {"step", std::to_string(job.steps_done())}};
  if (const runtime::ShareGroup* share = job.share_group()) {
    add("share.", share->checkpoint_tensors());
    metadata["share_step"] = std::to_string(share->steps_done());
  }
  const std::filesystem::path path = checkpoint_path(job.model());
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return io_error("cannot create " + path.parent_path().string() + ": " + ec.message());
  return lineage::write_safetensors(store_->env(), path, tensors, metadata);
}

// Every member of a share unit is checkpointed at the same moment (finished members
// included: they are stored only when the unit is), so that the unit resumes exactly.
Status Session::save_unit_checkpoints(const runtime::TrainingJob& job) {
  const runtime::ShareGroup* share = job.share_group();
  if (!share) return save_checkpoint(job);
  for (const runtime::TrainingJob* member : share->members())
    SCION_RETURN_IF_ERROR(save_checkpoint(*member));
  return Status::ok();
}

// A step count from a checkpoint's metadata; damaged text is an error naming the file.
Result<std::int64_t> checkpoint_step(const std::filesystem::path& path, const std::string& key,
                                     const std::string& text) {
  std::int64_t value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0)
    return corruption(
        fmt::format("checkpoint {} is damaged: its metadata '{}' is '{}', not a step "
                    "count; delete it, or train without --resume",
                    path.string(), key, text));
  return value;
}

// The checkpoint of `model`'s current recipe, or nullopt (with a note) when there is none
// to resume: a checkpoint of another recipe means that training starts over.
Result<std::optional<Checkpoint>> Session::read_checkpoint(const spec::Model& model) {
  const std::filesystem::path path = checkpoint_path(model);
  if (!std::filesystem::exists(path)) return std::optional<Checkpoint>();
  auto file = lineage::read_safetensors(store_->env(), path);
  if (!file) return file.status();
  Checkpoint checkpoint{.file = std::move(*file)};
  const auto& meta = checkpoint.file.contents.metadata;
  auto step = meta.find("step");
  if (step == meta.end())
    return corruption(path.string() +
                      " is not a scion checkpoint (no step in its metadata); "
                      "delete it, or train without --resume");
  if (meta.count("recipe_hash") == 0 || meta.at("recipe_hash") != model.recipe_hash) {
    observer_.note("the checkpoint " + path.string() + " is of another recipe of '" + model.name +
                   "'; its recipe changed since, so it trains from the start");
    return std::optional<Checkpoint>();
  }
  auto steps = checkpoint_step(path, "step", step->second);
  if (!steps) return steps.status();
  checkpoint.steps = *steps;
  if (auto share_step = meta.find("share_step"); share_step != meta.end()) {
    auto share_steps = checkpoint_step(path, "share_step", share_step->second);
    if (!share_steps) return share_steps.status();
    checkpoint.share_steps = *share_steps;
  }
  for (const lineage::SafetensorsTensor& t : checkpoint.file.contents.tensors)
    checkpoint.values[t.name] = t.bytes;
  return std::optional<Checkpoint>(std::move(checkpoint));
}

// --resume found no checkpoint of the current recipe: says so when there is one of an
// earlier recipe, which cannot continue (its parameters and schedule belong to another).
void Session::note_outdated_checkpoints(const spec::Model& model) const {
  auto checkpoints = list_checkpoints(*store_, &ws_);
  if (!checkpoints) return;  // only a note: training starts over either way
  for (const CheckpointFile& c : *checkpoints)
    if (c.model == model.name && c.recipe_hash != model.recipe_hash)
      observer_.note("'" + model.name + "' starts over instead of resuming: " + c.stale +
                     ", so its checkpoint " + c.path.string() +
                     " cannot continue (`scion gc` removes it)");
}

// Notes a checkpoint that --resume would have continued. Returns whether to resume.
bool Session::resume_wanted(const spec::Model& model) const {
  if (!std::filesystem::exists(checkpoint_path(model))) {
    if (resume_) note_outdated_checkpoints(model);
    return false;
  }
  if (!resume_ && !quiet_)
    observer_.note("'" + model.name +
                   "' has a checkpoint of an interrupted run; starting over (use "
                   "--resume to continue it)");
  return resume_;
}

Status Session::resume_from_checkpoint(runtime::TrainingJob& job) {
  if (!resume_wanted(job.model())) return Status::ok();
  auto checkpoint = read_checkpoint(job.model());
  if (!checkpoint) return checkpoint.status();
  if (!checkpoint->has_value()) return Status::ok();
  SCION_RETURN_IF_ERROR(job.restore((*checkpoint)->steps, (*checkpoint)->values));
  observer_.resuming(job.model().name, (*checkpoint)->steps);
  return Status::ok();
}

// A share unit resumes only as a whole: every member's checkpoint from the same moment.
Status Session::resume_unit(runtime::ShareGroup& share) {
  bool wanted = false;
  for (const runtime::TrainingJob* member : share.members())
    wanted = resume_wanted(member->model()) || wanted;
  if (!wanted) return Status::ok();
  std::vector<Checkpoint> checkpoints;
  for (const runtime::TrainingJob* member : share.members()) {
    auto checkpoint = read_checkpoint(member->model());
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

Result<runtime::Backend*> Session::backend_for(spec::Precision precision) {
  std::unique_ptr<runtime::Backend>& backend = backends_[precision];
  if (!backend) {
    const runtime::Precision products =
        precision == spec::Precision::kBF16 ? runtime::Precision::kBF16 : runtime::Precision::kF32;
    if (make_backend_) {
      backend = make_backend_(products);
    } else {
      auto made = runtime::make_backend(device_, products);
      if (!made) return made.status();
      backend = std::move(*made);
    }
    if (profile_) backend = runtime::make_profiling_backend(std::move(backend), *profile_);
  }
  return backend.get();
}

// A group's step count, steady state (median of the steps after the first) and time to
// its first step, from the trainer's step timings.
void set_step_figures(GroupOutcome& group, const runtime::FamilyTrainer& trainer) {
  const std::vector<runtime::StepTiming>& steps = trainer.step_timings();
  group.steps = static_cast<std::int64_t>(steps.size());
  group.first_step_end_seconds = trainer.first_step_end().value_or(0);
  if (steps.size() < 2) return;
  std::vector<double> seconds, rates;
  for (std::size_t i = 1; i < steps.size(); ++i) {
    seconds.push_back(steps[i].seconds);
    if (steps[i].seconds > 0)
      rates.push_back(static_cast<double>(steps[i].tokens) / steps[i].seconds);
  }
  const auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  group.steady_step_seconds = median(seconds);
  group.steady_tokens_per_second = median(rates);
}

// training_groups() never mixes precisions, so the first member's is the group's.
Status Session::train_group(const std::vector<const spec::Model*>& members, lineage::RunKind kind) {
  const auto start = Clock::now();
  // The group's own peak: earlier groups' buffers are freed, but the process's peak
  // would still count them.
  runtime::reset_peak_resident();
  const std::int64_t resident_before = runtime::resident_bytes().value_or(0);
  auto made_backend = backend_for(members.front()->training->precision);
  if (!made_backend) return made_backend.status();
  runtime::Backend& backend = **made_backend;
  // bf16 groups hold the trunk weights they run frozen in bf16 (2 bytes a parameter).
  runtime::ParameterStore pool(backend, shares_,
                               backend.precision() == runtime::Precision::kBF16
                                   ? runtime::DType::kBF16
                                   : runtime::DType::kF32);
  std::vector<std::unique_ptr<runtime::TrainingJob>> jobs;
  std::vector<std::map<std::string, std::string>> digests(members.size());
  std::map<const runtime::TrainingJob*, std::int64_t> run_ids;
  std::map<const runtime::TrainingJob*, std::size_t> index_of;
  std::map<std::string, std::unique_ptr<runtime::ShareGroup>> share_groups;  // by unit owner
  const std::size_t first_outcome = outcome_.models.size();
  auto outcome_of = [&](const runtime::TrainingJob& job) -> ModelOutcome& {
    return outcome_.models[first_outcome + index_of.at(&job)];
  };

  // The ranks agree on the setup before training: one that fails here stops them all.
  auto set_up = [&]() -> Status {
    runtime::ScopedOpTimer setup_time(profile_, runtime::OpClass::kSetup);
    // Every member's parameters first: a share unit's group needs all of its members' views.
    std::map<std::string, runtime::ParameterBinding> bindings;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const spec::Model& model = *members[i];
      auto added = pool.add_model(ws_, model);
      if (!added) return added.status();
      runtime::ParameterBinding binding = std::move(*added);
      SCION_RETURN_IF_ERROR(load_inherited(backend, model, pool, binding, digests[i]));
      runtime::initialize_new_parameters(backend, ws_, model, binding, model.training->seed,
                                         shares_);
      bindings[model.name] = std::move(binding);
    }
    for (const spec::Model* model : members) {
      if (shares_.shared_by(model->name).empty()) continue;
      const std::vector<const spec::Model*> unit = ws_.training_unit(*model);
      std::unique_ptr<runtime::ShareGroup>& group = share_groups[unit.front()->name];
      if (group) continue;
      auto created = runtime::ShareGroup::create(unit, shares_, bindings, backend);
      if (!created) return created.status();
      group = std::move(*created);
    }
    for (std::size_t i = 0; i < members.size(); ++i) {
      const spec::Model& model = *members[i];
      auto data = dataset_for(model, model.training->dataset);
      if (!data) return data.status();
      std::shared_ptr<const data::TokenizedDataset> dev;
      if (!model.training->validation.empty()) {
        auto loaded = dataset_for(model, model.training->validation);
        if (!loaded) return loaded.status();
        dev = *loaded;
      }
      runtime::ShareGroup* share = nullptr;
      if (!shares_.shared_by(model.name).empty())
        share = share_groups.at(ws_.training_unit(model).front()->name).get();
      auto job = runtime::TrainingJob::create(ws_, model, bindings.at(model.name), *data, backend,
                                              share, dev);
      if (!job) return job.status();
      if (!share) SCION_RETURN_IF_ERROR(resume_from_checkpoint(**job));
      lineage::RunStart run{.kind = kind,
                            .recipe_hash = model.recipe_hash,
                            .dataset_digest = ws_.find_dataset(model.training->dataset)->digest,
                            .seed = model.training->seed,
                            .hyperparameters = spec::canonical_recipe(ws_, model)};
      Result<std::int64_t> run_id = std::int64_t{0};  // the other ranks record no runs
      runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
      if (writer_) run_id = store_->start_run(lineage::model_record_for(ws_, model), run);
      if (!run_id) return run_id.status();
      run_ids[job->get()] = *run_id;
      index_of[job->get()] = i;
      outcome_.models.emplace_back(model.name, "running", *run_id);
      jobs.push_back(std::move(*job));
    }
    for (auto& [owner, group] : share_groups) SCION_RETURN_IF_ERROR(resume_unit(*group));
    for (const auto& job : jobs) outcome_of(*job).resumed_from = job->steps_done();
    return Status::ok();
  };
  if (Status agreed = group_comm_->agree(set_up()); !agreed.is_ok()) {
    // Best effort, as below: runs this rank started say how they ended.
    if (writer_)
      for (const auto& [job, run_id] : run_ids)
        (void)store_->finish_run(run_id, lineage::RunStatus::kFailed, agreed.message());
    return agreed;
  }

  std::vector<std::string> names;
  for (const spec::Model* m : members) names.push_back(m->name);
  observer_.group_started(names);

  std::int64_t tokens = 0;
  std::map<const runtime::ShareGroup*, std::int64_t> unit_saved_at;
  // Each job's step metrics not yet in the store: saved together, in one transaction,
  // every kMetricsEvery steps, at a checkpoint, and when the job ends.
  std::map<const runtime::TrainingJob*, std::vector<lineage::StepMetrics>> unsaved_metrics;
  const auto save_metrics = [&](const runtime::TrainingJob* job) -> Status {
    std::vector<lineage::StepMetrics>& buffered = unsaved_metrics[job];
    if (!writer_ || buffered.empty()) {
      buffered.clear();
      return Status::ok();
    }
    runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
    Status saved = store_->append_metrics(run_ids.at(job), buffered);
    buffered.clear();
    return saved;
  };
  runtime::TrainerCallbacks callbacks;
  callbacks.on_step = [&](const runtime::StepReport& r) -> Status {
    // A device failure stops training before its results reach a checkpoint or the store.
    SCION_RETURN_IF_ERROR(runtime::check_backend(backend, "training"));
    tokens += r.tokens;
    ModelOutcome& outcome = outcome_of(*r.job);
    outcome.steps = r.step;
    outcome.final_loss = r.loss;
    lineage::StepMetrics metrics;
    metrics.step = r.step;
    metrics.loss = r.loss;
    metrics.lr = r.lr;
    metrics.recorded_at = lineage::utc_now();
    if (r.validation) {
      outcome.val_loss = r.validation->loss;
      outcome.val_accuracy = r.validation->metric("val_accuracy");
      outcome.validation = r.validation->metrics;
      for (const auto& [name, value] : r.validation->metrics) metrics.validation[name] = value;
    }
    observer_.step(r, members.size());
    // A share unit checkpoints as a whole, by its group's steps, once per step.
    const runtime::ShareGroup* share = r.job->share_group();
    const bool due = share ? share->steps_done() % kCheckpointEvery == 0 && !share->finished() &&
                                 unit_saved_at[share] != share->steps_done()
                           : r.step % kCheckpointEvery == 0 && !r.job->finished();
    if (!writer_) return Status::ok();
    if (due) {
      runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
      SCION_RETURN_IF_ERROR(save_unit_checkpoints(*r.job));
      if (share) unit_saved_at[share] = share->steps_done();
    }
    std::vector<lineage::StepMetrics>& buffered = unsaved_metrics[r.job];
    buffered.push_back(std::move(metrics));
    if (due || buffered.size() >= kMetricsEvery) return save_metrics(r.job);
    return Status::ok();
  };
  // One progress line per step of a co-batched group: its jobs' losses, its tokens/s and
  // an estimate of the time left from its own step rate (set-up excluded).
  Clock::time_point training_began;  // set-up done
  std::optional<Clock::time_point> first_step_at;
  std::int64_t first_step = 0;
  callbacks.on_group_step = [&](std::span<const runtime::StepReport> reports) -> Status {
    if (members.size() < 2 || reports.empty()) return Status::ok();
    const auto now = Clock::now();
    GroupProgress progress{.models = names, .running = reports.size()};
    for (const auto& job : jobs)
      progress.total_steps = std::max(progress.total_steps, job->total_steps());
    for (const runtime::StepReport& r : reports) progress.step = std::max(progress.step, r.step);
    for (const auto& job : jobs) {
      const ModelOutcome& o = outcome_of(*job);
      progress.losses.push_back(o.steps > 0 ? std::optional<double>(o.final_loss) : std::nullopt);
    }
    for (const runtime::StepReport& r : reports) progress.mean_loss += r.loss;
    progress.mean_loss /= static_cast<double>(reports.size());
    if (!first_step_at) {
      first_step_at = now;
      first_step = progress.step;
    }
    progress.elapsed_seconds = std::chrono::duration<double>(now - start).count();
    const double training = std::chrono::duration<double>(now - training_began).count();
    progress.tokens_per_second = training > 0 ? static_cast<double>(tokens) / training : 0;
    const double since_first = std::chrono::duration<double>(now - *first_step_at).count();
    if (progress.step > first_step && since_first > 0)
      progress.eta_seconds = static_cast<double>(progress.total_steps - progress.step) *
                             since_first / static_cast<double>(progress.step - first_step);
    if (writer_) observer_.group_step(progress);
    return Status::ok();
  };
  // A diverged job stores nothing and keeps its last checkpoint, which holds only values
  // from before the divergence; its group goes on without it.
  callbacks.on_note = [&](const std::string& note) {
    if (writer_) observer_.note(note);
  };
  callbacks.on_job_diverged = [&](runtime::TrainingJob& job) -> Status {
    SCION_RETURN_IF_ERROR(save_metrics(&job));
    ModelOutcome& outcome = outcome_of(job);
    outcome.status = "diverged";
    outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    outcome_.diverged.push_back(divergence_message(job));
    if (!writer_) return Status::ok();
    runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
    return store_->finish_run(run_ids.at(&job), lineage::RunStatus::kDiverged,
                              outcome_.diverged.back());
  };
  callbacks.on_job_finished = [&](runtime::TrainingJob& job) -> Status {
    SCION_RETURN_IF_ERROR(save_metrics(&job));
    ModelOutcome& outcome = outcome_of(job);
    outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    outcome.status = "trained";
    outcome.kept = job.kept();
    if (!writer_) return Status::ok();
    runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
    if (job.kept())
      SCION_RETURN_IF_ERROR(
          store_->record_kept(run_ids.at(&job), kept_json(*job.kept()), kept_message(*job.kept())));
    SCION_RETURN_IF_ERROR(commit(job, run_ids.at(&job), digests[index_of.at(&job)]));
    std::error_code ignored;  // a leftover checkpoint is harmless: the model is up to date
    std::filesystem::remove(checkpoint_path(job.model()), ignored);
    return Status::ok();
  };

  std::vector<runtime::TrainingJob*> raw;
  for (auto& job : jobs) raw.push_back(job.get());
  runtime::FamilyTrainer trainer(backend, {.communicator = group_comm_, .profile = profile_});
  training_began = Clock::now();
  Status status = trainer.run(raw, callbacks, interrupted_);
  // Steps since the last save of a job that stopped early (interrupted, failed).
  for (auto& job : jobs)
    if (Status saved = save_metrics(job.get()); status.is_ok()) status = saved;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const bool interrupted = status.code() == StatusCode::kCancelled;
  outcome_.groups.push_back({names,
                             status.is_ok() ? "trained"
                             : interrupted  ? "interrupted"
                                            : "failed",
                             seconds,
                             seconds > 0 ? static_cast<double>(tokens) / seconds : 0,
                             spec::precision_name(members.front()->training->precision),
                             group_memory_bytes(ws_, members),
                             resident_before,
                             runtime::peak_resident_bytes().value_or(0)});
  set_step_figures(outcome_.groups.back(), trainer);
  if (!status.is_ok()) {
    for (auto& job : jobs) {
      ModelOutcome& outcome = outcome_of(*job);
      if (outcome.status == "trained" || outcome.status == "diverged") continue;
      outcome.status = interrupted ? "interrupted" : "failed";
      if (!writer_) continue;
      if (interrupted && job->steps_done() > 0) {
        Status saved = save_checkpoint(*job);
        if (saved.is_ok())
          outcome_.checkpointed.emplace_back(job->model().name, job->steps_done());
        else
          observer_.warning("no checkpoint for '" + job->model().name + "': " + saved.message());
      }
      // Best effort: the run row says how it ended; the store is consistent either way.
      (void)store_->finish_run(
          run_ids.at(job.get()),
          interrupted ? lineage::RunStatus::kInterrupted : lineage::RunStatus::kFailed,
          status.message());
    }
  }
  return status;
}

// The models of a planned group, less those below one that diverged: their parent will
// not be stored.
std::vector<const spec::Model*> Session::without_descendants_of_diverged(
    const std::vector<std::string>& group) {
  std::set<std::string> diverged;
  for (const ModelOutcome& o : outcome_.models)
    if (o.status == "diverged") diverged.insert(o.name);
  std::vector<const spec::Model*> kept;
  for (const std::string& name : group) {
    const spec::Model* m = ws_.find_model(name);
    const auto ancestry = ws_.ancestry(*m);
    auto blocked_by = std::find_if(ancestry.begin(), ancestry.end(), [&](const spec::Model* a) {
      return diverged.count(a->name) > 0;
    });
    if (blocked_by == ancestry.end())
      kept.push_back(m);
    else
      outcome_.models.emplace_back(name, "not trained: '" + (*blocked_by)->name + "' diverged");
  }
  return kept;
}

// Whether wave `wave` of `plan` runs task parallel on `ranks` ranks.
bool task_parallel_wave(const Plan& plan, std::size_t wave, Parallelism parallel, int ranks) {
  if (ranks < 2 || parallel == Parallelism::kData) return false;
  if (parallel == Parallelism::kTask) return true;
  std::set<std::string> trunks;
  for (const PlannedGroup& g : plan.groups)
    if (g.wave == wave) trunks.insert(g.trunk);
  return static_cast<int>(trunks.size()) >= ranks;
}

Status Session::train_planned_group(const Plan& plan, std::size_t index) {
  const std::vector<const spec::Model*> members =
      without_descendants_of_diverged(plan.groups[index].models);
  if (members.empty()) return Status::ok();
  const auto kind =
      members.front()->is_base() ? lineage::RunKind::kTrain : lineage::RunKind::kAdapt;
  return train_group(members, kind);
}

nlohmann::json outcome_json(const ModelOutcome& o) {
  return {{"name", o.name},
          {"status", o.status},
          {"run_id", o.run_id},
          {"steps", o.steps},
          {"resumed_from", o.resumed_from},
          {"final_loss", o.final_loss},
          {"val_loss", o.val_loss ? nlohmann::json(*o.val_loss) : nlohmann::json()},
          {"val_accuracy", o.val_accuracy ? nlohmann::json(*o.val_accuracy) : nlohmann::json()},
          {"validation", o.validation},
          {"kept", o.kept ? kept_json(*o.kept) : nlohmann::json()},
          {"seconds", o.seconds}};
}

ModelOutcome model_outcome_from(const nlohmann::json& j) {
  ModelOutcome o(j.at("name").get<std::string>(), j.at("status").get<std::string>(),
                 j.at("run_id").get<std::int64_t>());
  o.steps = j.at("steps").get<std::int64_t>();
  o.resumed_from = j.at("resumed_from").get<std::int64_t>();
  o.final_loss = j.at("final_loss").get<double>();
  if (!j.at("val_loss").is_null()) o.val_loss = j.at("val_loss").get<double>();
  if (!j.at("val_accuracy").is_null()) o.val_accuracy = j.at("val_accuracy").get<double>();
  o.validation = j.at("validation").get<std::map<std::string, double>>();
  if (const nlohmann::json& k = j.at("kept"); !k.is_null())
    o.kept = runtime::KeptValidation{
        .step = k.at("step").get<std::int64_t>(),
        .metric = k.at("metric").get<std::string>(),
        .value = k.at("value").get<double>(),
        .last_step = k.at("last_step").get<std::int64_t>(),
        .last_value = k.at("last_value").is_null()
                          ? std::nullopt
                          : std::optional(k.at("last_value").get<double>())};
  o.seconds = j.at("seconds").get<double>();
  return o;
}

GroupOutcome group_outcome_from(const nlohmann::json& j) {
  return {j.at("models").get<std::vector<std::string>>(),
          j.at("status").get<std::string>(),
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
}

// Every rank sends the outcomes it added in this wave (CBOR keeps a NaN loss); each
// rank then rebuilds the wave's part of outcome_ from all of them, rank by rank. A
// trunk's groups are on one rank, so each model's entry comes from exactly one rank.
Status Session::share_wave_outcomes(std::size_t models_before, std::size_t groups_before,
                                    std::size_t diverged_before,
                                    std::size_t checkpointed_before) {
  nlohmann::json mine = {{"models", nlohmann::json::array()},
                         {"groups", nlohmann::json::array()},
                         {"diverged", nlohmann::json::array()},
                         {"checkpointed", nlohmann::json::array()}};
  for (std::size_t i = models_before; i < outcome_.models.size(); ++i)
    mine["models"].push_back(outcome_json(outcome_.models[i]));
  for (std::size_t i = groups_before; i < outcome_.groups.size(); ++i)
    mine["groups"].push_back(group_outcome_json(outcome_.groups[i]));
  for (std::size_t i = diverged_before; i < outcome_.diverged.size(); ++i)
    mine["diverged"].push_back(outcome_.diverged[i]);
  for (std::size_t i = checkpointed_before; i < outcome_.checkpointed.size(); ++i)
    mine["checkpointed"].push_back(nlohmann::json(outcome_.checkpointed[i]));
  const std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(mine);
  auto all = comm_.all_gather(std::string(bytes.begin(), bytes.end()));
  if (!all) return all.status();
  outcome_.models.resize(models_before, ModelOutcome("", ""));
  outcome_.groups.resize(groups_before);
  outcome_.diverged.resize(diverged_before);
  outcome_.checkpointed.resize(checkpointed_before);
  for (const std::string& from : *all) {
    const nlohmann::json j = nlohmann::json::from_cbor(from, true, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      return corruption("a rank sent training outcomes that cannot be read; are all ranks "
                        "the same scion?");
    try {
      for (const nlohmann::json& m : j.at("models")) outcome_.models.push_back(model_outcome_from(m));
      for (const nlohmann::json& g : j.at("groups")) outcome_.groups.push_back(group_outcome_from(g));
      for (const nlohmann::json& d : j.at("diverged")) outcome_.diverged.push_back(d.get<std::string>());
      for (const nlohmann::json& c : j.at("checkpointed"))
        outcome_.checkpointed.push_back(c.get<std::pair<std::string, std::int64_t>>());
    } catch (const nlohmann::json::exception& e) {
      return corruption(std::string("a rank sent training outcomes of another form: ") + e.what());
    }
  }
  return Status::ok();
}

Status Session::prepare_on_writer(const Plan& plan) {
  for (const PlannedModel& p : plan.models) {
    if (p.state != ModelState::kImports && p.state != ModelState::kRestores) continue;
    if (interrupted_ && interrupted_->load())
      return Status(StatusCode::kCancelled, "interrupted before '" + p.name + "' was stored");
    const spec::Model& model = *ws_.find_model(p.name);
    if (p.state == ModelState::kImports) {
      auto imported = import_declared_base(ws_, *store_, model);
      if (!imported) return imported.status();
      if (!quiet_)
        for (const std::string& note : imported->notes) observer_.note(p.name + ": " + note);
      outcome_.models.emplace_back(p.name, "imported", imported->run);
    } else {
      auto run = store_->restore_version(lineage::model_record_for(ws_, model));
      if (!run) return run.status();
      outcome_.models.emplace_back(p.name, "restored", *run);
      outcome_.models.back().restored_run = p.restores_run;
    }
    observer_.prepared(outcome_.models.back());
  }
  return Status::ok();
}

Status Session::prepare_models(const Plan& plan) {
  return comm_.agree(comm_.rank() == 0 ? prepare_on_writer(plan) : Status::ok());
}

// Executes `plan`: its notes, its refusals (a blocked model; a group over the memory,
// unless the request ignores the limit), its imports and restores, then its groups wave
// by wave.
Result<TrainingOutcome> Session::run(const Plan& plan, const TrainRequest& request) {
  resume_ = request.resume;
  quiet_ = request.quiet;
  make_backend_ = request.make_backend;
  device_ = request.device;
  profile_ = request.profile;
  if (!quiet_)
    for (const std::string& note : plan.notes) observer_.note(note);
  for (const PlannedModel& m : plan.models)
    if (m.state == ModelState::kUpToDate && ws_.find_model(m.name)->training)
      outcome_.models.emplace_back(m.name, "up to date");
  SCION_RETURN_IF_ERROR(plan.blocked());
  // Agreed: the memory available may differ between the ranks' moments of reading it.
  // Also every rank has made its plan before any rank writes the store.
  SCION_RETURN_IF_ERROR(
      comm_.agree(request.ignore_memory_limit ? Status::ok() : plan.memory_refusal()));
  const int ranks = comm_.size();
  std::vector<bool> mine(plan.groups.size(), true);  // the groups of this rank's trunks
  if (ranks > 1) {
    std::fill(mine.begin(), mine.end(), false);
    const std::vector<RankWork> assigned = assign_ranks(plan, ranks);
    for (std::size_t g : assigned[static_cast<std::size_t>(comm_.rank())].groups) mine[g] = true;
  }
  std::size_t waves = 0;
  for (const PlannedGroup& g : plan.groups) waves = std::max(waves, g.wave + 1);
  Status status = prepare_models(plan);
  for (std::size_t wave = 0; wave < waves && status.is_ok(); ++wave) {
    const bool task = task_parallel_wave(plan, wave, request.parallel, ranks);
    group_comm_ = task ? static_cast<runtime::Communicator*>(&solo_) : &comm_;
    writer_ = task || comm_.rank() == 0;
    const std::size_t models_before = outcome_.models.size(), groups_before = outcome_.groups.size(),
                      diverged_before = outcome_.diverged.size(),
                      checkpointed_before = outcome_.checkpointed.size();
    for (std::size_t i = 0; i < plan.groups.size() && status.is_ok(); ++i)
      if (plan.groups[i].wave == wave && (!task || mine[i])) status = train_planned_group(plan, i);
    if (!task) continue;  // the ranks agreed on every step of the wave's groups
    // The next wave starts when every rank has finished this one and stored its models,
    // and knows what the others trained (and which diverged), or with the lowest failing
    // rank's error.
    if (Status shared = share_wave_outcomes(models_before, groups_before, diverged_before,
                                            checkpointed_before);
        !shared.is_ok() && status.is_ok())
      status = shared;
    status = comm_.agree(status);
  }
  outcome_.status = status;
  return std::move(outcome_);
}

}  // namespace

Result<TrainingOutcome> train(const spec::Workspace& ws, lineage::LineageStore& store,
                              const TrainRequest& request, TrainingObserver& observer,
                              const std::atomic<bool>* interrupted, runtime::Communicator* comm) {
  runtime::SingleProcessCommunicator solo;
  runtime::Communicator& communicator = comm ? *comm : solo;
  const bool overridden = overrides_recipes(request);
  const spec::Workspace overridden_ws = overridden ? with_overrides(ws, request) : spec::Workspace();
  const spec::Workspace& planned = overridden ? overridden_ws : ws;
  auto plan = make_plan(planned, &store, request);
  // Every rank made its plan (or all stop with the first error), and the plans are one
  // before any rank trains or writes (workbench/rank_agreement.h).
  SCION_RETURN_IF_ERROR(communicator.agree(plan ? Status::ok() : plan.status()));
  SCION_RETURN_IF_ERROR(agree_on_plan(communicator, *plan));
  auto outcome = Session(planned, store, observer, interrupted, communicator).run(*plan, request);
  // The spec version this command ran, seen now: what `scion gc --keep N` counts.
  if (outcome && communicator.rank() == 0) {
    Status recorded = record_spec_version(planned, store);
    if (!recorded.is_ok() && outcome->status.is_ok()) outcome->status = recorded;
  }
  return outcome;
}

Status training_status(const TrainingOutcome& outcome) {
  if (outcome.status.is_ok() && !outcome.diverged.empty())
    return Status(StatusCode::kDiverged, outcome.diverged.back());
  return outcome.status;
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

nlohmann::json group_outcome_json(const GroupOutcome& g) {
  return {{"models", g.models},
          {"status", g.status},
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

}  // namespace scion::workbench
