#include "workbench/hf_export.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <set>
#include <span>
#include <sstream>

#include "base/regular_file.h"
#include "lineage/dtype.h"
#include "lineage/hf_tensor_names.h"
#include "lineage/safetensors.h"
#include "runtime/model/adaptation_method.h"

namespace scion::workbench {
namespace {

// How an architecture's task model is laid out in transformers: a sequence classifier
// (scion's classification, regression and multi-label heads), a token classifier, or a
// causal LM (a causal-LM descendant of a decoder).
enum class TaskKind { kClassifier, kTokenClassifier, kCausalLm };
struct HfTaskModel {
  std::string_view model_type;  // config.json's model_type
  TaskKind kind;
  std::string_view class_name;  // AutoModelFor... picks it
  std::string_view classifier;  // the head's module: <classifier>.weight, .bias
  std::string_view pooler;      // where the base's pooler goes instead; "" keeps it in place
  spec::Pooling pooling;        // the position the task model classifies from
  bool drops_pooler = false;    // the task model's trunk has no pooler (token classifiers)
};

constexpr HfTaskModel kTaskModels[] = {
    // BertForSequenceClassification: classifier(dropout(pooler(h[:, 0]))).
    {"bert", TaskKind::kClassifier, "BertForSequenceClassification", "classifier", "",
     spec::Pooling::kCls},
    // RobertaClassificationHead: out_proj(tanh(dense(h[:, 0]))): scion's pooler + head;
    // RobertaForSequenceClassification's trunk has no pooler of its own.
    {"roberta", TaskKind::kClassifier, "RobertaForSequenceClassification", "classifier.out_proj",
     "classifier.dense", spec::Pooling::kCls},
    // BertForTokenClassification, RobertaForTokenClassification: classifier(dropout(h)) on
    // every position, over a trunk built without a pooler.
    {"bert", TaskKind::kTokenClassifier, "BertForTokenClassification", "classifier", "",
     spec::Pooling::kCls, true},
    {"roberta", TaskKind::kTokenClassifier, "RobertaForTokenClassification", "classifier", "",
     spec::Pooling::kCls, true},
    {"gpt2", TaskKind::kCausalLm, "GPT2LMHeadModel", "", "", spec::Pooling::kLast},
    {"llama", TaskKind::kCausalLm, "LlamaForCausalLM", "", "", spec::Pooling::kLast},
    {"qwen2", TaskKind::kCausalLm, "Qwen2ForCausalLM", "", "", spec::Pooling::kLast},
    {"mistral", TaskKind::kCausalLm, "MistralForCausalLM", "", "", spec::Pooling::kLast},
    {"phi3", TaskKind::kCausalLm, "Phi3ForCausalLM", "", "", spec::Pooling::kLast},
};

// The row for `model_type`: its token classifier for a token-classification head, else
// its first (a sequence classifier, or a causal LM for decoders).
const HfTaskModel* task_model(std::string_view model_type, bool tags_words) {
  for (const HfTaskModel& t : kTaskModels)
    if (t.model_type == model_type && (t.kind == TaskKind::kTokenClassifier) == tags_words)
      return &t;
  return nullptr;
}

// transformers' problem_type for a sequence head's task.
const char* problem_type(spec::HeadTask task) {
  switch (task) {
    case spec::HeadTask::kRegression:
      return "regression";
    case spec::HeadTask::kMultiLabel:
      return "multi_label_classification";
    default:
      return "single_label_classification";
  }
}

Status refuse(const spec::Model& model, const std::string& why) {
  return invalid_argument(
      fmt::format("model '{}' cannot be exported as a Hugging Face model folder: {}; export its "
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

// Every registered adaptation method's parameters `owner` introduced, folded into the
// trunk's weights and biases (runtime::AdaptationMethod::fold).
void merge_adaptations(const spec::Model& owner, const lineage::LoadedParameters& params,
                       std::map<std::string, std::vector<float>>& trunk) {
  for (const runtime::AdaptationMethod* method : runtime::adaptation_methods()) {
    if (!runtime::folds_into_weights(*method)) continue;  // refused before: hf_export_refusal
    runtime::HostTensors own;
    for (const auto& [name, value] : params)
      if (method->parameter_model(name) == owner.name) own[name] = as_float32(value);
    if (!own.empty()) method->fold(owner, own, trunk);
  }
}

// The nearest classification head up the ancestry (what scion classifies with).
const spec::Model* head_owner(const std::vector<const spec::Model*>& chain) {
  for (const spec::Model* m : chain)
    if (m->adaptation.head) return m;
  return nullptr;
}

// The trunk under the task model's names, laid out as transformers stores it: GPT-2's
// q, k, v joined into c_attn and its Conv1D weights as (in, out); RoBERTa's position table
// with its first padding_idx + 1 rows back (zeros: scion drops them at import, and they
// are read only at padding positions, which the attention mask hides).
void add_trunk_tensors(const std::string& model_type, const HfTaskModel& task,
                       const lineage::LoadedParameters& params,
                       std::map<std::string, std::vector<float>>& trunk, int padding_idx,
                       HfModelFolder& out) {
  const std::string prefix = lineage::hf_base_model_prefix(model_type);
  std::set<std::string> names;
  for (const auto& [name, values] : trunk)
    if ((task.pooler.empty() && !task.drops_pooler) || !name.starts_with("pooler."))
      names.insert(*lineage::hf_tensor_name(model_type, name));
  for (const std::string& hf : names) {
    const lineage::HfTensorMapping m = lineage::map_hf_tensor(model_type, hf);
    const std::vector<std::string> parts = m.fused.empty() ? std::vector{m.scion_name} : m.fused;
    std::vector<float> values;
    std::vector<std::int64_t> shape = params.at(parts[0]).shape;
    for (const std::string& part : parts) {  // joined along the output dimension (rows)
      std::vector<float>& v = trunk.at(part);
      values.insert(values.end(), v.begin(), v.end());
    }
    shape[0] *= static_cast<std::int64_t>(parts.size());
    if (m.conv1d && shape.size() == 2) {
      std::vector<float> transposed(values.size());
      for (std::int64_t o = 0; o < shape[0]; ++o)
        for (std::int64_t i = 0; i < shape[1]; ++i)
          transposed[i * shape[0] + o] = values[o * shape[1] + i];
      values = std::move(transposed);
      std::swap(shape[0], shape[1]);
    }
    if (m.position_rows) {
      values.insert(values.begin(), static_cast<std::size_t>(padding_idx + 1) * shape[1], 0.0f);
      shape[0] += padding_idx + 1;
    }
    out.shapes[prefix + hf] = shape;
    out.tensors[prefix + hf] = std::move(values);
  }
}

}  // namespace

Result<nlohmann::json> read_config_json(const std::filesystem::path& path) {
  if (Status regular = check_regular_file(path, FollowLinks::kYes);
      !regular && regular.code() != StatusCode::kNotFound)
    return regular;
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot read '{}'", path.string()));
  auto parsed = nlohmann::json::parse(in, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object())
    return spec_error(fmt::format("'{}' is not a JSON object", path.string()));
  return parsed;
}

namespace {

// The head `owner` trained (and the pooler, where the task model has one) as `task` names
// them, and its labels and problem type in `config` (head_config).
void add_head(const HfTaskModel& task, const spec::Model& owner,
              const lineage::LoadedParameters& params, nlohmann::json& config, HfModelFolder& out) {
  for (const char* part : {"weight", "bias"}) {
    const lineage::LoadedParameter& p = params.at("head." + owner.name + "." + part);
    const std::string hf = std::string(task.classifier) + "." + part;
    out.shapes[hf] = p.shape;
    out.tensors[hf] = as_float32(p);
    if (task.pooler.empty() || task.drops_pooler) continue;
    const lineage::LoadedParameter& pooler = params.at(std::string("pooler.") + part);
    out.shapes[std::string(task.pooler) + "." + part] = pooler.shape;
    out.tensors[std::string(task.pooler) + "." + part] = as_float32(pooler);
  }
  config = head_config(std::move(config), *owner.adaptation.head, std::string(task.class_name));
}

Status write_bytes(lineage::Env& env, const std::filesystem::path& path, const std::string& text) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()),
                                         text.size());
  const std::span<const std::byte> pieces[] = {bytes};
  return lineage::write_file_atomically(env, path, pieces);
}

}  // namespace

nlohmann::json head_config(nlohmann::json config, const spec::HeadSpec& head,
                           const std::string& class_name) {
  nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
  for (std::size_t k = 0; k < head.labels.size(); ++k) {
    id2label[std::to_string(k)] = head.labels[k];
    label2id[head.labels[k]] = k;
  }
  config["id2label"] = id2label;
  config["label2id"] = label2id;
  if (head.task == spec::HeadTask::kTokenClassification)
    config.erase("problem_type");
  else
    config["problem_type"] = problem_type(head.task);
  config["architectures"] = {class_name};
  return config;
}

Result<HfModelFolder> hf_model_folder(const spec::Workspace& ws, const spec::Model& model,
                                      const lineage::LoadedParameters& params, HfMergeScope scope) {
  const auto chain = ws.ancestry(model);
  // The models whose adaptations go into the weights: the whole chain, or all but the model.
  const auto merged =
      scope == HfMergeScope::kWholeModel ? std::span(chain) : std::span(chain).subspan(1);
  const spec::Model& base = *chain.back();
  const spec::Architecture& arch = *base.architecture;
  if (arch.hf_model_type.empty() || !std::filesystem::is_directory(base.import_path))
    return refuse(model, "its base '" + base.name +
                             "' is not an imported Hugging Face model folder (import: FOLDER)");
  const spec::Model* owner = head_owner(chain);
  const bool tags_words =
      owner && owner->adaptation.head->task == spec::HeadTask::kTokenClassification;
  const HfTaskModel* task = task_model(arch.hf_model_type, tags_words);
  if (!task)
    return refuse(model, "there is no " +
                             std::string(tags_words ? "token-classifier" : "task-model") +
                             " layout for model_type '" + arch.hf_model_type + "' yet");
  for (const spec::Model* m : merged) {
    const spec::Adaptation& ad = m->adaptation;
    const std::string_view unfoldable = spec::unfoldable_adapter(ad);
    if (ad.prefix || ad.prompt || !unfoldable.empty())
      return refuse(model, "'" + m->name + "' has " +
                               (ad.prefix   ? "prefix tuning"
                                : ad.prompt ? "prompt tuning"
                                            : "a " + std::string(unfoldable)) +
                               ", which a plain Hugging Face model cannot hold");
  }
  if (task->kind == TaskKind::kCausalLm) {
    if (owner)
      return refuse(model, fmt::format("transformers' sequence classifier for {} has a score "
                                       "layer without bias and scion's head has one; causal-LM "
                                       "descendants export as {}",
                                       arch.hf_model_type, task->class_name));
    if (ws.objective_of(model) != spec::Objective::kCausalLm)
      return refuse(model, "it is neither a classifier nor a causal language model");
  } else {
    if (!owner) return refuse(model, "it has no classification head (its own or an ancestor's)");
    if (!tags_words && owner->adaptation.head->pooling != task->pooling)
      return refuse(model, fmt::format("the head of '{}' pools otherwise than {} does ([CLS])",
                                       owner->name, task->class_name));
  }

  const std::filesystem::path folder = base.import_path;
  auto config = read_config_json(folder / "config.json");
  if (!config) return config.status();
  HfModelFolder out;
  std::map<std::string, std::vector<float>> trunk;  // by scion name
  for (const auto& [name, value] : params)
    if (lineage::hf_tensor_name(arch.hf_model_type, name)) trunk[name] = as_float32(value);
  // Every model of the ancestry, from the base down, folds each registered adaptation
  // method's parameters into the frozen weights they adapt, in registration order.
  for (auto it = merged.rbegin(); it != merged.rend(); ++it) merge_adaptations(**it, params, trunk);
  // RoBERTa's padding_idx is pad_token_id (default 1), as in RobertaEmbeddings.
  const nlohmann::json pad = config->value("pad_token_id", nlohmann::json());
  const int padding_idx = pad.is_number_integer() ? pad.get<int>() : 1;
  add_trunk_tensors(arch.hf_model_type, *task, params, trunk, padding_idx, out);
  if (owner) add_head(*task, *owner, params, *config, out);
  (*config)["architectures"] = {task->class_name};
  (*config)["torch_dtype"] = "float32";
  out.config = std::move(*config);
  for (const char* file : {"tokenizer.json", "vocab.txt", "tokenizer_config.json",
                           "special_tokens_map.json", "merges.txt", "vocab.json"})
    if (std::filesystem::is_regular_file(folder / file))
      out.tokenizer_files.push_back(folder / file);
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
    SCION_RETURN_IF_ERROR(check_regular_file(file, FollowLinks::kYes));
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in && !in.eof()) return io_error("cannot read '" + file.string() + "'");
    SCION_RETURN_IF_ERROR(write_bytes(env, dir / file.filename(), text.str()));
  }
  return Status::ok();
}

}  // namespace scion::workbench
