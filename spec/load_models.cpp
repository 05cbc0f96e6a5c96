// The `models` section: bases (architecture + train or import) and descendants
// (from + adapt + train), read in two passes so that a descendant's values can be
// checked against its base's architecture.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "spec/hf_model_folder.h"
#include "spec/keys.h"
#include "spec/loader_parts.h"
#include "spec/metric_names.h"
#include "spec/text_positions.h"
#include "spec/vocabulary.h"

namespace scion::spec::detail {
namespace {

// Reads a base's keys that a descendant must not have, and the reverse.
bool check_model_shape(SpecReader& r, const YamlNode& node, const std::string& path, bool base) {
  bool ok = true;
  const auto forbid = [&](std::string_view key, const char* why) {
    if (const YamlNode* n = find(node, key)) {
      r.error(*n, join_path(path, key), fmt::format("'{}' is not allowed here", key), why);
      ok = false;
    }
  };
  if (base) {
    forbid("adapt", " (only a descendant, with 'from', is adapted)");
    // An imported Hugging Face folder brings its architecture (checked once it is read).
    if (!find(node, "architecture") && !find(node, "import")) {
      r.error(node, path,
              "missing required key 'architecture' (a base model needs one; a descendant "
              "names its parent with 'from')");
      ok = false;
    }
    const bool train = find(node, "train") != nullptr, import = find(node, "import") != nullptr;
    if (train == import) {
      r.error(node, path,
              train ? "a base has both 'train' and 'import'; keep one"
                    : "missing 'train' or 'import' (how the base gets its weights)");
      ok = false;
    }
  } else {
    forbid("architecture", " (a descendant inherits its base's architecture)");
    forbid("import", " (only a base is imported)");
    if (!find(node, "adapt")) {
      r.error(node, path, "missing required key 'adapt' (how the descendant adapts its parent)");
      ok = false;
    }
    if (!find(node, "train")) {
      r.error(node, path, "missing required key 'train' (the recipe that trains the adaptation)");
      ok = false;
    }
  }
  return ok;
}

// The head the model predicts with: its own, else the nearest ancestor's. A base trained
// for classification has an implicit classification head over its dataset's labels,
// returned as `implicit` (a head spec the loader keeps for this check only).
const HeadSpec* inherited_head(const std::vector<const Model*>& ancestors,
                               const std::vector<Dataset>& datasets, HeadSpec& implicit) {
  for (const Model* m : ancestors) {
    if (m->adaptation.head) return &*m->adaptation.head;
    if (m->is_base() && m->training && m->training->objective == Objective::kClassification)
      for (const Dataset& d : datasets)
        if (d.name == m->training->dataset) {
          implicit = HeadSpec{.labels = d.labels};
          return &implicit;
        }
  }
  return nullptr;
}

// The kind of labels each head task trains on.
LabelType label_type_for(HeadTask task) {
  switch (task) {
    case HeadTask::kClassification:
      return LabelType::kSingle;
    case HeadTask::kRegression:
      return LabelType::kNumber;
    case HeadTask::kMultiLabel:
      return LabelType::kMulti;
    case HeadTask::kTokenClassification:
      return LabelType::kTags;
  }
  return LabelType::kSingle;
}

// A head without labels takes its training data's (a regression head: one output named
// after the label field); given labels must match the data's.
void settle_own_head(SpecReader& r, ModelEntry& e, const Dataset* data) {
  Model& m = e.model;
  if (!m.adaptation.head || !m.adaptation.head->labels.empty() || !data) return;
  HeadSpec& head = *m.adaptation.head;
  if (head.task == HeadTask::kRegression && data->label_type == LabelType::kNumber &&
      !data->label_field.empty()) {
    head.labels = {data->label_field};
  } else if (!data->labels.empty()) {
    head.labels = data->labels;
  } else {
    r.error(*find(*find(*e.node, "adapt"), "head"),
            join_path(join_path("models", m.name), "adapt.head"),
            fmt::format("the head has no labels and its dataset '{}' lists none", data->name),
            "; add labels: [...] to the head or to the dataset");
  }
}

// The training data must hold the labels the head predicts: the label type of its task,
// and for named labels the head's names in its order.
void check_head_data(SpecReader& r, const ModelEntry& e, const HeadSpec& head,
                     const Dataset& data) {
  const Model& m = e.model;
  const YamlNode* train = find(*e.node, "train");
  const std::string path = join_path(join_path("models", m.name), "train.data");
  const LabelType wanted = label_type_for(head.task);
  if (!data.labelled()) {
    r.error(*train, path,
            fmt::format("dataset '{}' has no labels, but a {} head trains on them", data.name,
                        head_task_name(head.task)),
            wanted == LabelType::kNumber ? "; set label_type: number and label_field on the dataset"
                                         : "; add labels: [...] to the dataset");
  } else if (data.label_type != wanted) {
    r.error(
        *train, path,
        fmt::format("dataset '{}' has label_type {}, but a {} head trains on label_type {}",
                    data.name, label_type_name(data.label_type), head_task_name(head.task),
                    label_type_name(wanted)),
        fmt::format("; set label_type: {} on a dataset with such labels", label_type_name(wanted)));
  } else if (wanted != LabelType::kNumber && head.labels != data.labels) {
    r.error(*train, path,
            fmt::format("dataset '{}' has labels [{}] but the head outputs [{}]", data.name,
                        fmt::join(data.labels, ", "), fmt::join(head.labels, ", ")),
            "; list the same labels in the same order");
  }
}

// early_stopping.metric and keep_best name metrics the model's validation records;
// class_weights weigh the classes of a classification or token-classification head.
void check_task_recipe(SpecReader& r, const ModelEntry& e, const HeadSpec* head) {
  const Model& m = e.model;
  const TrainingSpec& t = *m.training;
  const YamlNode* train = find(*e.node, "train");
  const std::string path = join_path(join_path("models", m.name), "train");
  const HeadTask task = head ? head->task : HeadTask::kClassification;
  const int outputs = head ? static_cast<int>(head->labels.size()) : 0;
  const auto known = validation_metrics(t.objective, task, outputs);
  const std::string what = t.objective == Objective::kClassification
                               ? fmt::format("a {} head", head_task_name(task))
                               : std::string("a language model");
  const auto check_metric = [&](const YamlNode* at, const std::string& at_path,
                                const std::string& metric) {
    // An empty metric is one read_metric already refused (not a metric name at all).
    if (!at || metric.empty() || std::find(known.begin(), known.end(), metric) != known.end())
      return;
    r.error(*at, at_path, fmt::format("{} records no {} in validation", what, metric),
            fmt::format("; choose one of {}", join_words(known)));
  };
  if (const YamlNode* es = find(*train, "early_stopping"))
    check_metric(find(*es, "metric"), join_path(path, "early_stopping.metric"),
                 t.early_stopping.metric);
  check_metric(find(*train, "keep_best"), join_path(path, "keep_best"), t.keep_best);
  const YamlNode* weights = find(*train, "class_weights");
  if (!weights) return;
  const bool weighable =
      t.objective == Objective::kClassification &&
      (task == HeadTask::kClassification || task == HeadTask::kTokenClassification);
  if (!weighable)
    r.error(*weights, join_path(path, "class_weights"),
            fmt::format("class_weights apply to classification and token_classification heads, "
                        "not to {}",
                        what));
  else if (t.class_weights.kind == ClassWeightsSpec::Kind::kExplicit &&
           static_cast<int>(t.class_weights.values.size()) != outputs && weights->is_sequence() &&
           static_cast<int>(weights->items.size()) ==
               static_cast<int>(t.class_weights.values.size()))
    r.error(*weights, join_path(path, "class_weights"),
            fmt::format("{} weights for {} labels", t.class_weights.values.size(), outputs),
            "; give one weight per head label, in label order");
}

// Whether the model's own head names a task that is none (reported where it was read):
// its task is then unknown, and checking its data against the default task would add an
// error about label types that the user's one typo explains.
bool unknown_head_task(const ModelEntry& e) {
  const YamlNode* adapt = find(*e.node, "adapt");
  const YamlNode* head = adapt && adapt->is_map() ? find(*adapt, "head") : nullptr;
  const YamlNode* task = head && head->is_map() ? find(*head, "task") : nullptr;
  if (task == nullptr) return false;
  return std::none_of(std::begin(keys::kTasks), std::end(keys::kTasks), [&](const auto& choice) {
    return task->is_scalar() && choice.word == task->value;
  });
}

// Settles the head's labels and checks the head, its data and the recipe's task keys.
void settle_head_labels(SpecReader& r, ModelEntry& e, const std::vector<const Model*>& ancestors,
                        const std::vector<Dataset>& datasets) {
  Model& m = e.model;
  const std::string path = join_path("models", m.name);
  const Dataset* data = nullptr;
  if (m.training)
    for (const Dataset& d : datasets)
      if (d.name == m.training->dataset) data = &d;
  if (unknown_head_task(e)) return;
  settle_own_head(r, e, data);
  HeadSpec implicit;
  const HeadSpec* head =
      m.adaptation.head ? &*m.adaptation.head : inherited_head(ancestors, datasets, implicit);
  if (m.is_base() && data) {
    implicit = HeadSpec{.labels = data->labels};
    head = &implicit;
  }
  if (m.training) check_task_recipe(r, e, head);
  if (!m.training || m.training->objective != Objective::kClassification || !data) return;
  const YamlNode* train = find(*e.node, "train");
  if (head == nullptr) {
    r.error(*train, join_path(path, "train.objective"), "objective classification needs a head",
            "; add adapt: {head: {}} to this model");
    return;
  }
  check_head_data(r, e, *head, *data);
}

// Prompts and completions train a causal LM, the loss on the completion alone; no other
// objective has a use for them. False (with the error) when the model's recipe asks for one.
bool check_completion_data(SpecReader& r, const ModelEntry& e,
                           const std::vector<Dataset>& datasets) {
  const Model& m = e.model;
  if (!m.training || m.training->objective == Objective::kCausalLm) return true;
  for (const Dataset& d : datasets) {
    if (d.name != m.training->dataset || !d.has_completions()) continue;
    const YamlNode* train = find(*e.node, "train");
    const YamlNode* data = find(*train, "data");
    r.error(data ? *data : *train, join_path(join_path("models", m.name), "train.data"),
            fmt::format("dataset '{}' holds prompts and completions, which train a causal "
                        "language model (objective clm, a decoder without a head), not objective "
                        "{}",
                        d.name,
                        word(m.training->objective)),
            "; train this model on a dataset with text (and labels), or adapt a decoder");
    return false;
  }
  return true;
}

// Prompt virtual tokens take positions before the text, and so do prefix virtual tokens
// where prefix tuning shifts the text's positions (spec/text_positions.h): those of the
// model and its ancestors plus the longest text its recipe feeds must fit the base's
// max_length.
void check_prompt_room(SpecReader& r, const ModelEntry& e, const Architecture* arch,
                       const std::vector<const Model*>& ancestors) {
  const Model& m = e.model;
  if (arch == nullptr || !m.training) return;
  std::vector<const Model*> chain = ancestors;
  chain.push_back(&m);
  const bool prefix_counts = prefix_position_shift(*arch, chain) > 0;
  int virtual_tokens = prefix_position_shift(*arch, chain);
  for (const Model* a : chain)
    if (a->adaptation.prompt) virtual_tokens += a->adaptation.prompt->virtual_tokens;
  const int length = m.training->max_length > 0 ? m.training->max_length : arch->max_length;
  if (virtual_tokens == 0 || virtual_tokens + length <= arch->max_length) return;
  const YamlNode* train = find(*e.node, "train");
  const YamlNode* max_length = find(*train, "max_length");
  const std::string path = join_path(join_path("models", m.name), "train");
  const int room = arch->max_length - virtual_tokens;
  const char* kinds = prefix_counts ? "prompt and prefix" : "prompt";
  r.error(max_length ? *max_length : *train, max_length ? join_path(path, "max_length") : path,
          fmt::format("{} {} virtual tokens plus train.max_length {}{} exceed the base's "
                      "max_length {}{}",
                      virtual_tokens, kinds, length,
                      max_length ? "" : " (the base's, as it is not set)", arch->max_length,
                      prefix_counts ? " (on this imported base the text's positions start "
                                      "after the prefix, as in transformers)"
                                    : ""),
          room >= 3 ? fmt::format("; set train.max_length to at most {}", room)
                    : fmt::format("; use fewer {} virtual tokens", kinds));
}

// A descendant without a head trains a language-model objective by default, which
// ignores the labels of labelled data: most likely a forgotten head.
void warn_labels_ignored(SpecReader& r, const ModelEntry& e, bool has_head,
                         const std::vector<Dataset>& datasets) {
  const Model& m = e.model;
  const YamlNode* train = find(*e.node, "train");
  if (m.is_base() || !m.training || has_head || find(*train, "objective")) return;
  for (const Dataset& d : datasets) {
    if (d.name != m.training->dataset || !d.labelled()) continue;
    const bool mlm = m.training->objective == Objective::kMaskedLm;
    r.warn(*train, join_path(join_path("models", m.name), "train"),
           fmt::format("'{}' has no classification head (of its own or an ancestor's), so it "
                       "trains with objective {} ({}) on dataset '{}' and ignores its labels",
                       m.name, word(m.training->objective),
                       mlm ? "masked language model" : "causal language model", d.name),
           fmt::format("; add adapt: {{head: {{}}}} to train a classifier, or write objective: "
                       "{} to keep this",
                       word(m.training->objective)));
  }
}

// The keys an architecture written beside a Hugging Face folder may give, each of which
// must agree with config.json: the folder is the truth, the spec only restates it.
void check_architecture_agrees(SpecReader& r, const YamlNode& node, const std::string& path,
                               const Architecture& folder, const std::string& config) {
  if (!r.expect_map(node, path, "a mapping describing the transformer")) return;
  constexpr std::string_view kRestatable[] = {"layers",     "width",      "heads", "ffn_width",
                                              "vocab_size", "max_length", "type",  "norm"};
  r.check_keys(node, path, kRestatable);
  const std::pair<const char*, int> counts[] = {
      {"layers", folder.layers},         {"width", folder.width},
      {"heads", folder.heads},           {"ffn_width", folder.ffn_width},
      {"vocab_size", folder.vocab_size}, {"max_length", folder.max_length}};
  for (const auto& [key, expected] : counts) {
    int given = 0;
    const YamlNode* n = find(node, key);
    if (n && r.read_int(n, join_path(path, key), given, 1, 1 << 22, "a positive integer") &&
        given != expected)
      r.error(*n, join_path(path, key),
              fmt::format("{} is {} but '{}' says {}", key, given, config, expected),
              "; remove the key (the folder's config.json gives the architecture) or fix it");
  }
  const std::pair<const char*, std::string_view> words[] = {
      {"type", folder.kind == ArchitectureKind::kEncoder ? "encoder" : "decoder"},
      {"norm", folder.norm == NormPlacement::kPost ? "post" : "pre"}};
  for (const auto& [key, expected] : words) {
    const YamlNode* n = find(node, key);
    if (n && (!n->is_scalar() || n->value != expected))
      r.error(*n, join_path(path, key),
              fmt::format("{} is '{}' but '{}' describes a {} model ({})", key, n->value,
                          config, folder.hf_model_type, expected),
              "; remove the key (the folder's config.json gives the architecture) or fix it");
  }
}

// A folder several bases import is broken for each of them alike: it is reported once, at
// the first base's import, with the other bases named there, instead of one identical
// error per model.
void report_broken_folder(SpecReader& r, const YamlNode& import, const std::string& path,
                          const std::filesystem::path& folder, const Status& why,
                          FileResolver& files, const std::string& model) {
  auto [broken, first] = files.broken_folders.try_emplace(folder);
  if (first) {
    broken->second.error = r.error_count();
    r.error(import, path, why.message());
    return;
  }
  std::vector<std::string>& others = broken->second.also_imported_by;
  others.push_back(model);
  r.append_to_error(broken->second.error,
                    fmt::format("{}'{}'", others.size() == 1 ? "; the same folder is imported by "
                                                             : ", ",
                                model));
}

// `import` (a safetensors file, or a Hugging Face folder that also gives the architecture)
// and `architecture` of a base.
void load_base_weights_and_architecture(SpecReader& r, const YamlNode& node,
                                        const std::string& path, FileResolver& files,
                                        Model& model) {
  const YamlNode* arch = find(node, "architecture");
  const YamlNode* import = find(node, "import");
  std::string spelled;
  const bool import_read = import && r.read_string(import, join_path(path, "import"), spelled);
  if (import_read && !spelled.empty() && std::filesystem::is_directory(files.base_dir / spelled)) {
    const std::filesystem::path folder = (files.base_dir / spelled).lexically_normal();
    auto read = read_hf_model_folder(folder, spelled);
    if (!read) {
      report_broken_folder(r, *import, join_path(path, "import"), folder, read.status(), files,
                           model.name);
      return;
    }
    model.import_path = folder.string();
    model.import_digest = read->digest;
    model.architecture = read->architecture;
    if (arch)
      check_architecture_agrees(r, *arch, join_path(path, "architecture"), read->architecture,
                                (folder / "config.json").string());
    return;
  }
  if (arch) model.architecture = load_architecture(r, *arch, join_path(path, "architecture"));
  if (!import) return;
  if (!arch)
    r.error(node, path,
            "missing required key 'architecture' (a base imported from a safetensors file "
            "needs one; a Hugging Face model folder's config.json gives it instead)");
  std::filesystem::path absolute;
  if (import_read && resolve_file(r, *import, join_path(path, "import"), spelled, files, absolute,
                                  model.import_digest))
    model.import_path = absolute.string();
}

}  // namespace

std::optional<Architecture> load_architecture(SpecReader& r, const YamlNode& node,
                                              const std::string& path) {
  if (!r.expect_map(node, path, "a mapping describing the transformer")) return std::nullopt;
  const std::size_t errors_before = r.error_count();
  r.check_keys(node, path, keys::kArchitecture);
  Architecture a;
  const auto key = [&](std::string_view k) { return join_path(path, k); };
  r.read_choice<ArchitectureKind>(find(node, "type"), key("type"), keys::kArchitectureKinds, a.kind,
                                  "architecture type");
  const auto required_int = [&](std::string_view k, int& out, int max, const char* what) {
    if (const YamlNode* n = r.require(node, path, k, what))
      r.read_int(n, key(k), out, 1, max, fmt::format("an integer from 1 to {}", max));
  };
  required_int("layers", a.layers, 1024, "the number of transformer blocks");
  required_int("width", a.width, 1 << 16, "the model width");
  required_int("heads", a.heads, 1 << 12, "the number of attention heads");
  required_int("max_length", a.max_length, 1 << 20, "the longest sequence, in tokens");
  a.ffn_width = 4 * a.width;
  r.read_int(find(node, "ffn_width"), key("ffn_width"), a.ffn_width, 1, 1 << 20,
             "an integer from 1 to 1048576");
  if (const YamlNode* tok = find(node, "tokenizer")) {
    if (r.read_choice<TokenizerKind>(tok, key("tokenizer"), keys::kTokenizers, a.tokenizer.kind,
                                     "tokenizer") &&
        a.tokenizer.kind != TokenizerKind::kByte)
      r.error(*tok, key("tokenizer"),
              fmt::format("tokenizer '{}' is not supported yet", tok->value),
              "; use tokenizer: byte");
  }
  r.read_int(find(node, "vocab_size"), key("vocab_size"), a.vocab_size, kByteTokenizerVocabSize,
             1 << 20,
             "an integer from 260 (the byte tokenizer's 256 bytes and 4 special tokens) to "
             "1048576");
  r.read_choice<NormPlacement>(find(node, "norm"), key("norm"), keys::kNorms, a.norm,
                               "norm placement");
  r.read_float(find(node, "dropout"), key("dropout"), a.dropout, 0, false, 1, true,
               "a number from 0 to below 1");
  r.read_bool(find(node, "tie_embeddings"), key("tie_embeddings"), a.tie_embeddings);
  if (a.heads > 0 && a.width > 0 && a.width % a.heads != 0)
    r.error(*find(node, "heads"), key("heads"),
            fmt::format("heads ({}) must divide width ({})", a.heads, a.width),
            "; choose a head count that divides the width");
  if (r.error_count() != errors_before) return std::nullopt;
  return a;
}

std::vector<ModelEntry> load_model_heads(SpecReader& r, const YamlNode& section,
                                         FileResolver& files) {
  std::vector<ModelEntry> entries;
  if (!r.expect_map(section, "models", "a mapping from model names to models")) return entries;
  r.check_unique_names(section, "models", "model");
  std::set<std::string> seen;
  for (const auto& [key, value] : section.entries) {
    if (!key->is_scalar() || key->value.empty() || !seen.insert(key->value).second) continue;
    if (entries.size() == kMaxModels) {
      r.error(*key, join_path("models", key->value), fmt::format("more than {} models", kMaxModels),
              "; split the family into several workspaces");
      break;
    }
    ModelEntry e;
    e.model.name = key->value;
    e.model.location = r.location(*key);
    e.key = key.get();
    e.node = value.get();
    const std::string path = join_path("models", key->value);
    if (r.expect_map(*value, path)) {
      r.check_keys(*value, path, keys::kModel);
      e.from_node = find(*value, "from");
      if (e.from_node && r.read_string(e.from_node, join_path(path, "from"), e.model.from) &&
          e.model.from.empty())
        r.error(*e.from_node, join_path(path, "from"), "expected a model name, got ''");
      const bool base = e.from_node == nullptr;
      e.shape_ok = check_model_shape(r, *value, path, base);
      if (base) load_base_weights_and_architecture(r, *value, path, files, e.model);
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

void load_model_body(SpecReader& r, ModelEntry& e, const Architecture* arch,
                     const std::vector<const Model*>& ancestors,
                     const std::vector<Dataset>& datasets) {
  if (!e.node->is_map()) return;
  Model& m = e.model;
  const std::string path = join_path("models", m.name);
  if (const YamlNode* adapt = find(*e.node, "adapt"); adapt && !m.is_base())
    load_adaptation(r, *adapt, join_path(path, "adapt"), arch, m.adaptation);
  r.read_string_list(find(*e.node, "freeze"), join_path(path, "freeze"), m.freeze);
  r.read_string_list(find(*e.node, "unfreeze"), join_path(path, "unfreeze"), m.unfreeze);
  HeadSpec implicit;
  const bool has_head =
      m.adaptation.head.has_value() || inherited_head(ancestors, datasets, implicit) != nullptr;
  if (const YamlNode* train = find(*e.node, "train")) {
    TrainingContext context;
    context.arch = arch;
    context.has_head = has_head;
    context.datasets = &datasets;
    m.training = load_training(r, *train, join_path(path, "train"), context);
  }
  if (check_completion_data(r, e, datasets)) settle_head_labels(r, e, ancestors, datasets);
  check_prompt_room(r, e, arch, ancestors);
  if (const YamlNode* adapt = find(*e.node, "adapt"); adapt && !m.is_base())
    for (const MethodBlock* block : method_blocks())
      block->check_family(r, *adapt, m, arch, ancestors);
  // Without a known base (a `from:` naming no model, already an error) the ancestry and
  // its heads are unknown: a warning about a missing head would be noise.
  if (arch) warn_labels_ignored(r, e, has_head, datasets);
}

}  // namespace scion::spec::detail
