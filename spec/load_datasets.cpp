// The `datasets` section, and the file and name resolution the other sections share.
#include <fmt/format.h>

#include <set>
#include <system_error>
#include <tuple>

#include "spec/file_digest.h"
#include "spec/keys.h"
#include "spec/loader_parts.h"

namespace scion::spec::detail {
namespace {

std::vector<std::string_view> words_of(const std::vector<std::string>& names) {
  return {names.begin(), names.end()};
}

// The format a file's extension implies, when it implies one.
std::optional<DatasetFormat> format_from_extension(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".jsonl") return DatasetFormat::kJsonl;
  if (ext == ".csv") return DatasetFormat::kCsv;
  if (ext == ".tsv") return DatasetFormat::kTsv;
  if (ext == ".txt") return DatasetFormat::kText;
  return std::nullopt;
}

bool check_labels(SpecReader& reader, const YamlNode* node, const std::string& path,
                  const std::vector<std::string>& labels, std::size_t least) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].empty()) {
      reader.error(*node->items[i], index_path(path, i), "expected a non-empty label name");
      return false;
    }
    if (!seen.insert(labels[i]).second) {
      reader.error(*node->items[i], index_path(path, i),
                   fmt::format("label '{}' is listed twice", labels[i]));
      return false;
    }
  }
  if (labels.size() < least) {
    reader.error(*node, path, "expected at least two labels, got one",
                 "; a yes/no label is label_type: multi with one label");
    return false;
  }
  return true;
}

// What label_type asks of the other keys.
void check_label_type(SpecReader& reader, const YamlNode& node, const std::string& path,
                      const Dataset& d) {
  const YamlNode* type = find(node, "label_type");
  const YamlNode* labels = find(node, "labels");
  const std::string tpath = join_path(path, "label_type");
  if (d.label_type == LabelType::kNumber) {
    if (labels)
      reader.error(*labels, join_path(path, "labels"),
                   "'labels' does not apply to label_type: number (the field holds numbers)",
                   "; name a regression head's outputs with its own labels: [...]");
  } else if (type && d.labels.empty()) {
    reader.error(*type, tpath,
                 fmt::format("label_type {} needs the label names", label_type_name(d.label_type)),
                 "; add labels: [...] to the dataset");
  }
  if (d.label_type == LabelType::kTags && d.format != DatasetFormat::kJsonl && type)
    reader.error(*type, tpath,
                 "label_type tags needs a JSONL dataset (each row a list of words and a list "
                 "of tags)");
  if (const YamlNode* pair = find(node, "text_pair_field");
      pair && d.label_type == LabelType::kTags)
    reader.error(*pair, join_path(path, "text_pair_field"),
                 "'text_pair_field' does not apply to label_type: tags");
}

// prompt_field and completion_field: both or neither, two different non-empty names, in
// place of the text and label fields, not for plain text.
void load_completion_fields(SpecReader& reader, const YamlNode& node, const std::string& path,
                            Dataset& d) {
  const YamlNode* prompt = find(node, "prompt_field");
  const YamlNode* completion = find(node, "completion_field");
  if (!prompt && !completion) return;
  if (d.format == DatasetFormat::kText) return;  // refused with the text-only keys below
  if (!prompt || !completion) {
    const char* given = prompt ? "prompt_field" : "completion_field";
    const char* missing = prompt ? "completion_field" : "prompt_field";
    reader.error(prompt ? *prompt : *completion, join_path(path, given),
                 fmt::format("{} needs {} too: a prompt/completion dataset names both fields",
                             given, missing));
    return;
  }
  std::string prompt_name, completion_name;
  if (!reader.read_string(prompt, join_path(path, "prompt_field"), prompt_name) ||
      !reader.read_string(completion, join_path(path, "completion_field"), completion_name))
    return;
  for (auto [n, key, value] : {std::tuple{prompt, "prompt_field", &prompt_name},
                               std::tuple{completion, "completion_field", &completion_name}})
    if (value->empty()) {
      reader.error(*n, join_path(path, key), "expected a field name, got an empty string");
      return;
    }
  if (prompt_name == completion_name) {
    reader.error(*completion, join_path(path, "completion_field"),
                 fmt::format("the prompt and the completion are both field '{}'; name two "
                             "different fields",
                             prompt_name));
    return;
  }
  for (std::string_view key :
       {"text_field", "text_pair_field", "label_field", "labels", "label_type"})
    if (const YamlNode* n = find(node, key)) {
      reader.error(*n, join_path(path, key),
                   fmt::format("'{}' does not apply to a prompt/completion dataset "
                               "(prompt_field and completion_field name what it reads)",
                               key));
      return;
    }
  d.prompt_field = std::move(prompt_name);
  d.completion_field = std::move(completion_name);
  d.label_field.clear();  // unlabelled
}

void load_dataset(SpecReader& reader, const YamlNode& node, const std::string& path,
                  FileResolver& files, Dataset& d) {
  reader.check_keys(node, path, keys::kDataset);
  const YamlNode* path_node = reader.require(node, path, "path", "the data file");
  std::string file;
  if (path_node && reader.read_string(path_node, join_path(path, "path"), file))
    resolve_file(reader, *path_node, join_path(path, "path"), file, files, d.path, d.digest);

  const YamlNode* format_node = find(node, "format");
  if (format_node) {
    reader.read_choice<DatasetFormat>(format_node, join_path(path, "format"), keys::kDatasetFormats,
                                      d.format, "dataset format");
  } else if (auto implied = format_from_extension(file)) {
    d.format = *implied;
  } else if (path_node) {
    reader.error(node, path,
                 fmt::format("missing required key 'format' (the extension of '{}' does not "
                             "imply one; use jsonl, csv, tsv or text)",
                             file));
  }
  if (d.format == DatasetFormat::kText) d.label_field.clear();
  reader.read_string(find(node, "text_field"), join_path(path, "text_field"), d.text_field);
  if (const YamlNode* pair = find(node, "text_pair_field");
      reader.read_string(pair, join_path(path, "text_pair_field"), d.text_pair_field) && pair &&
      (d.text_pair_field.empty() || d.text_pair_field == d.text_field))
    reader.error(*pair, join_path(path, "text_pair_field"),
                 "expected the name of a second text field, other than text_field");
  reader.read_string(find(node, "label_field"), join_path(path, "label_field"), d.label_field);
  reader.read_choice<LabelType>(find(node, "label_type"), join_path(path, "label_type"),
                                keys::kLabelTypes, d.label_type, "label type");
  const YamlNode* labels = find(node, "labels");
  if (reader.read_string_list(labels, join_path(path, "labels"), d.labels) && labels)
    check_labels(reader, labels, join_path(path, "labels"), d.labels,
                 d.label_type == LabelType::kMulti ? 1 : 2);
  if (d.format == DatasetFormat::kText) {
    for (std::string_view key : {"text_field", "text_pair_field", "label_field", "labels",
                                 "label_type", "prompt_field", "completion_field"})
      if (const YamlNode* n = find(node, key))
        reader.error(
            *n, join_path(path, key),
            fmt::format("'{}' does not apply to a text dataset (one example per line)", key));
  } else if (!d.labels.empty() && d.label_field.empty()) {
    reader.error(*labels, join_path(path, "labels"),
                 "labels given but label_field is empty; name the field that holds them");
  } else {
    check_label_type(reader, node, path, d);
  }
  load_completion_fields(reader, node, path, d);
}

}  // namespace

std::vector<std::string_view> Names::model_words() const { return words_of(models); }
std::vector<std::string_view> Names::dataset_words() const { return words_of(datasets); }

bool check_reference(SpecReader& reader, const YamlNode& node, const std::string& path,
                     const std::string& name, const std::vector<std::string>& known,
                     std::string_view kind) {
  for (const std::string& k : known)
    if (k == name) return true;
  const auto words = words_of(known);
  std::string hint = did_you_mean(name, words);
  if (hint.empty())
    hint = known.empty() ? fmt::format("; no {}s are defined", kind)
                         : fmt::format(" (defined {}s: {})", kind, join_words(words));
  reader.error(node, path, fmt::format("unknown {} '{}'", kind, name), hint);
  return false;
}

bool resolve_file(SpecReader& reader, const YamlNode& node, const std::string& path,
                  const std::string& value, FileResolver& files, std::filesystem::path& absolute,
                  std::string& digest) {
  if (value.empty()) {
    reader.error(node, path, "expected a file path, got an empty string");
    return false;
  }
  std::error_code ec;
  const std::filesystem::path resolved = (files.base_dir / value).lexically_normal();
  const auto status = std::filesystem::status(resolved, ec);
  if (ec || !std::filesystem::exists(status)) {
    reader.error(node, path,
                 fmt::format("file '{}' not found (looked for {})", value, resolved.string()),
                 "; create it or fix the path, which is relative to the spec's directory");
    return false;
  }
  // Only regular files: a FIFO or a device would block or never end.
  if (!std::filesystem::is_regular_file(status)) {
    reader.error(node, path, fmt::format("'{}' is not a regular file", value));
    return false;
  }
  auto cached = files.digests.find(resolved);
  if (cached == files.digests.end()) {
    auto sha = sha256_file(resolved);
    if (!sha.is_ok()) {
      reader.error(node, path, sha.status().message());
      return false;
    }
    cached = files.digests.emplace(resolved, sha.value()).first;
  }
  absolute = resolved;
  digest = cached->second;
  return true;
}

void load_datasets(SpecReader& reader, const YamlNode& section, FileResolver& files,
                   std::vector<Dataset>& out) {
  if (!reader.expect_map(section, "datasets", "a mapping from dataset names to datasets")) return;
  reader.check_unique_names(section, "datasets", "dataset");
  std::set<std::string> seen;
  for (const auto& [key, value] : section.entries) {
    if (!key->is_scalar() || key->value.empty() || !seen.insert(key->value).second) continue;
    const std::string path = join_path("datasets", key->value);
    Dataset d;
    d.name = key->value;
    d.location = reader.location(*key);
    if (reader.expect_map(*value, path)) load_dataset(reader, *value, path, files, d);
    out.push_back(std::move(d));
  }
}

}  // namespace scion::spec::detail
