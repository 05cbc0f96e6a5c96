#include "workbench/peft_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <fstream>
#include <iterator>
#include <map>

#include "base/regular_file.h"
#include "lineage/dtype.h"
#include "lineage/peft_adapter.h"
#include "runtime/model/parameter_table.h"
#include "spec/file_digest.h"
#include "workbench/peft_config_check.h"

namespace scion::workbench {
namespace {

// The labels config.json beside the adapter gives (id2label, in id order), checked against
// the head the model declares: a PEFT folder that `scion export` wrote, or that someone
// saved with their model's config, says what its classifier's outputs mean.
void check_labels(const std::filesystem::path& file, const spec::Workspace& ws,
                  const spec::Model& model, std::vector<std::string>& problems) {
  if (Status regular = check_regular_file(file, FollowLinks::kYes);
      !regular && regular.code() != StatusCode::kNotFound) {
    problems.push_back(regular.message());
    return;
  }
  std::ifstream in(file);
  if (!in) return;  // PEFT's own save_pretrained writes none
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
  const spec::HeadSpec* head = ws.head_of(model);
  if (config.is_discarded() || !config.is_object() || !head) return;
  const nlohmann::json& id2label = config.value("id2label", nlohmann::json());
  if (!id2label.is_object()) return;
  std::vector<std::string> labels(id2label.size());
  for (const auto& [id, label] : id2label.items()) {
    std::size_t k = 0;
    const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), k);
    if (ec != std::errc() || end != id.data() + id.size() || k >= labels.size() ||
        !label.is_string()) {
      problems.push_back(fmt::format("{}: id2label is not a map from 0..{} to label names",
                                     file.string(), labels.size() - 1));
      return;
    }
    labels[k] = label.get<std::string>();
  }
  if (labels != head->labels)
    problems.push_back(fmt::format(
        "{} labels the outputs [{}], but '{}' declares its head's labels "
        "[{}]",
        file.string(), fmt::join(labels, ", "), model.name, fmt::join(head->labels, ", ")));
}

// adapter_config.json's text. Errors: kNotFound when the folder has none.
Result<std::string> read_config_text(const std::filesystem::path& file) {
  if (Status regular = check_regular_file(file, FollowLinks::kYes);
      !regular && regular.code() != StatusCode::kNotFound)
    return regular;
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return not_found(
        fmt::format("'{}' is missing: the folder is not a PEFT adapter (it needs "
                    "adapter_config.json and adapter_model.safetensors)",
                    file.string()));
  return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every tensor of the adapter holding NaN or infinite values, with how many.
std::vector<std::string> non_finite_tensors(const lineage::SafetensorsContents& contents) {
  std::vector<std::string> out;
  for (const auto& t : contents.tensors)
    if (lineage::is_convertible_to_float32(t.dtype))
      if (const std::int64_t n = lineage::count_non_finite(t.dtype, t.bytes); n > 0)
        out.push_back(fmt::format("tensor '{}' has {} NaN or infinite value{}", t.name, n,
                                  n == 1 ? "" : "s"));
  return out;
}

// Fills `out.writes` with `model`'s complete parameter set: the parent's values for what
// it inherits, the adapter's tensors (as float32) for its own. Each adapter tensor that is
// missing, of another shape or dtype, or not a parameter of `model` is a line of
// `problems`. Errors: kNotFound for a parameter the parent in the store lacks.
Status match_adapter_tensors(const spec::Workspace& ws, const spec::Model& model,
                             const spec::Model& base, PeftImport& import,
                             std::vector<std::string>& problems) {
  PeftImport* out = &import;
  std::map<std::string, const lineage::SafetensorsTensor*> in_file;
  for (const auto& t : out->adapter.contents.tensors) in_file[t.name] = &t;
  const auto table = runtime::parameter_table(ws, model);
  out->converted.reserve(table.size());
  for (const runtime::ParameterSpec& p : table) {
    if (p.introduced_by != model.name) {
      auto it = out->parent.find(p.name);
      if (it == out->parent.end())
        return not_found(
            fmt::format("the parent '{}' in the store has no '{}'; run `scion run "
                        "{}` first",
                        model.from, p.name, model.from));
      const lineage::LoadedParameter& v = it->second;
      out->writes.push_back({p.name, v.dtype, v.shape, v.bytes, false, p.introduced_by, v.digest});
      continue;
    }
    const std::string peft = *lineage::peft_tensor_name(*base.architecture, model, p.name);
    auto it = in_file.find(peft);
    if (it == in_file.end()) {
      problems.push_back(fmt::format("missing tensor '{}' {} (scion's {})", peft,
                                     nlohmann::json(p.shape).dump(), p.name));
      continue;
    }
    const lineage::SafetensorsTensor& t = *it->second;
    in_file.erase(it);
    if (t.shape != p.shape) {
      problems.push_back(fmt::format("tensor '{}' has shape {}, but '{}' needs {}", peft,
                                     nlohmann::json(t.shape).dump(), model.name,
                                     nlohmann::json(p.shape).dump()));
      continue;
    }
    if (!lineage::is_convertible_to_float32(t.dtype)) {
      problems.push_back(fmt::format("tensor '{}' has dtype {}; adapter weights are floating point",
                                     peft, lineage::dtype_name(t.dtype)));
      continue;
    }
    std::span<const std::byte> values = t.bytes;
    if (t.dtype != lineage::DType::kF32) {
      out->converted.push_back(lineage::to_float32(t.dtype, t.bytes));
      values = std::as_bytes(std::span<const float>(out->converted.back()));
    }
    out->writes.push_back({p.name, lineage::DType::kF32, p.shape, values, true, model.name, {}});
    ++out->own_tensors;
    out->own_bytes += static_cast<std::int64_t>(values.size());
  }
  for (const auto& [name, t] : in_file)
    problems.push_back(fmt::format("extra tensor '{}' {} is not a parameter of '{}'", name,
                                   nlohmann::json(t->shape).dump(), model.name));
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<PeftImport>> read_peft_import(const spec::Workspace& ws,
                                                     const spec::Model& model,
                                                     lineage::LineageStore& store,
                                                     const std::filesystem::path& dir,
                                                     std::vector<std::string>& problems) {
  if (model.is_base())
    return invalid_argument(fmt::format(
        "model '{}' ({}:{}) is a base; a PEFT adapter is imported as a LoRA descendant of the "
        "base it was trained on (declare one with from: and adapt: {{lora: ..., head: ...}})",
        model.name, model.location.file, model.location.line));
  SCION_RETURN_IF_ERROR(lineage::check_peft_import(ws, model));
  const spec::Model& base = *ws.ancestry(model).back();
  const std::filesystem::path config_file = dir / "adapter_config.json";
  auto config = read_config_text(config_file);
  if (!config) return config.status();
  auto config_problems = peft_config_problems(*config, config_file.string(), ws, model);
  if (!config_problems) return config_problems.status();
  problems = std::move(*config_problems);
  check_labels(dir / "config.json", ws, model, problems);

  auto out = std::make_unique<PeftImport>();
  const std::filesystem::path weights = dir / "adapter_model.safetensors";
  if (!std::filesystem::is_regular_file(weights))
    return not_found(
        fmt::format("'{}' is missing{}; save the adapter with safetensors "
                    "(PEFT's default)",
                    weights.string(),
                    std::filesystem::exists(dir / "adapter_model.bin")
                        ? " (the folder has adapter_model.bin, a pickle scion does "
                          "not read)"
                        : ""));
  auto adapter = lineage::read_safetensors(store.env(), weights);
  if (!adapter) return adapter.status();
  out->adapter = std::move(*adapter);
  out->non_finite = non_finite_tensors(out->adapter.contents);
  auto adapter_digest = spec::sha256_file(weights);
  if (!adapter_digest) return adapter_digest.status();
  out->adapter_digest = *adapter_digest;
  auto config_digest = spec::sha256_file(dir / "adapter_config.json");
  if (!config_digest) return config_digest.status();
  out->config_digest = *config_digest;

  auto parent = store.load_parameters(model.from);
  if (!parent) return parent.status();
  out->parent = std::move(*parent);

  SCION_RETURN_IF_ERROR(match_adapter_tensors(ws, model, base, *out, problems));
  if (!problems.empty())
    return spec_error(fmt::format(
        "the PEFT adapter in '{}' does not fit model '{}' as declared at {}:{} ({} problem(s)); "
        "fix the declaration (its method's settings, head labels) as the lines above say, or "
        "import the adapter the base was trained with",
        dir.string(), model.name, model.location.file, model.location.line, problems.size()));
  return out;
}

}  // namespace scion::workbench
