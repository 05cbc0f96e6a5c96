// Internal to the loader: the readers for each top-level section of a scion.yaml.
//
// Each reader fills typed values and reports every problem to the shared SpecReader.
// loader.cpp calls them in dependency order (datasets, then models parents-first, then
// shares, tests and assertions) and runs the cross-reference checks.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec_reader.h"
#include "spec/workspace.h"

namespace scion::spec::detail {

// Bounds that keep loading (and every later walk over the family) fast on hostile specs.
inline constexpr std::size_t kMaxModels = 1000;
inline constexpr int kMaxGenerations = 64;

// The names of the models and datasets defined, for reference checks and suggestions.
struct Names {
  std::vector<std::string> models;
  std::vector<std::string> datasets;
  std::vector<std::string_view> model_words() const;
  std::vector<std::string_view> dataset_words() const;
};

// Reports an unknown model or dataset name with a suggestion; true when it resolves.
bool check_reference(SpecReader& reader, const YamlNode& node, const std::string& path,
                     const std::string& name, const std::vector<std::string>& known,
                     std::string_view kind);

// Files named by the spec: resolved against the spec's directory, each digested once
// however often it is named (a spec could name one huge file thousands of times).
struct FileResolver {
  // A Hugging Face folder that could not be read: the index of its one error and the
  // other bases that import it too (named in that error, not reported again).
  struct BrokenFolder {
    std::size_t error = 0;
    std::vector<std::string> also_imported_by;
  };

  std::filesystem::path base_dir;
  std::map<std::filesystem::path, std::string> digests;
  std::map<std::filesystem::path, BrokenFolder> broken_folders;
};

// Resolves `value`; reports a missing or non-regular file at `path` and otherwise returns
// its absolute path and SHA-256.
bool resolve_file(SpecReader& reader, const YamlNode& node, const std::string& path,
                  const std::string& value, FileResolver& files, std::filesystem::path& absolute,
                  std::string& digest);

void load_datasets(SpecReader& reader, const YamlNode& section, FileResolver& files,
                   std::vector<Dataset>& out);

// A model as first read: its name, node, `from` and (for a base) architecture. The rest
// is read by load_model_body once the base's architecture is known.
struct ModelEntry {
  Model model;
  const YamlNode* node = nullptr;       // the model's mapping
  const YamlNode* key = nullptr;        // its name
  const YamlNode* from_node = nullptr;  // `from`, for descendants
  bool shape_ok = false;                // a mapping with a consistent base/descendant shape
};

// Reads names, `from`, `architecture` and `import` of every model, in file order.
std::vector<ModelEntry> load_model_heads(SpecReader& reader, const YamlNode& section,
                                         FileResolver& files);

// Reads adapt, freeze/unfreeze and train. `base_arch` is the family's architecture when
// it is known and valid (range checks that depend on it are skipped otherwise);
// `ancestors` are the already-loaded ancestors, parent first.
void load_model_body(SpecReader& reader, ModelEntry& entry, const Architecture* base_arch,
                     const std::vector<const Model*>& ancestors,
                     const std::vector<Dataset>& datasets);

void load_shares(SpecReader& reader, const YamlNode& section, const Names& names,
                 std::vector<Share>& out);
void load_tests(SpecReader& reader, const YamlNode& section, const Names& names,
                std::vector<TestSpec>& out);
void load_assertions(SpecReader& reader, const YamlNode& section, const Names& names,
                     std::vector<AssertionSpec>& out);
void load_lexicons(SpecReader& reader, const YamlNode& section,
                   std::map<std::string, std::vector<std::string>>& out);

}  // namespace scion::spec::detail

namespace scion::spec::detail {

// Pieces of a model, each in its own file.
std::optional<Architecture> load_architecture(SpecReader& reader, const YamlNode& node,
                                              const std::string& path);
void load_adaptation(SpecReader& reader, const YamlNode& node, const std::string& path,
                     const Architecture* arch, Adaptation& out);

// What the training recipe of a model must agree with.
struct TrainingContext {
  const Architecture* arch = nullptr;  // null when the family's architecture is invalid
  bool has_head = false;               // the model or an ancestor has a classification head
  const std::vector<Dataset>* datasets = nullptr;
};
std::optional<TrainingSpec> load_training(SpecReader& reader, const YamlNode& node,
                                          const std::string& path, const TrainingContext& context);

}  // namespace scion::spec::detail
