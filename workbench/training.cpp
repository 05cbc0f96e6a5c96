#include "workbench/training.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "lineage/safetensors.h"
#include "lineage/spec_records.h"
#include "runtime/data/training_data.h"
#include "runtime/memory_info.h"
#include "runtime/parameter_binding.h"
#include "runtime/shared_modules.h"
#include "runtime/text/tokenizer.h"
#include "runtime/training/family_trainer.h"
#include "runtime/training/share_group.h"
#include "spec/recipe_hash.h"
#include "workbench/checkpoints.h"
#include "workbench/model_lookup.h"
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

// Refuses, before anything is written, a request with a group whose estimated training
// memory (as `scion plan` shows it) exceeds what the machine has available, or the budget
// the user gave explicitly: better a clear refusal than the kernel killing the process
// half-way, or swapping for hours.
Status check_memory(const spec::Workspace& ws, const std::vector<const spec::Model*>& pending,
                    std::int64_t grouping_budget, std::int64_t explicit_budget) {
  const std::optional<std::int64_t> available = runtime::available_memory_bytes();
  for (const auto& group : planned_training_groups(ws, pending, grouping_budget)) {
    const std::int64_t needs = group_memory_bytes(ws, group);
    const bool over_available = available && needs > *available;
    const bool over_budget = explicit_budget > 0 && needs > explicit_budget;
    if (!over_available && !over_budget) continue;
    std::vector<std::string> names;
    for (const spec::Model* m : group) names.push_back("'" + m->name + "'");
    const std::string limit =
        over_available ? runtime::memory_size(*available) + " available"
                       : runtime::memory_size(explicit_budget) + " allowed by --memory-budget";
    return Status(
        StatusCode::kOutOfMemory,
        fmt::format("training {} needs {}, {}; lower batch_size or max_length (or the "
                    "architecture's size) in {}, or pass --ignore-memory-limit to try anyway",
                    fmt::join(names, ", "), runtime::memory_size(needs), limit,
                    ws.spec_path.string()));
  }
  return Status::ok();
}

// A model waiting to train, and why it is in or out.
struct Pending {
  const spec::Model* model;
};

// A job's checkpoint file, read back.
struct Checkpoint {
  lineage::MappedSafetensors file;  // owns the bytes `values` points into
  std::map<std::string, std::span<const std::byte>> values;
  std::int64_t steps = 0;
  std::optional<std::int64_t> share_steps;  // a member of a share unit: its group's steps
};

bool in_scope(const spec::Model& m, TrainScope scope) {
  if (scope == TrainScope::kAll) return true;
  return (scope == TrainScope::kBases) == m.is_base();
}

class Session {
 public:
  // Under mpirun every rank runs a Session over the same work, rank 0 alone writing the
  // store (docs/distributed.md); the others open it read-only.
  Session(const spec::Workspace& ws, lineage::LineageStore& store, TrainingObserver& observer,
          const std::atomic<bool>* interrupted, runtime::Communicator& comm)
      : ws_(ws),
        store_(&store),
        observer_(observer),
        interrupted_(interrupted),
        shares_(ws_),
        comm_(comm),
        writer_(comm.rank() == 0) {}

  Result<TrainingOutcome> run(const TrainRequest& request);

 private:
  Result<std::vector<const spec::Model*>> select(const TrainRequest& request);
  Result<bool> up_to_date(const spec::Model& model);
  Status train_group(const std::vector<const spec::Model*>& group, lineage::RunKind kind);
  Result<std::shared_ptr<const data::TokenizedDataset>> dataset_for(const spec::Model& model);
  // Loads the values `model` inherits into the views `pool` just allocated for it (a view
  // an earlier member bound already holds them) and records their digests.
  Status load_inherited(const spec::Model& model, const runtime::ParameterStore& pool,
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
      std::vector<const spec::Model*> waiting, std::set<std::string>& waiting_names);
  Status parent_missing(const spec::Model& model) const;
  // The backend of a group's precision (created on first use; one per precision).
  runtime::Backend& backend_for(spec::Precision precision);

  const spec::Workspace& ws_;
  lineage::LineageStore* store_;
  TrainingObserver& observer_;
  const std::atomic<bool>* interrupted_;
  std::map<spec::Precision, std::unique_ptr<runtime::Backend>> backends_;
  runtime::SharedModules shares_;
  runtime::Communicator& comm_;
  const bool writer_;  // rank 0: the one rank that writes the store and checkpoints
  std::map<std::string, std::shared_ptr<const data::TokenizedDataset>> datasets_;
  TrainingOutcome outcome_;
  std::set<std::string> noted_missing_;  // models whose missing objects were reported
  bool resume_ = false;
  bool quiet_ = false;
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

// Stored for its current recipe, with every object of its parameters still there.
Result<bool> Session::up_to_date(const spec::Model& model) {
  auto stored = store_->find_model(model.name);
  if (!stored) return stored.status();
  if (!stored->has_value() || (*stored)->recipe_hash != model.recipe_hash) return false;
  auto missing = store_->missing_objects(model.name);
  if (!missing) return missing.status();
  if (missing->empty()) return true;
  if (noted_missing_.insert(model.name).second && !quiet_)
    observer_.note(fmt::format(
        "'{}' is not up to date: {} of its stored objects are missing ({}{}); it "
        "trains again (an imported model: import it again)",
        model.name, missing->size(), store_->objects().path_for(missing->front().digest).string(),
        missing->size() > 1 ? ", ..." : ""));
  return false;
}

Result<std::vector<const spec::Model*>> Session::select(const TrainRequest& request) {
  std::vector<const spec::Model*> chosen;
  for (const std::string& name : request.models) {
    auto found = find_spec_model(ws_, name);
    if (!found) return found.status();
    const spec::Model* m = *found;
    if (!in_scope(*m, request.scope))
      return invalid_argument("'" + name + "' is " +
                              (m->is_base() ? "a base: train it with `scion train`"
                                            : "a descendant: train it with `scion adapt`"));
    chosen.push_back(m);
  }
  if (request.models.empty())
    for (const spec::Model& m : ws_.models)
      if (in_scope(m, request.scope)) chosen.push_back(&m);
  std::set<const spec::Model*> pending;
  for (const spec::Model* m : chosen) {
    if (!m->training) {
      if (m->is_base() && !m->import_path.empty()) {
        auto fresh = up_to_date(*m);
        if (!fresh) return fresh.status();
        if (!*fresh)
          return invalid_argument("base '" + m->name +
                                  "' is imported, not trained: run `scion import " +
                                  m->import_path + " --as " + m->name + "` first");
      }
      continue;
    }
    auto fresh = up_to_date(*m);
    if (!fresh) return fresh.status();
    // An interrupted `--force` run leaves a checkpoint of a model that is still up to
    // date with its earlier parameters: --resume means to finish that run.
    const bool resumable = request.resume && std::filesystem::exists(checkpoint_path(*m));
    if (!*fresh || request.force || resumable) pending.insert(m);
  }
  // Models that share modules train as one unit: one of them pending brings the others.
  for (const spec::Model* m : std::vector<const spec::Model*>(pending.begin(), pending.end()))
    for (const spec::Model* partner : ws_.training_unit(*m))
      if (pending.insert(partner).second && !quiet_)
        observer_.note("'" + partner->name + "' trains too: it shares modules with '" + m->name +
                       "'");
  std::vector<const spec::Model*> ordered;  // spec order
  for (const spec::Model& m : ws_.models) {
    if (pending.count(&m)) {
      ordered.push_back(&m);
    } else if (m.training && std::find(chosen.begin(), chosen.end(), &m) != chosen.end()) {
      outcome_.models.emplace_back(m.name, "up to date");
    }
  }
  return ordered;
}

Result<std::shared_ptr<const data::TokenizedDataset>> Session::dataset_for(
    const spec::Model& model) {
  const spec::TrainingSpec& recipe = *model.training;
  const spec::Architecture& arch = ws_.architecture_of(model);
  const int max_length = recipe.max_length > 0 ? recipe.max_length : arch.max_length;
  const std::string key =
      fmt::format("{}/{}/{}", recipe.dataset, static_cast<int>(recipe.objective), max_length);
  if (auto it = datasets_.find(key); it != datasets_.end()) return it->second;
  auto tokenizer = text::make_tokenizer(arch.tokenizer, ws_.root_dir);
  if (!tokenizer) return tokenizer.status();
  const spec::Dataset& dataset = *ws_.find_dataset(recipe.dataset);
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
Status Session::load_inherited(const spec::Model& model, const runtime::ParameterStore& pool,
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
    if (view->dtype == runtime::DType::kF32)
      std::memcpy(view->data, stored.data, view->bytes());
    else
      runtime::convert(stored, *view);  // a frozen trunk weight held in bf16
  }
  return Status::ok();
}

Status Session::commit(runtime::TrainingJob& job, std::int64_t run_id,
                       const std::map<std::string, std::string>& inherited_digests) {
  std::vector<lineage::ParameterWrite> writes;
  // A frozen weight held in bf16 is stored as the parent's fp32 value, unrounded.
  std::optional<lineage::LoadedParameters> parent;
  for (const runtime::ParameterSpec& p : job.table()) {
    const runtime::Tensor* view = job.parameters().find(p.name);
    lineage::ParameterWrite w;
    w.name = p.name;
    w.shape = p.shape;
    w.bytes = {static_cast<const std::byte*>(view->data), view->bytes()};
    if (view->dtype != runtime::DType::kF32) {
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
  auto add = [&](const std::string& prefix,
                 const std::vector<std::pair<std::string, runtime::Tensor>>& list) {
    for (const auto& [name, t] : list)
      tensors.push_back({prefix + name,
                         lineage::DType::kF32,
                         t.shape,
                         {static_cast<const std::byte*>(t.data), t.bytes()}});
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

runtime::Backend& Session::backend_for(spec::Precision precision) {
  std::unique_ptr<runtime::Backend>& backend = backends_[precision];
  if (!backend)
    backend = runtime::make_cpu_backend(runtime::CpuBackendOptions{
        .precision = precision == spec::Precision::kBF16 ? runtime::Precision::kBF16
                                                         : runtime::Precision::kF32});
  return *backend;
}

// training_groups() never mixes precisions, so the first member's is the group's.
Status Session::train_group(const std::vector<const spec::Model*>& members, lineage::RunKind kind) {
  const auto start = Clock::now();
  // The group's own peak: earlier groups' buffers are freed, but the process's peak
  // would still count them.
  runtime::reset_peak_resident();
  const std::int64_t resident_before = runtime::resident_bytes().value_or(0);
  runtime::Backend& backend = backend_for(members.front()->training->precision);
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
    // Every member's parameters first: a share unit's group needs all of its members' views.
    std::map<std::string, runtime::ParameterBinding> bindings;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const spec::Model& model = *members[i];
      auto added = pool.add_model(ws_, model);
      if (!added) return added.status();
      runtime::ParameterBinding binding = std::move(*added);
      SCION_RETURN_IF_ERROR(load_inherited(model, pool, binding, digests[i]));
      runtime::initialize_new_parameters(ws_, model, binding, model.training->seed, shares_);
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
      auto data = dataset_for(model);
      if (!data) return data.status();
      runtime::ShareGroup* share = nullptr;
      if (!shares_.shared_by(model.name).empty())
        share = share_groups.at(ws_.training_unit(model).front()->name).get();
      auto job =
          runtime::TrainingJob::create(ws_, model, bindings.at(model.name), *data, backend, share);
      if (!job) return job.status();
      if (!share) SCION_RETURN_IF_ERROR(resume_from_checkpoint(**job));
      lineage::RunStart run{.kind = kind,
                            .recipe_hash = model.recipe_hash,
                            .dataset_digest = ws_.find_dataset(model.training->dataset)->digest,
                            .seed = model.training->seed,
                            .hyperparameters = spec::canonical_recipe(ws_, model)};
      Result<std::int64_t> run_id = std::int64_t{0};  // the other ranks record no runs
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
  if (Status agreed = comm_.agree(set_up()); !agreed.is_ok()) {
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
    Status saved = store_->append_metrics(run_ids.at(job), buffered);
    buffered.clear();
    return saved;
  };
  runtime::TrainerCallbacks callbacks;
  callbacks.on_step = [&](const runtime::StepReport& r) -> Status {
    tokens += r.tokens;
    ModelOutcome& outcome = outcome_of(*r.job);
    outcome.steps = r.step;
    outcome.final_loss = r.loss;
    lineage::StepMetrics metrics;
    metrics.step = r.step;
    metrics.loss = r.loss;
    metrics.lr = r.lr;
    if (r.validation) {
      outcome.val_loss = r.validation->loss;
      metrics.validation["val_loss"] = r.validation->loss;
      if (r.validation->accuracy) {
        outcome.val_accuracy = r.validation->accuracy;
        metrics.validation["val_accuracy"] = *r.validation->accuracy;
      }
    }
    observer_.step(r, members.size());
    // A share unit checkpoints as a whole, by its group's steps, once per step.
    const runtime::ShareGroup* share = r.job->share_group();
    const bool due = share ? share->steps_done() % kCheckpointEvery == 0 && !share->finished() &&
                                 unit_saved_at[share] != share->steps_done()
                           : r.step % kCheckpointEvery == 0 && !r.job->finished();
    if (!writer_) return Status::ok();
    if (due) {
      SCION_RETURN_IF_ERROR(save_unit_checkpoints(*r.job));
      if (share) unit_saved_at[share] = share->steps_done();
    }
    std::vector<lineage::StepMetrics>& buffered = unsaved_metrics[r.job];
    buffered.push_back(std::move(metrics));
    if (due || buffered.size() >= kMetricsEvery) return save_metrics(r.job);
    return Status::ok();
  };
  // A diverged job stores nothing and keeps its last checkpoint, which holds only values
  // from before the divergence; its group goes on without it.
  callbacks.on_job_diverged = [&](runtime::TrainingJob& job) -> Status {
    SCION_RETURN_IF_ERROR(save_metrics(&job));
    ModelOutcome& outcome = outcome_of(job);
    outcome.status = "diverged";
    outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    outcome_.diverged.push_back(divergence_message(job));
    if (!writer_) return Status::ok();
    return store_->finish_run(run_ids.at(&job), lineage::RunStatus::kDiverged,
                              outcome_.diverged.back());
  };
  callbacks.on_job_finished = [&](runtime::TrainingJob& job) -> Status {
    SCION_RETURN_IF_ERROR(save_metrics(&job));
    ModelOutcome& outcome = outcome_of(job);
    outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    outcome.status = "trained";
    if (!writer_) return Status::ok();
    SCION_RETURN_IF_ERROR(commit(job, run_ids.at(&job), digests[index_of.at(&job)]));
    std::error_code ignored;  // a leftover checkpoint is harmless: the model is up to date
    std::filesystem::remove(checkpoint_path(job.model()), ignored);
    return Status::ok();
  };

  std::vector<runtime::TrainingJob*> raw;
  for (auto& job : jobs) raw.push_back(job.get());
  runtime::FamilyTrainer trainer(backend, {.communicator = &comm_});
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

// `waiting` less the models below one that diverged: their parent will not be stored.
std::vector<const spec::Model*> Session::without_descendants_of_diverged(
    std::vector<const spec::Model*> waiting, std::set<std::string>& waiting_names) {
  std::set<std::string> diverged;
  for (const ModelOutcome& o : outcome_.models)
    if (o.status == "diverged") diverged.insert(o.name);
  std::vector<const spec::Model*> kept;
  for (const spec::Model* m : waiting) {
    const auto ancestry = ws_.ancestry(*m);
    auto blocked_by = std::find_if(ancestry.begin(), ancestry.end(), [&](const spec::Model* a) {
      return diverged.count(a->name) > 0;
    });
    if (blocked_by == ancestry.end()) {
      kept.push_back(m);
      continue;
    }
    waiting_names.erase(m->name);
    outcome_.models.emplace_back(m->name, "not trained: '" + (*blocked_by)->name + "' diverged");
  }
  return kept;
}

// Why `model` cannot train yet: its parent is not stored for its current recipe, and the
// command that stores it (an imported base is imported, not trained).
Status Session::parent_missing(const spec::Model& model) const {
  const spec::Model& parent = *ws_.find_model(model.from);
  if (!parent.import_path.empty())
    return invalid_argument("'" + model.name + "' needs its parent '" + parent.name +
                            "' imported first: run `scion import " + parent.import_path + " --as " +
                            parent.name + "`");
  return invalid_argument("'" + model.name + "' needs its parent '" + parent.name +
                          "' trained first: run `scion run`, or `scion " +
                          (parent.is_base() ? "train " : "adapt ") + parent.name + "`");
}

Result<TrainingOutcome> Session::run(const TrainRequest& request) {
  resume_ = request.resume;
  quiet_ = request.quiet;
  auto pending = select(request);
  if (!pending) return pending.status();
  const std::int64_t budget = request.memory_budget_mib > 0 ? request.memory_budget_mib << 20
                                                            : default_memory_budget_bytes();
  if (!request.ignore_memory_limit)
    // Agreed: the memory available may differ between the ranks' moments of reading it.
    if (Status fits =
            comm_.agree(check_memory(ws_, *pending, budget, request.memory_budget_mib << 20));
        !fits.is_ok())
      return fits;

  // Waves: a model is ready once its parent's parameters for the current recipe are in
  // the store (stored earlier, or trained by an earlier wave).
  std::vector<const spec::Model*> waiting = *pending;
  std::set<std::string> waiting_names;
  for (const spec::Model* m : waiting) waiting_names.insert(m->name);
  Status status;
  while (!waiting.empty() && status.is_ok()) {
    std::set<const spec::Model*> ready;
    for (const spec::Model* m : waiting) {
      if (m->is_base() || waiting_names.count(m->from)) {
        if (m->is_base()) ready.insert(m);
        continue;
      }
      auto fresh = up_to_date(*ws_.find_model(m->from));
      if (!fresh) return fresh.status();
      if (!*fresh) {
        status = parent_missing(*m);
        break;
      }
      ready.insert(m);
    }
    // A share unit waits until every member's parent is trained.
    std::vector<const spec::Model*> wave, later;
    for (const spec::Model* m : waiting) {
      const auto unit = ws_.training_unit(*m);
      const bool unit_ready = std::all_of(unit.begin(), unit.end(), [&](const spec::Model* u) {
        return ready.count(u) > 0 || !waiting_names.count(u->name);
      });
      (ready.count(m) && unit_ready ? wave : later).push_back(m);
    }
    if (status.is_ok() && wave.empty())
      status = internal_error("no model can train: the remaining ones wait for each other");
    if (!status.is_ok()) break;
    for (const auto& members : training_groups(ws_, wave, budget)) {
      const auto kind =
          members.front()->is_base() ? lineage::RunKind::kTrain : lineage::RunKind::kAdapt;
      status = train_group(members, kind);
      if (!status.is_ok()) break;
    }
    for (const spec::Model* m : wave) waiting_names.erase(m->name);
    waiting = without_descendants_of_diverged(std::move(later), waiting_names);
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
  if (!request.precision && !request.recompute)
    return Session(ws, store, observer, interrupted, communicator).run(request);
  spec::Workspace overridden = ws;
  for (spec::Model& model : overridden.models) {
    if (!model.training) continue;
    if (request.precision) model.training->precision = *request.precision;
    if (request.recompute) model.training->recompute = true;
  }
  spec::set_recipe_hashes(overridden);
  return Session(overridden, store, observer, interrupted, communicator).run(request);
}

}  // namespace scion::workbench
