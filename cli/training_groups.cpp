#include "cli/training_groups.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>

#include "runtime/parameter_binding.h"
#include "runtime/parameter_table.h"

namespace scion::cli {
namespace {

// One job's share of a group: everything but the frozen base parameters, which the group
// holds once (`base_bytes`).
struct JobMemory {
  std::int64_t base_bytes = 0;
  std::int64_t own_bytes = 0;
};

JobMemory job_memory(const spec::Workspace& ws, const spec::Model& m) {
  const std::string& base = ws.ancestry(m).back()->name;
  std::int64_t total = 0, trainable = 0, frozen_base = 0;
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, m)) {
    total += p.numel();
    if (p.trainable) trainable += p.numel();
    else if (p.introduced_by == base) frozen_base += p.numel();
  }
  const TrainingMemory mem = estimate_training_memory(ws, m, total, trainable);
  return {4 * frozen_base, mem.total() - 4 * frozen_base};
}

}  // namespace

TrainingMemory estimate_training_memory(const spec::Workspace& ws, const spec::Model& m,
                                        std::int64_t total, std::int64_t trainable) {
  const spec::Architecture& a = ws.architecture_of(m);
  const spec::TrainingSpec& t = *m.training;
  const spec::OptimizerSpec& o = t.optimizer;
  const std::int64_t optimizer_bytes =
      o.kind == spec::OptimizerKind::kAdamW ? 8 : (o.momentum > 0 ? 4 : 0);
  const std::int64_t B = t.batch_size, T = t.max_length > 0 ? t.max_length : a.max_length;
  const std::int64_t per_token = 10LL * a.width + 2LL * a.ffn_width + 2LL * a.heads * T;
  TrainingMemory mem;
  mem.parameters = 4 * total;
  mem.gradients = 4 * trainable;
  mem.optimizer_state = optimizer_bytes * trainable;
  mem.activations = 4 * B * T * a.layers * per_token;
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
  std::int64_t base = 0, own = 0;
  for (const spec::Model* m : group) {
    const JobMemory job = job_memory(ws, *m);
    base = std::max(base, job.base_bytes);
    own += job.own_bytes;
  }
  return base + own;
}

std::vector<std::vector<const spec::Model*>> training_groups(
    const spec::Workspace& ws, const std::vector<const spec::Model*>& models,
    std::int64_t budget_bytes) {
  std::vector<std::vector<const spec::Model*>> groups;
  std::map<std::string, std::vector<const spec::Model*>> by_base;
  std::vector<std::string> base_order;
  for (const spec::Model* m : models) {
    if (trains_trunk(ws, *m)) {
      groups.push_back({m});
      continue;
    }
    const std::string& base = ws.ancestry(*m).back()->name;
    if (!by_base.count(base)) base_order.push_back(base);
    by_base[base].push_back(m);
  }
  for (const std::string& base : base_order) {
    // Greedy in spec order: a job joins the open group while the group stays in budget.
    std::vector<const spec::Model*> open;
    std::int64_t base_bytes = 0, own_bytes = 0;
    for (const spec::Model* m : by_base.at(base)) {
      const JobMemory job = job_memory(ws, *m);
      const std::int64_t with_job = std::max(base_bytes, job.base_bytes) + own_bytes + job.own_bytes;
      if (!open.empty() && budget_bytes > 0 && with_job > budget_bytes) {
        groups.push_back(std::move(open));
        open.clear();
        base_bytes = own_bytes = 0;
      }
      open.push_back(m);
      base_bytes = std::max(base_bytes, job.base_bytes);
      own_bytes += job.own_bytes;
    }
    groups.push_back(std::move(open));
  }
  return groups;
}

std::vector<std::vector<const spec::Model*>> planned_training_groups(const spec::Workspace& ws,
                                                                     std::int64_t budget_bytes) {
  // A model's wave: how many trained ancestors it waits for (the chain up to the first
  // untrained one, e.g. an imported base), as training_session.cpp's waves run when
  // nothing is stored yet.
  std::vector<std::vector<const spec::Model*>> waves;
  for (const spec::Model& m : ws.models) {
    if (!m.training) continue;
    std::size_t wave = 0;
    for (const spec::Model* p = m.is_base() ? nullptr : ws.find_model(m.from); p && p->training;
         p = p->is_base() ? nullptr : ws.find_model(p->from))
      ++wave;
    if (waves.size() <= wave) waves.resize(wave + 1);
    waves[wave].push_back(&m);
  }
  std::vector<std::vector<const spec::Model*>> groups;
  for (const auto& wave : waves)
    for (auto& group : training_groups(ws, wave, budget_bytes)) groups.push_back(std::move(group));
  return groups;
}

}  // namespace scion::cli
