#include "workbench/training_groups.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "runtime/cpu/onednn_gemm.h"
#include "runtime/model/adaptation_method.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/parameter_table.h"
#include "runtime/training/family_trainer.h"

namespace scion::workbench {
namespace {

// One job's share of a group: everything but the frozen base parameters, which the group
// holds once (`base_bytes`), and its activations (`activation_bytes`, over `rows` token
// rows a step), which a group holds only for the rows of one pass.
struct JobMemory {
  std::int64_t base_bytes = 0;
  std::int64_t own_bytes = 0;
  std::int64_t activation_bytes = 0;
  std::int64_t rows = 1;
};

// Bytes a training group holds parameter `p` of `m` in: 2 for a trunk linear weight the
// model runs frozen in a bf16 group (runtime/model/parameter_binding.h), 4 otherwise.
std::int64_t bytes_per_parameter(const spec::Model& m, const runtime::ParameterSpec& p) {
  const bool bf16 = m.training->precision == spec::Precision::kBF16;
  return bf16 && !p.trainable && runtime::is_trunk_linear_weight(p.name) ? 2 : 4;
}

JobMemory job_memory(const spec::Workspace& ws, const spec::Model& m) {
  const std::string& base = ws.ancestry(m).back()->name;
  std::int64_t total = 0, trainable = 0, frozen_base_bytes = 0;
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, m)) {
    total += p.numel();
    if (p.trainable)
      trainable += p.numel();
    else if (p.introduced_by == base)
      frozen_base_bytes += bytes_per_parameter(m, p) * p.numel();
  }
  const TrainingMemory mem = estimate_training_memory(ws, m, total, trainable);
  const spec::TrainingSpec& t = *m.training;
  const std::int64_t length = t.max_length > 0 ? t.max_length : ws.architecture_of(m).max_length;
  return {frozen_base_bytes, mem.total() - frozen_base_bytes - mem.activations, mem.activations,
          std::max<std::int64_t>(1, t.batch_size * length)};
}

// A group's memory: the frozen base once, every job's own parameters and optimizer state,
// and the activations of its largest pass (FamilyTrainer cuts a step into passes of at
// most max_rows_per_pass rows).
struct GroupMemory {
  std::int64_t base_bytes = 0, own_bytes = 0, activation_bytes = 0, largest_job_activations = 0;
  double activation_bytes_per_row = 0;

  void add(const JobMemory& job) {
    base_bytes = std::max(base_bytes, job.base_bytes);
    own_bytes += job.own_bytes;
    activation_bytes += job.activation_bytes;
    largest_job_activations = std::max(largest_job_activations, job.activation_bytes);
    activation_bytes_per_row =
        std::max(activation_bytes_per_row, static_cast<double>(job.activation_bytes) / job.rows);
  }
  // A pass holds at most max_rows_per_pass rows, or one job's rows when they are more.
  std::int64_t total() const {
    const double pass_rows = static_cast<double>(runtime::TrainerOptions{}.max_rows_per_pass);
    const auto one_pass = std::max(static_cast<std::int64_t>(activation_bytes_per_row * pass_rows),
                                   largest_job_activations);
    return base_bytes + own_bytes + std::min(activation_bytes, one_pass);
  }
};

}  // namespace

TrainingMemory estimate_training_memory(const spec::Workspace& ws, const spec::Model& m,
                                        std::int64_t total, std::int64_t trainable) {
  const spec::Architecture& a = ws.architecture_of(m);
  const spec::TrainingSpec& t = *m.training;
  const spec::OptimizerSpec& o = t.optimizer;
  const std::int64_t optimizer_bytes =
      o.kind == spec::OptimizerKind::kAdamW ? 8 : (o.momentum > 0 ? 4 : 0);
  const std::int64_t B = t.batch_size, T = t.max_length > 0 ? t.max_length : a.max_length;
  // Per token: what one block keeps for backward, and what a pass holds once (the
  // gradient scratch: 8 C + 2 F; embeddings and final norm: 2 C).
  const std::int64_t per_block = 10LL * a.width + 2LL * a.ffn_width + a.heads * T;
  const std::int64_t per_pass = 10LL * a.width + 2LL * a.ffn_width;
  TrainingMemory mem;
  mem.parameters = 4 * total;
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, m))
    mem.parameters -= (4 - bytes_per_parameter(m, p)) * p.numel();
  mem.gradients = 4 * trainable;
  mem.optimizer_state = optimizer_bytes * trainable;
  // Recomputation keeps each block's output (C a token) and one block's activations.
  const std::int64_t blocks = t.recompute ? a.layers * a.width + per_block : a.layers * per_block;
  mem.activations = 4 * B * T * (blocks + per_pass);
  // What each adaptation method's rows and scratch add (AdaptationMethod::training_floats).
  for (const runtime::AdaptationMethod* method : runtime::adaptation_methods())
    mem.activations += 4 * method->training_floats(m.adaptation, a, B * T);
  if (t.precision == spec::Precision::kBF16) {
    // The bf16 products' rounded operand copies (runtime/cpu/bf16_matmul.h) of the widest
    // product: its input rows, its output-gradient rows and its weight.
    const std::int64_t element = runtime::cpu::onednn_info().bf16_kernel ? 2 : 4;
    const std::int64_t widest = std::max<std::int64_t>(a.width, a.ffn_width);
    const std::int64_t widest_out = std::max<std::int64_t>(widest, a.vocab_size);
    mem.activations += element * (B * T * (widest + widest_out) + widest_out * a.width);
  }
  return mem;
}

bool trains_trunk(const spec::Workspace& ws, const spec::Model& model) {
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, model))
    if (p.trainable && p.introduced_by == model.name && !runtime::is_new_parameter(p.name, model))
      return true;
  return model.is_base();
}

std::int64_t default_memory_budget_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::int64_t>(pages) * page_size / 2;
}

std::int64_t group_memory_bytes(const spec::Workspace& ws,
                                const std::vector<const spec::Model*>& group) {
  GroupMemory memory;
  for (const spec::Model* m : group) memory.add(job_memory(ws, *m));
  return memory.total();
}

namespace {

// The model whose trunk tensors `model` runs on: its nearest ancestor that trained some
// (BitFit, full fine-tuning, unfreeze), else its base. Jobs co-batch over one trunk only.
const spec::Model& trunk_source(const spec::Workspace& ws, const spec::Model& model) {
  const auto chain = ws.ancestry(model);
  for (std::size_t i = 1; i < chain.size(); ++i)
    if (trains_trunk(ws, *chain[i])) return *chain[i];
  return *chain.back();
}

}  // namespace

std::vector<std::vector<const spec::Model*>> training_groups(
    const spec::Workspace& ws, const std::vector<const spec::Model*>& models,
    std::int64_t budget_bytes) {
  std::vector<std::vector<const spec::Model*>> groups;
  // Per trunk, precision and recompute setting, the blocks the greedy split may not cut: a share unit's members in `models`
  // (they train together), or one model.
  std::map<std::string, std::vector<std::vector<const spec::Model*>>> by_base;
  std::vector<std::string> base_order;
  std::map<const spec::Model*, std::size_t> block_of;  // unit members already placed
  for (const spec::Model* m : models) {
    if (trains_trunk(ws, *m)) {
      groups.push_back({m});
      continue;
    }
    // Jobs co-batch only over one trunk's tensors, within one precision (a backend runs
    // one) and one recompute setting (a pass runs one).
    const std::string base = trunk_source(ws, *m).name + " " +
                             spec::precision_name(m->training->precision) +
                             (m->training->recompute ? " recompute" : "");
    if (!by_base.count(base)) base_order.push_back(base);
    auto& blocks = by_base[base];
    if (auto placed = block_of.find(m); placed != block_of.end()) {
      blocks[placed->second].push_back(m);
      continue;
    }
    for (const spec::Model* partner : ws.training_unit(*m)) block_of[partner] = blocks.size();
    blocks.push_back({m});
  }
  for (const std::string& base : base_order) {
    // Greedy in spec order: a block joins the open group while the group stays in budget.
    std::vector<const spec::Model*> open;
    GroupMemory memory;
    for (const auto& block : by_base.at(base)) {
      GroupMemory with_block = memory;
      for (const spec::Model* m : block) with_block.add(job_memory(ws, *m));
      if (!open.empty() && budget_bytes > 0 && with_block.total() > budget_bytes) {
        groups.push_back(std::move(open));
        open.clear();
        with_block = {};
        for (const spec::Model* m : block) with_block.add(job_memory(ws, *m));
      }
      open.insert(open.end(), block.begin(), block.end());
      memory = with_block;
    }
    groups.push_back(std::move(open));
  }
  return groups;
}

std::vector<std::vector<const spec::Model*>> training_waves(
    const spec::Workspace& ws, const std::vector<const spec::Model*>& models) {
  const std::set<const spec::Model*> training(models.begin(), models.end());
  // A model's wave: 0 when no model of its share unit waits for a parent that trains too,
  // else one more than the latest wave of those parents. The unit graph is acyclic (the
  // loader checks), so this settles.
  std::map<const spec::Model*, std::size_t> wave_of;
  for (bool changed = true; changed;) {
    changed = false;
    for (const spec::Model& m : ws.models) {
      if (!training.count(&m)) continue;
      std::size_t wave = 0;
      for (const spec::Model* u : ws.training_unit(m)) {
        const spec::Model* parent = u->is_base() ? nullptr : ws.find_model(u->from);
        if (parent && training.count(parent)) wave = std::max(wave, wave_of[parent] + 1);
      }
      if (wave_of[&m] != wave) {
        wave_of[&m] = wave;
        changed = true;
      }
    }
  }
  std::vector<std::vector<const spec::Model*>> waves;
  for (const spec::Model& m : ws.models) {
    if (!training.count(&m)) continue;
    const std::size_t wave = wave_of[&m];
    if (waves.size() <= wave) waves.resize(wave + 1);
    waves[wave].push_back(&m);
  }
  return waves;
}

std::int64_t recipe_steps(const spec::Model& model, std::int64_t examples) {
  const spec::TrainingSpec& t = *model.training;
  if (t.steps > 0) return t.steps;
  const auto kept = static_cast<std::int64_t>(static_cast<double>(examples) *
                                              (1.0 - static_cast<double>(t.validation_split)));
  const std::int64_t batch = std::max(1, t.batch_size);
  const std::int64_t accumulation = std::max(1, t.grad_accumulation);
  const std::int64_t batches = (std::max<std::int64_t>(1, kept) + batch - 1) / batch;
  return t.epochs * std::max<std::int64_t>(1, (batches + accumulation - 1) / accumulation);
}

double training_flops_per_token(const spec::Workspace& ws, const spec::Model& model,
                                std::int64_t total, std::int64_t trainable) {
  const spec::Architecture& a = ws.architecture_of(model);
  const spec::TrainingSpec& t = *model.training;
  const double length = t.max_length > 0 ? t.max_length : a.max_length;
  const double attention = 4.0 * a.layers * length * a.width;
  return 4.0 * static_cast<double>(total) + 2.0 * static_cast<double>(trainable) + 3 * attention;
}

}  // namespace scion::workbench
