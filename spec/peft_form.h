// How a registered adaptation method (spec/adaptation_method.h) is written in, and read
// from, PEFT 0.10's adapter files: its peft_type, its tensors' keys, its part of
// adapter_config.json, and the check of an adapter_config.json against a declaration.
//
// lineage/peft_adapter.cpp owns the files (the layout of the whole adapter, heads, what no
// method may combine) and knows each Hugging Face base's module paths; it hands them to
// the method as a PeftLayout, so a method names modules without knowing the bases. A
// method without a PeftForm has no PEFT adapter (export refuses it, import does not read it).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scion::spec {

struct Architecture;
class MethodSettings;

// A tensor on the host in float32: a model's parameter under scion's name, or an adapter
// file's tensor under PEFT's key.
struct PeftTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

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

  // The linears (kLinearTargets names) whose weights the module holding `target` fuses, in
  // the order of its output rows: {"q", "k", "v"} for GPT-2's c_attn; {target} for a
  // module of its own, and for a target the base lacks.
  virtual std::vector<std::string> module_targets(std::string_view target) const = 0;

  // The shortest trailing part of the module holding `target` (below a layer) that ends no
  // other linear module's name, as PEFT matches a target_modules name: "query",
  // "attention.output.dense"; "" when none is unique.
  virtual std::string module_suffix(std::string_view target) const = 0;
};

// A parameter on one linear, "blk.<layer>.<stem><marker><rest>" (a method's parameter
// names: blk.0.attn_q.lora.m1.a with marker ".lora.m1."), parsed: the layer, the linear as
// a kLinearTargets name ("q", "ffn_out") and what follows the marker ("a"). nullopt for a
// name of another form.
struct LinearParameter {
  int layer = 0;
  std::string target;
  std::string rest;
};
std::optional<LinearParameter> linear_parameter(std::string_view name, std::string_view marker);

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

  // The adapter file's tensors of the model's own parameters `own` (scion's names, each
  // one that tensor_key names), keyed below the tuner's root. By default each parameter is
  // its own tensor under tensor_key; a method whose parameters PEFT holds combined (LoRA's
  // on the parts of GPT-2's fused c_attn) overrides it.
  virtual std::vector<PeftTensor> tensors(const std::vector<PeftTensor>& own,
                                          const std::string& model, const PeftLayout& layout) const;

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
