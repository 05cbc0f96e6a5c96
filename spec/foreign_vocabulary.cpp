#include "spec/foreign_vocabulary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "spec/workspace.h"

namespace scion::spec {
namespace {

// Hugging Face module names (the last components of a module path) and the linears they
// hold, per family: BERT/RoBERTa, GPT-2, Llama, DistilBERT.
struct ModuleTargets {
  std::string_view module;
  std::string_view targets;
};
constexpr ModuleTargets kModuleTargets[] = {{"query", "q"},
                                            {"key", "k"},
                                            {"value", "v"},
                                            {"q_proj", "q"},
                                            {"k_proj", "k"},
                                            {"v_proj", "v"},
                                            {"o_proj", "o"},
                                            {"q_lin", "q"},
                                            {"k_lin", "k"},
                                            {"v_lin", "v"},
                                            {"out_lin", "o"},
                                            {"c_attn", "q, k, v"},
                                            {"attention.output.dense", "o"},
                                            {"attn.c_proj", "o"},
                                            {"intermediate.dense", "ffn_in"},
                                            {"up_proj", "ffn_in"},
                                            {"c_fc", "ffn_in"},
                                            {"lin1", "ffn_in"},
                                            {"gate_proj", "ffn_gate"},
                                            {"down_proj", "ffn_out"},
                                            {"mlp.c_proj", "ffn_out"},
                                            {"lin2", "ffn_out"},
                                            {"output.dense", "ffn_out"}};

// A key of another tool: where scion keeps it (a key of the same mapping) and how to
// write it; "{}" stands for the value as written.
struct ForeignKey {
  std::string_view key;
  std::string_view scion_key;
  std::string_view write;
};
constexpr ForeignKey kForeignKeys[] = {
    {"lr", "optimizer", "the learning rate is optimizer.lr: write optimizer: {{lr: {}}}"},
    {"learning_rate", "optimizer",
     "the learning rate is optimizer.lr: write optimizer: {{lr: {}}}"},
    {"weight_decay", "optimizer", "write optimizer: {{weight_decay: {}}}"},
    {"warmup_steps", "schedule", "write schedule: {{warmup_steps: {}}}"},
    {"num_train_epochs", "epochs", "write epochs: {}"},
    {"max_steps", "steps", "write steps: {}"},
    {"per_device_train_batch_size", "batch_size", "write batch_size: {}"},
    {"gradient_accumulation_steps", "grad_accumulation", "write grad_accumulation: {}"},
    {"r", "rank", "PEFT's r is rank: write rank: {}"},
    {"lora_alpha", "alpha", "PEFT's lora_alpha is alpha: write alpha: {}"},
    {"lora_dropout", "dropout", "PEFT's lora_dropout is dropout: write dropout: {}"},
};

// The value as the user wrote it, or "..." for a mapping or a list.
std::string written(const YamlNode& value) { return value.is_scalar() ? value.value : "..."; }

// "targets: [q, v]" from PEFT's target_modules, or the names to use when some module has
// no single translation.
std::string targets_hint(const YamlNode& value) {
  std::vector<std::string> targets;
  bool all = value.is_sequence() && !value.items.empty();
  bool fused = false;
  if (value.is_sequence())
    for (const auto& item : value.items) {
      const std::string module = item->is_scalar() ? item->value : "";
      const bool ours = std::find(std::begin(kLinearTargets), std::end(kLinearTargets), module) !=
                        std::end(kLinearTargets);
      const std::string target = ours ? module : linear_targets_of_module(module);
      fused = fused || target == "q, k, v";
      if (target.empty())
        all = false;
      else if (std::find(targets.begin(), targets.end(), target) == targets.end())
        targets.push_back(target);
    }
  const std::string names = "scion names the linears q, k, v, o, ffn_in, ffn_out, ffn_gate";
  if (!all) return fmt::format("target_modules is PEFT's key: write targets: [...] ({})", names);
  // PEFT's LoRA on GPT-2's fused c_attn shares one A across q, k and v; scion's has one
  // LoRA per linear, so the translation is the nearest recipe, not the same one.
  return fmt::format("target_modules is PEFT's key: write targets: [{}] ({}{})",
                     fmt::join(targets, ", "), names,
                     fused ? "; c_attn becomes a LoRA on each of q, k and v" : "");
}

}  // namespace

std::string linear_targets_of_module(std::string_view module) {
  for (const ModuleTargets& m : kModuleTargets) {
    // A full module path matches by its last components: "bert.encoder.layer.0.attention.
    // self.query" ends in ".query".
    const bool ends = module.size() > m.module.size() && module.ends_with(m.module) &&
                      module[module.size() - m.module.size() - 1] == '.';
    if (module == m.module || ends) return std::string(m.targets);
  }
  return "";
}

std::string foreign_key_hint(std::string_view key, const YamlNode& value,
                             std::span<const std::string_view> allowed) {
  const auto allows = [&](std::string_view k) {
    return std::find(allowed.begin(), allowed.end(), k) != allowed.end();
  };
  if (key == "target_modules" && allows("targets")) return "; " + targets_hint(value);
  for (const ForeignKey& f : kForeignKeys)
    if (f.key == key && allows(f.scion_key))
      return "; " + fmt::format(fmt::runtime(f.write), written(value));
  return "";
}

}  // namespace scion::spec
