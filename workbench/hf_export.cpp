#include "workbench/hf_export.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "lineage/dtype.h"
#include "lineage/hf_tensor_names.h"
#include "lineage/safetensors.h"

namespace scion::workbench {
namespace {

// How an architecture's sequence-classification model is laid out in transformers.
struct HfTaskModel {
  std::string_view model_type;  // config.json's model_type
  std::string_view class_name;  // AutoModelForSequenceClassification picks it
  std::string_view classifier;  // the head's module: <classifier>.weight, .bias
  spec::Pooling pooling;        // the position the task model classifies from
};

constexpr HfTaskModel kTaskModels[] = {
    // BertForSequenceClassification: classifier(dropout(pooler(h[:, 0]))).
    {"bert", "BertForSequenceClassification", "classifier", spec::Pooling::kCls},
};

const HfTaskModel* task_model(std::string_view model_type) {
  for (const HfTaskModel& t : kTaskModels)
    if (t.model_type == model_type) return &t;
  return nullptr;
}

Status refuse(const spec::Model& model, const std::string& why) {
  return invalid_argument(fmt::format(
      "model '{}' cannot be exported as a Hugging Face model folder: {}; export its "
      "parameters with the default format (safetensors) instead",
      model.name, why));
}

std::vector<float> as_float32(const lineage::LoadedParameter& p) {
  if (p.dtype == lineage::DType::kF32) {
    std::vector<float> out(p.bytes.size() / sizeof(float));
    std::memcpy(out.data(), p.bytes.data(), p.bytes.size());
    return out;
  }
  return lineage::to_float32(p.dtype, p.bytes);
}

// W += scale · B·A for every LoRA `owner` put on a linear layer. W (O, I), A (R, I), B (O, R).
void merge_lora(const spec::Model& owner, const lineage::LoadedParameters& params,
                std::map<std::string, std::vector<float>>& trunk) {
  const spec::LoraSpec& lora = *owner.adaptation.lora;
  const float scale = lora.alpha / static_cast<float>(lora.rank);
  const std::string marker = ".lora." + owner.name + ".a";
  for (const auto& [name, a] : params) {
    if (!name.ends_with(marker)) continue;
    const std::string stem = name.substr(0, name.size() - marker.size());
    std::vector<float>& w = trunk.at(stem + ".weight");
    const std::vector<float> A = as_float32(a);
    const std::vector<float> B = as_float32(params.at(stem + ".lora." + owner.name + ".b"));
    const std::int64_t R = a.shape[0], I = a.shape[1];
    const std::int64_t O = static_cast<std::int64_t>(w.size()) / I;
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t i = 0; i < I; ++i) {
        float delta = 0.0f;
        for (std::int64_t k = 0; k < R; ++k) delta += B[o * R + k] * A[k * I + i];
        w[o * I + i] += scale * delta;
      }
  }
}

// The nearest classification head up the ancestry (what scion classifies with).
const spec::Model* head_owner(const std::vector<const spec::Model*>& chain) {
  for (const spec::Model* m : chain)
    if (m->adaptation.head) return m;
  return nullptr;
}

Result<nlohmann::json> read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot read '{}'", path.string()));
  auto parsed = nlohmann::json::parse(in, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object())
    return spec_error(fmt::format("'{}' is not a JSON object", path.string()));
  return parsed;
}

Status write_bytes(lineage::Env& env, const std::filesystem::path& path, const std::string& text) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()),
                                         text.size());
  const std::span<const std::byte> pieces[] = {bytes};
  return lineage::write_file_atomically(env, path, pieces);
}

}  // namespace

Result<HfModelFolder> hf_model_folder(const spec::Workspace& ws, const spec::Model& model,
                                      const lineage::LoadedParameters& params) {
  const auto chain = ws.ancestry(model);
  const spec::Model& base = *chain.back();
  const spec::Architecture& arch = *base.architecture;
  if (arch.hf_model_type.empty() || !std::filesystem::is_directory(base.import_path))
    return refuse(model, "its base '" + base.name +
                             "' is not an imported Hugging Face model folder (import: FOLDER)");
  const HfTaskModel* task = task_model(arch.hf_model_type);
  if (!task)
    return refuse(model, "there is no sequence-classification layout for model_type '" +
                             arch.hf_model_type + "' yet");
  for (const spec::Model* m : chain) {
    const spec::Adaptation& ad = m->adaptation;
    if (ad.prefix || ad.prompt || ad.bottleneck)
      return refuse(model, "'" + m->name + "' has " +
                               (ad.prefix ? "prefix tuning" : ad.prompt ? "prompt tuning"
                                                                        : "a bottleneck adapter") +
                               ", which a plain Hugging Face model cannot hold");
  }
  const spec::Model* owner = head_owner(chain);
  if (!owner) return refuse(model, "it has no classification head (its own or an ancestor's)");
  if (owner->adaptation.head->pooling != task->pooling)
    return refuse(model, fmt::format("the head of '{}' pools otherwise than {} does ([CLS])",
                                     owner->name, task->class_name));

  HfModelFolder out;
  const std::string prefix = lineage::hf_base_model_prefix(arch.hf_model_type);
  std::map<std::string, std::vector<float>> trunk;  // by scion name
  for (const auto& [name, value] : params)
    if (lineage::hf_tensor_name(arch.hf_model_type, name)) trunk[name] = as_float32(value);
  // Every LoRA of the ancestry adds its low-rank product to the frozen weight it adapts.
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    if ((*it)->adaptation.lora) merge_lora(**it, params, trunk);
  for (auto& [name, values] : trunk) {
    const std::string hf = prefix + *lineage::hf_tensor_name(arch.hf_model_type, name);
    out.shapes[hf] = params.at(name).shape;
    out.tensors[hf] = std::move(values);
  }
  for (const char* part : {"weight", "bias"}) {
    const lineage::LoadedParameter& p = params.at("head." + owner->name + "." + part);
    const std::string hf = std::string(task->classifier) + "." + part;
    out.shapes[hf] = p.shape;
    out.tensors[hf] = as_float32(p);
  }

  const std::filesystem::path folder = base.import_path;
  auto config = read_json(folder / "config.json");
  if (!config) return config.status();
  const std::vector<std::string>& labels = owner->adaptation.head->labels;
  nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
  for (std::size_t k = 0; k < labels.size(); ++k) {
    id2label[std::to_string(k)] = labels[k];
    label2id[labels[k]] = k;
  }
  (*config)["architectures"] = {task->class_name};
  (*config)["id2label"] = id2label;
  (*config)["label2id"] = label2id;
  (*config)["problem_type"] = "single_label_classification";
  (*config)["torch_dtype"] = "float32";
  out.config = std::move(*config);
  for (const char* file : {"tokenizer.json", "vocab.txt", "tokenizer_config.json",
                           "special_tokens_map.json"})
    if (std::filesystem::is_regular_file(folder / file)) out.tokenizer_files.push_back(folder / file);
  return out;
}

Status write_hf_model_folder(lineage::Env& env, const std::filesystem::path& dir,
                             const HfModelFolder& folder) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("cannot create '" + dir.string() + "': " + ec.message());
  std::vector<lineage::SafetensorsTensor> tensors;
  for (const auto& [name, values] : folder.tensors)
    tensors.push_back({name, lineage::DType::kF32, folder.shapes.at(name),
                       std::as_bytes(std::span<const float>(values))});
  SCION_RETURN_IF_ERROR(
      lineage::write_safetensors(env, dir / "model.safetensors", tensors, {{"format", "pt"}}));
  SCION_RETURN_IF_ERROR(write_bytes(env, dir / "config.json", folder.config.dump(2) + "\n"));
  for (const std::filesystem::path& file : folder.tokenizer_files) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in && !in.eof()) return io_error("cannot read '" + file.string() + "'");
    SCION_RETURN_IF_ERROR(write_bytes(env, dir / file.filename(), text.str()));
  }
  return Status::ok();
}

}  // namespace scion::workbench
