// How a registered adaptation method (spec/adaptation_method.h) is written in, and read
// from, PEFT 0.10's adapter files: its peft_type, its tensors' keys, its part of
// adapter_config.json, and the check of an adapter_config.json against a declaration.
//
// lineage/peft_adapter.cpp owns the files (the layout of the whole adapter, heads, what no
// method may combine) and knows each Hugging Face base's module paths; it hands them to
// the method as a PeftLayout, so a method names modules without knowing the bases. A
// method without a PeftForm has no PEFT adapter (export refuses it, import does not read it).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scion::spec {

struct Architecture;
class MethodSettings;

// A Hugging Face base as PEFT names its modules, given by lineage/peft_adapter.cpp.
class PeftLayout {
 public:
  virtual ~PeftLayout() = default;

  virtual const Architecture& architecture() const = 0;

  // The task model's module holding linear `target` (a kLinearTargets name) of `layer`, as
  // PEFT matches module names: "bert.encoder.layer.0.attention.self.key". nullopt when the
  // base has no such module (ffn_gate of a FFN without a gate).
  virtual std::optional<std::string> linear_module(int layer, std::string_view target) const = 0;

  // A regular expression PEFT full-matches against exactly the modules of linears
  // `targets` in `layers` (empty: every layer) of the task model.
  virtual std::string linears_regex(const std::vector<std::string>& targets,
                                    const std::vector<int>& layers) const = 0;
};

class PeftForm {
 public:
  virtual ~PeftForm() = default;

  // adapter_config.json's peft_type: "IA3".
  virtual std::string_view peft_type() const = 0;

  // Why these settings on this base make no PEFT adapter scion writes ("" when they do),
  // read after "cannot be exported in PEFT's layout: ".
  virtual std::string export_refusal(const MethodSettings& settings,
                                     const Architecture& arch) const = 0;

  // The adapter file's key of the model's own parameter `name` (scion's name), below the
  // tuner's root ("bert.encoder.layer.0.attention.self.key.ia3_l"); nullopt when the
  // parameter is not this method's or the base has no module for it.
  virtual std::optional<std::string> tensor_key(const std::string& name, const std::string& model,
                                                const PeftLayout& layout) const = 0;

  // Adds the method's keys to adapter_config.json (peft_type among them).
  virtual void add_config(const MethodSettings& settings, const PeftLayout& layout,
                          nlohmann::json& config) const = 0;

  // What an imported adapter_config.json (`config`, an object) says that the declaration
  // `settings` of model `model` does not: one line per problem, appended to `problems`.
  virtual void check_config(const nlohmann::json& config, const MethodSettings& settings,
                            const std::string& model, const PeftLayout& layout,
                            std::vector<std::string>& problems) const = 0;
};

}  // namespace scion::spec
