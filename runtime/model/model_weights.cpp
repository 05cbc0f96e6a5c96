#include "runtime/model/model_weights.h"

#include <algorithm>
#include <map>

#include "runtime/backend.h"

namespace scion::runtime {
namespace {

struct Slot {
  const float* value = nullptr;             // null when held in bf16
  const std::uint16_t* value_bf16 = nullptr;  // a frozen trunk linear weight of a bf16 pool
  float* grad = nullptr;
  std::int64_t rows = 0;  // shape[0]
};

class Resolver {
 public:
  Resolver(const spec::Model& model, const std::vector<ParameterSpec>& table,
           const ParameterBinding& params, const ParameterBinding* grads) {
    for (const ParameterSpec& p : table) {
      const Tensor* value = params.find(p.name);
      if (!value) {
        status_ = not_found("model '" + model.name + "': parameter '" + p.name +
                            "' is not bound; load or initialise it before running the model");
        return;
      }
      if (value->shape != p.shape) {
        status_ = invalid_argument("model '" + model.name + "': parameter '" + p.name +
                                   "' has shape " + shape_string(value->shape) + ", expected " +
                                   shape_string(p.shape));
        return;
      }
      Slot slot{nullptr, nullptr, nullptr, p.shape.empty() ? 1 : p.shape[0]};
      if (value->dtype == DType::kBF16 && is_trunk_linear_weight(p.name) && !p.trainable) {
        slot.value_bf16 = static_cast<const std::uint16_t*>(value->data);
      } else if (value->dtype == DType::kF32) {
        slot.value = value->f32();
      } else {
        status_ = invalid_argument("model '" + model.name + "': parameter '" + p.name +
                                   "' is held in " + dtype_name(value->dtype) +
                                   "; only frozen trunk linear weights may be (bf16)");
        return;
      }
      if (p.trainable && grads) {
        const Tensor* grad = grads->find(p.name);
        if (!grad || grad->shape != p.shape) {
          status_ = not_found("model '" + model.name + "': trainable parameter '" + p.name +
                              "' has no gradient view of shape " + shape_string(p.shape));
          return;
        }
        slot.grad = grad->f32();
      }
      slots_[p.name] = slot;
    }
  }

  const Status& status() const { return status_; }
  bool has(const std::string& name) const { return slots_.count(name) > 0; }
  const Slot& at(const std::string& name) const { return slots_.at(name); }
  bool trained(const std::string& name) const { return has(name) && at(name).grad != nullptr; }
  // What an adaptation method binds by (runtime/model/adaptation_method.h).
  ParameterLookup lookup() const {
    return [this](const std::string& name) -> std::optional<BoundParameter> {
      if (!has(name)) return std::nullopt;
      return BoundParameter{at(name).value, at(name).grad};
    };
  }

  // RMSNorm has no bias: its bias pointers stay null.
  NormWeights norm(const std::string& stem) const {
    const Slot& w = at(stem + ".weight");
    NormWeights n{w.value, nullptr, w.grad, nullptr};
    if (has(stem + ".bias")) {
      n.bias = at(stem + ".bias").value;
      n.dbias = at(stem + ".bias").grad;
    }
    return n;
  }
  LinearWeights linear(const std::string& stem, int in, int out) const {
    const Slot& w = at(stem + ".weight");
    LinearWeights l{w.value, nullptr, w.grad, nullptr, in, out, w.value_bf16};
    if (has(stem + ".bias")) {
      l.bias = at(stem + ".bias").value;
      l.dbias = at(stem + ".bias").grad;
    }
    return l;
  }

 private:
  Status status_;
  std::map<std::string, Slot> slots_;
};

std::string block_prefix(int l) { return "blk." + std::to_string(l) + "."; }

PoolMode pool_mode(spec::Pooling pooling) {
  switch (pooling) {
    case spec::Pooling::kCls: return PoolMode::kCls;
    case spec::Pooling::kMean: return PoolMode::kMean;
    case spec::Pooling::kLast: return PoolMode::kLast;
  }
  return PoolMode::kCls;
}

// The classifier: the nearest head up the ancestry, else the base's.
Status resolve_classifier(const spec::Workspace& ws, const spec::Model& model,
                          const Resolver& r, ModelWeights& w) {
  const int C = w.arch.width;
  for (const spec::Model* m : ws.ancestry(model)) {
    const std::string stem = m->is_base() ? "head" : "head." + m->name;
    if (!r.has(stem + ".weight")) continue;
    const auto K = static_cast<int>(r.at(stem + ".weight").rows);
    w.has_classifier = true;
    w.classifier.linear = r.linear(stem, C, K);
    w.classifier.task = ws.head_task_of(model);
    if (m->adaptation.head)
      w.classifier.pooling = pool_mode(m->adaptation.head->pooling);
    else
      w.classifier.pooling = w.arch.kind == spec::ArchitectureKind::kDecoder ? PoolMode::kLast
                                                                              : PoolMode::kCls;
    return Status::ok();
  }
  return invalid_argument("model '" + model.name +
                          "' has no classification head (neither its own `head:` nor an "
                          "ancestor's); add an adaptation `head:` with labels to classify");
}

void resolve_adapters(const spec::Workspace& ws, const spec::Model& model, const Resolver& r,
                      ModelWeights& w) {
  std::vector<const spec::Model*> chain = ws.ancestry(model);
  std::reverse(chain.begin(), chain.end());  // base first
  const ParameterLookup lookup = r.lookup();
  for (const spec::Model* m : chain) {
    const std::string& n = m->name;
    const spec::Adaptation& ad = m->adaptation;
    if (r.has("prompt." + n + ".embeddings")) {
      const Slot& s = r.at("prompt." + n + ".embeddings");
      w.prompts.push_back({s.value, s.grad, ad.prompt->virtual_tokens});
    }
    for (int l = 0; l < w.arch.layers; ++l) {
      const std::string p = block_prefix(l);
      BlockWeights& blk = w.blocks[l];
      for (int i = 0; i < kLinearCount; ++i)
        for (const AdaptationMethod* method : adaptation_methods())
          if (auto bound = method->bind(*m, l, kLinearStems[i], lookup))
            blk.adaptations[i].push_back(std::move(bound));
      if (r.has(p + "prefix." + n + ".keys")) {
        const Slot& k = r.at(p + "prefix." + n + ".keys");
        const Slot& v = r.at(p + "prefix." + n + ".values");
        blk.prefixes.push_back({k.value, v.value, k.grad, v.grad, ad.prefix->virtual_tokens});
      }
      for (int site = 0; site < kBlockSiteCount; ++site)
        for (const AdaptationMethod* method : adaptation_methods())
          if (auto bound = method->bind_block(*m, w.arch, l, static_cast<BlockSite>(site), lookup))
            blk.block_adaptations[site].push_back(std::move(bound));
    }
  }
}

// Whether every adaptation can run on its linear as the pool holds it (a method that reads
// the weight needs it in fp32: LinearAdaptation::refusal).
Status check_adaptation_refusals(const spec::Model& model, const ModelWeights& w) {
  for (int l = 0; l < w.arch.layers; ++l)
    for (int i = 0; i < kLinearCount; ++i)
      for (const auto& adaptation : w.blocks[l].adaptations[i]) {
        const std::string why = adaptation->refusal(block_prefix(l) + kLinearStems[i],
                                                    w.blocks[l].linear[i].weight != nullptr);
        if (!why.empty()) return invalid_argument("model '" + model.name + "': " + why);
      }
  return Status::ok();
}

// The passes hand an input-site adaptation the linear's own input, so a linear carries at
// most one adaptation at its input and one at its output (the spec's rules across models
// keep it so); products beside the frozen one (kBeside) may stack.
Status check_one_adaptation_per_site(const spec::Model& model, const ModelWeights& w) {
  for (int l = 0; l < w.arch.layers; ++l)
    for (int i = 0; i < kLinearCount; ++i)
      for (const LinearSite site : {LinearSite::kInput, LinearSite::kOutput}) {
        const auto& bound = w.blocks[l].adaptations[i];
        if (std::count_if(bound.begin(), bound.end(),
                          [site](const auto& a) { return a->site() == site; }) > 1)
          return invalid_argument("model '" + model.name + "': " + block_prefix(l) +
                                  kLinearStems[i] + " carries two adaptations on its " +
                                  (site == LinearSite::kInput ? "input" : "output") +
                                  " (its own and an ancestor's); adapt another linear");
      }
  return Status::ok();
}

}  // namespace

int ModelWeights::prompt_tokens() const {
  int P = 0;
  for (const PromptWeights& p : prompts) P += p.tokens;
  return P;
}

int ModelWeights::prefix_tokens(int block) const {
  int P = 0;
  for (const PrefixWeights& p : blocks[block].prefixes) P += p.tokens;
  return P;
}

Result<ModelWeights> resolve_model(const spec::Workspace& workspace, const spec::Model& model,
                                   spec::Objective objective, const ParameterBinding& params,
                                   const ParameterBinding* grads) {
  const std::vector<ParameterSpec> table = parameter_table(workspace, model);
  Resolver r(model, table, params, grads);
  if (!r.status().is_ok()) return r.status();
  ModelWeights w;
  w.name = model.name;
  w.arch = workspace.architecture_of(model);
  w.objective = objective;
  w.tok_emb = r.at("tok_emb.weight").value;
  w.dtok_emb = r.at("tok_emb.weight").grad;
  if (w.arch.positions == spec::PositionKind::kLearned) {
    w.pos_emb = r.at("pos_emb.weight").value;
    w.dpos_emb = r.at("pos_emb.weight").grad;
  }
  if (w.arch.type_vocab_size > 0) {
    w.type_emb = r.at("type_emb.weight").value;
    w.dtype_emb = r.at("type_emb.weight").grad;
  }
  if (w.arch.norm == spec::NormPlacement::kPost) w.emb_ln = r.norm("emb_ln");
  if (w.arch.norm == spec::NormPlacement::kPre) w.ln_f = r.norm("ln_f");
  if (w.arch.pooler) w.pooler = r.linear("pooler", w.arch.width, w.arch.width);
  if (w.arch.tie_embeddings) {
    w.lm_head = w.tok_emb;
    w.dlm_head = w.dtok_emb;
  } else {
    w.lm_head = r.at("lm_head.weight").value;
    w.dlm_head = r.at("lm_head.weight").grad;
  }
  w.blocks.resize(w.arch.layers);
  for (int l = 0; l < w.arch.layers; ++l) {
    const std::string p = block_prefix(l);
    BlockWeights& blk = w.blocks[l];
    blk.ln1 = r.norm(p + "ln1");
    blk.ln2 = r.norm(p + "ln2");
    for (int i = 0; i < kLinearCount; ++i) {
      if (i == kFfnGate && !w.arch.gated_ffn()) continue;  // stays empty: weight null
      const auto [out, in] = linear_shape(w.arch, kLinearStems[i]);
      blk.linear[i] = r.linear(p + kLinearStems[i], static_cast<int>(in), static_cast<int>(out));
    }
  }
  resolve_adapters(workspace, model, r, w);
  SCION_RETURN_IF_ERROR(check_adaptation_refusals(model, w));
  SCION_RETURN_IF_ERROR(check_one_adaptation_per_site(model, w));
  if (objective == spec::Objective::kClassification)
    SCION_RETURN_IF_ERROR(resolve_classifier(workspace, model, r, w));
  // Which parts train: trunk names are exactly the ones without an adapter/head marker.
  w.lowest_trained_block = w.arch.layers;
  for (const ParameterSpec& p : table) {
    if (!p.trainable || !grads) continue;
    const bool in_block = p.name.starts_with("blk.");
    const bool adapter = method_of_parameter(p.name) != nullptr ||
                         p.name.find(".prefix.") != std::string::npos ||
                         p.name.starts_with("prompt.") || p.name.starts_with("head");
    if (!adapter) w.trunk_trainable = true;
    if (in_block) {
      const int l = std::stoi(p.name.substr(4, p.name.find('.', 4) - 4));
      w.lowest_trained_block = std::min(w.lowest_trained_block, l);
    } else if (!p.name.starts_with("head") && !p.name.starts_with("ln_f") &&
               !p.name.starts_with("pooler.") &&
               !(p.name == "lm_head.weight")) {
      w.lowest_trained_block = -1;  // embeddings, emb_ln or prompts
    }
  }
  return w;
}

Status merge_adaptations(Backend& backend, const spec::Workspace& workspace,
                         const spec::Model& model, const ParameterBinding& params,
                         const ParameterBinding& merged) {
  // Folded on the host: a one-off export step, not a training or inference path.
  const std::vector<ParameterSpec> table = parameter_table(workspace, model);
  HostTensors trunk;
  for (const ParameterSpec& p : table)
    if (is_trunk_linear_weight(p.name) ||
        (p.name.starts_with("blk.") && p.name.ends_with(".bias") &&
         is_trunk_linear_weight(p.name.substr(0, p.name.size() - 5) + ".weight")))
      if (const Tensor* t = params.find(p.name)) trunk[p.name] = copy_to_host(backend, *t);
  bool folded = false;
  for (const AdaptationMethod* method : adaptation_methods()) {
    if (!folds_into_weights(*method)) continue;  // the exports refuse such a model first
    HostTensors own;
    for (const ParameterSpec& p : table)
      if (method_of_parameter(p.name) == method && method->parameter_model(p.name) == model.name)
        if (const Tensor* t = params.find(p.name)) own[p.name] = copy_to_host(backend, *t);
    if (own.empty()) continue;
    method->fold(model, own, trunk);
    folded = true;
  }
  if (!folded) return Status::ok();
  for (const auto& [name, values] : trunk) {
    const Tensor* out = merged.find(name);
    if (!out)
      return not_found("merge_adaptations: '" + name + "' of model '" + model.name +
                       "' has no merged destination");
    backend.copy_to_device(out->data, values.data(), out->bytes());
  }
  return Status::ok();
}

}  // namespace scion::runtime
