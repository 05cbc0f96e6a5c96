#include "spec/workspace.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "spec/vocabulary.h"

namespace scion::spec {

// The spec's words (spec/vocabulary.h), as the C strings older callers take.
const char* dataset_format_name(DatasetFormat format) { return word(format).data(); }
const char* label_type_name(LabelType type) { return word(type).data(); }
const char* head_task_name(HeadTask task) { return word(task).data(); }
const char* precision_name(Precision precision) { return word(precision).data(); }

const Model* Workspace::find_model(std::string_view name) const {
  for (const Model& m : models)
    if (m.name == name) return &m;
  return nullptr;
}

const Dataset* Workspace::find_dataset(std::string_view name) const {
  for (const Dataset& d : datasets)
    if (d.name == name) return &d;
  return nullptr;
}

std::vector<const Model*> Workspace::ancestry(const Model& model) const {
  std::vector<const Model*> chain{&model};
  // The loader rejects cycles through `from`, so this walk ends at a base.
  while (!chain.back()->is_base()) {
    const Model* parent = find_model(chain.back()->from);
    assert(parent != nullptr && "loader guarantees every `from` resolves");
    chain.push_back(parent);
  }
  return chain;
}

const Architecture& Workspace::architecture_of(const Model& model) const {
  return *ancestry(model).back()->architecture;
}

std::vector<const Model*> Workspace::training_unit(const Model& model) const {
  std::set<std::string> unit{model.name};
  // Grow to a fixed point: a share touching the unit brings in all of its models.
  for (bool grew = true; grew;) {
    grew = false;
    for (const Share& share : shares) {
      const bool touches = std::any_of(share.models.begin(), share.models.end(),
                                       [&](const std::string& m) { return unit.count(m) > 0; });
      if (!touches) continue;
      for (const std::string& m : share.models) grew = unit.insert(m).second || grew;
    }
  }
  std::vector<const Model*> members;
  for (const Model& m : models)
    if (unit.count(m.name)) members.push_back(&m);
  return members;
}

const HeadSpec* Workspace::head_of(const Model& model) const {
  for (const Model* m : ancestry(model))
    if (m->adaptation.head) return &*m->adaptation.head;
  return nullptr;
}

HeadTask Workspace::head_task_of(const Model& model) const {
  const HeadSpec* head = head_of(model);
  return head ? head->task : HeadTask::kClassification;
}

Objective Workspace::objective_of(const Model& model) const {
  for (const Model* m : ancestry(model))
    if (m->training) return m->training->objective;
  return architecture_of(model).kind == ArchitectureKind::kDecoder ? Objective::kCausalLm
                                                                   : Objective::kMaskedLm;
}

}  // namespace scion::spec
