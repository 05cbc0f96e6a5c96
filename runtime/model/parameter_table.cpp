#include "runtime/model/parameter_table.h"

#include <fnmatch.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "runtime/model/adaptation_method.h"

namespace scion::runtime {
namespace {

using spec::Architecture;
using spec::Model;
using spec::Workspace;

std::string layer_prefix(int layer) { return "blk." + std::to_string(layer) + "."; }

std::vector<int> chosen_layers(const std::vector<int>& listed, int layer_count) {
  if (!listed.empty()) return listed;
  std::vector<int> all(layer_count);
  for (int i = 0; i < layer_count; ++i) all[i] = i;
  return all;
}

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& glob) {
    return fnmatch(glob.c_str(), name.c_str(), 0) == 0;
  });
}

void add_trunk(const Model& base, const Workspace& ws, std::vector<ParameterSpec>& table) {
  const Architecture& a = *base.architecture;
  const std::int64_t C = a.width, V = a.vocab_size, T = a.max_length;
  auto add = [&](std::string name, std::vector<std::int64_t> shape) {
    table.push_back({std::move(name), std::move(shape), base.name, true});
  };
  // RMSNorm has a weight only.
  auto add_norm = [&](const std::string& stem) {
    add(stem + ".weight", {C});
    if (a.norm_kind == spec::NormKind::kLayerNorm) add(stem + ".bias", {C});
  };
  auto add_linear = [&](const std::string& stem) {
    const auto [out, in] = linear_shape(a, stem);
    add(stem + ".weight", {out, in});
    const bool qkv =
        stem.ends_with("attn_q") || stem.ends_with("attn_k") || stem.ends_with("attn_v");
    if (a.linear_bias || (a.qkv_bias && qkv)) add(stem + ".bias", {out});
  };
  add("tok_emb.weight", {V, C});
  if (a.positions == spec::PositionKind::kLearned) add("pos_emb.weight", {T, C});
  if (a.type_vocab_size > 0) add("type_emb.weight", {a.type_vocab_size, C});
  if (a.norm == spec::NormPlacement::kPost) add_norm("emb_ln");
  for (int l = 0; l < a.layers; ++l) {
    const std::string p = layer_prefix(l);
    add_norm(p + "ln1");
    for (const char* stem : {"attn_q", "attn_k", "attn_v", "attn_o"}) add_linear(p + stem);
    add_norm(p + "ln2");
    if (a.gated_ffn()) add_linear(p + "ffn_gate");
    add_linear(p + "ffn_in");
    add_linear(p + "ffn_out");
  }
  if (a.norm == spec::NormPlacement::kPre) add_norm("ln_f");
  if (a.pooler) {
    add("pooler.weight", {C, C});
    add("pooler.bias", {C});
  }
  if (!a.tie_embeddings) add("lm_head.weight", {V, C});
  if (base.training && base.training->objective == spec::Objective::kClassification) {
    const spec::Dataset* data = ws.find_dataset(base.training->dataset);
    const std::int64_t K = data ? static_cast<std::int64_t>(data->labels.size()) : 0;
    add("head.weight", {K, C});
    add("head.bias", {K});
  }
}

// The parameters `model` introduces itself, all trainable when it is trained.
void add_adapters(const Model& model, const Architecture& a, std::vector<ParameterSpec>& table) {
  const std::int64_t C = a.width;
  const std::string& m = model.name;
  auto add = [&](std::string name, std::vector<std::int64_t> shape) {
    table.push_back({std::move(name), std::move(shape), m, true});
  };
  const spec::Adaptation& ad = model.adaptation;
  if (ad.prompt) add("prompt." + m + ".embeddings", {ad.prompt->virtual_tokens, C});
  for (int l = 0; l < a.layers; ++l) {
    const std::string p = layer_prefix(l);
    if (ad.prefix) {
      const auto layers = chosen_layers(ad.prefix->layers, a.layers);
      if (std::find(layers.begin(), layers.end(), l) != layers.end()) {
        add(p + "prefix." + m + ".keys", {ad.prefix->virtual_tokens, C});
        add(p + "prefix." + m + ".values", {ad.prefix->virtual_tokens, C});
      }
    }
    for (const AdaptationMethod* method : adaptation_methods())
      method->add_parameters(model, a, l, table);
  }
  if (ad.head) {
    const auto K = static_cast<std::int64_t>(ad.head->labels.size());
    add("head." + m + ".weight", {K, C});
    add("head." + m + ".bias", {K});
  }
}

// Which inherited parameters `model` trains: BitFit makes the trunk's biases trainable
// (the first `trunk_size` entries: not the biases of ancestors' adapters or heads), full
// fine-tuning everything, then `unfreeze` and `freeze` globs apply, freeze last.
void mark_inherited_trainable(const Model& model, std::size_t trunk_size,
                              std::vector<ParameterSpec>& inherited) {
  const spec::Adaptation& ad = model.adaptation;
  for (std::size_t i = 0; i < inherited.size(); ++i) {
    ParameterSpec& p = inherited[i];
    bool trainable = false;
    if (ad.full) trainable = true;
    if (ad.bitfit && i < trunk_size && p.name.ends_with(".bias")) trainable = true;
    if (matches_any(model.unfreeze, p.name)) trainable = true;
    if (matches_any(model.freeze, p.name)) trainable = false;
    p.trainable = trainable;
    if (trainable) p.introduced_by = model.name;
  }
}

}  // namespace

std::int64_t ParameterSpec::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

bool is_trunk_linear_weight(const std::string& name) {
  if (!name.starts_with("blk.") || !name.ends_with(".weight")) return false;
  const std::size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return false;
  for (std::size_t i = 4; i < dot; ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  const std::string stem = name.substr(dot + 1, name.size() - dot - 1 - 7);  // less ".weight"
  for (const char* linear : {"attn_q", "attn_k", "attn_v", "attn_o", "ffn_in", "ffn_out"})
    if (stem == linear) return true;
  return false;
}

std::string linear_stem(const std::string& target) {
  return target == "q" || target == "k" || target == "v" || target == "o" ? "attn_" + target
                                                                          : target;
}

std::pair<std::int64_t, std::int64_t> linear_shape(const Architecture& arch,
                                                    const std::string& stem) {
  const std::string_view s = std::string_view(stem).substr(stem.rfind('.') + 1);
  if (s == "ffn_in" || s == "ffn_gate") return {arch.ffn_width, arch.width};
  if (s == "ffn_out") return {arch.width, arch.ffn_width};
  if (s == "attn_k" || s == "attn_v") return {arch.kv_width(), arch.width};
  return {arch.width, arch.width};
}

std::vector<ParameterSpec> parameter_table(const Workspace& workspace, const Model& model) {
  std::vector<const Model*> chain = workspace.ancestry(model);  // [model, ..., base]
  const Model& base = *chain.back();
  const Architecture& arch = *base.architecture;
  std::vector<ParameterSpec> table;
  add_trunk(base, workspace, table);
  const std::size_t trunk_size = table.size();
  // Each ancestor in turn (base down to model) adds its adapters and retrains what it
  // trains; what it does not train keeps the value (and author) it inherited.
  for (auto it = chain.rbegin() + 1; it != chain.rend(); ++it) {
    mark_inherited_trainable(**it, trunk_size, table);
    add_adapters(**it, arch, table);
  }
  // Only the model's own choices decide what *it* trains; the flags set while walking
  // the ancestors were about their own training runs.
  if (chain.size() > 1)
    for (ParameterSpec& p : table) p.trainable = p.introduced_by == model.name;
  return table;
}

}  // namespace scion::runtime
