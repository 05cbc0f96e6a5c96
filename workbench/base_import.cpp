#include "workbench/base_import.h"

#include <fmt/format.h>

#include <map>

#include "lineage/dtype.h"
#include "lineage/spec_records.h"
#include "runtime/model/parameter_table.h"
#include "spec/file_digest.h"
#include "spec/hf_model_folder.h"

namespace scion::workbench {
namespace {

std::string shape_json(const std::vector<std::int64_t>& shape) {
  return nlohmann::json(shape).dump();
}

// Every mismatch between the checkpoint and the table, so one run shows them all.
void add_mismatches(const std::vector<runtime::ParameterSpec>& table,
                    const lineage::SafetensorsContents& contents,
                    std::vector<std::string>& problems) {
  std::map<std::string, const lineage::SafetensorsTensor*> in_file;
  for (const auto& t : contents.tensors) in_file[t.name] = &t;
  for (const auto& p : table) {
    auto it = in_file.find(p.name);
    if (it == in_file.end()) {
      problems.push_back("missing tensor '" + p.name + "' " + shape_json(p.shape));
      continue;
    }
    if (it->second->shape != p.shape)
      problems.push_back("tensor '" + p.name + "' has shape " + shape_json(it->second->shape) +
                         ", the spec's architecture needs " + shape_json(p.shape));
    in_file.erase(it);
  }
  for (const auto& [name, t] : in_file)
    problems.push_back("extra tensor '" + name + "' " + shape_json(t->shape) +
                       " is not a parameter of the model");
}

// Parameters that are not floating point cannot be converted for the runtime.
void add_non_float(const lineage::SafetensorsContents& contents,
                   std::vector<std::string>& problems) {
  for (const auto& t : contents.tensors)
    if (!lineage::is_convertible_to_float32(t.dtype))
      problems.push_back("tensor '" + t.name + "' has dtype " +
                         std::string(lineage::dtype_name(t.dtype)) +
                         "; parameters must be F64, F32, F16 or BF16");
}

// Every tensor holding NaN or infinite values, with how many: a checkpoint that diverged
// would make every model trained from it diverge, and every prediction NaN.
std::vector<std::string> non_finite_tensors(const lineage::SafetensorsContents& contents) {
  std::vector<std::string> found;
  for (const auto& t : contents.tensors)
    if (const std::int64_t n = lineage::count_non_finite(t.dtype, t.bytes); n > 0)
      found.push_back("tensor '" + t.name + "' has " + std::to_string(n) +
                      " NaN or infinite value" + (n == 1 ? "" : "s"));
  return found;
}

// The checkpoint's tensors under scion's names: a safetensors file as it is, or a Hugging
// Face folder mapped by its architecture's name table.
Status read_checkpoint(const std::filesystem::path& path, const spec::Model& model,
                       BaseImport& out) {
  if (!std::filesystem::is_directory(path)) {
    auto read = lineage::read_safetensors(lineage::default_env(), path);
    if (!read.is_ok()) return read.status();
    out.file = std::move(read).value();
    return Status::ok();
  }
  const std::string& type = model.architecture->hf_model_type;
  if (type.empty())
    return spec_error(fmt::format(
        "'{}' is a folder, but model '{}' ({}:{}) does not import a Hugging Face folder; write "
        "import: {} in the spec so its config.json gives the architecture",
        path.string(), model.name, model.location.file, model.location.line, path.string()));
  auto read = lineage::read_hf_checkpoint(lineage::default_env(), path, type);
  if (!read.is_ok()) return read.status();
  out.folder = std::move(read).value();
  return Status::ok();
}

// The digest a model's recipe records for a checkpoint at `path`: of a folder's file list
// (spec/hf_model_folder.h), or of a file's bytes.
Result<std::string> checkpoint_digest(const std::filesystem::path& path) {
  if (!std::filesystem::is_directory(path)) return spec::sha256_file(path);
  const auto folder = std::filesystem::absolute(path).lexically_normal();
  auto read = spec::read_hf_model_folder(folder, path.string());
  if (!read.is_ok()) return read.status();
  return read->digest;
}

// A model whose spec declares `import:` is recorded under that checkpoint's digest, so a
// checkpoint from elsewhere may be imported as it only when its contents are the same (a
// copy); any other would be stored under a recipe that does not describe it.
Status check_declared_checkpoint(const spec::Model& model, const std::filesystem::path& path) {
  if (model.import_path.empty() ||
      std::filesystem::absolute(path).lexically_normal() ==
          std::filesystem::path(model.import_path).lexically_normal())
    return Status::ok();  // the declared one: the loader digested it
  auto digest = checkpoint_digest(path);
  if (!digest.is_ok()) return digest.status();
  if (*digest == model.import_digest) return Status::ok();
  return spec_error(fmt::format(
      "'{}' is not the checkpoint model '{}' declares (import: {} at {}:{}): their contents "
      "differ (digest {} against {}); to adapt from it, declare it in the spec (import: {}) "
      "and run `scion run`, or import it as a model of its own",
      path.string(), model.name, model.import_path, model.location.file, model.location.line,
      digest->substr(0, 12), model.import_digest.substr(0, 12), path.string()));
}

}  // namespace

Result<std::unique_ptr<BaseImport>> read_base_import(const spec::Workspace& ws,
                                                     const spec::Model& model,
                                                     const std::filesystem::path& path,
                                                     std::vector<std::string>& problems,
                                                     std::vector<std::string>& notes) {
  if (!model.is_base())
    return invalid_argument(fmt::format(
        "model '{}' ({}:{}) is a descendant of '{}'; only base models can be imported",
        model.name, model.location.file, model.location.line, model.from));
  SCION_RETURN_IF_ERROR(check_declared_checkpoint(model, path));
  auto out = std::make_unique<BaseImport>();
  SCION_RETURN_IF_ERROR(read_checkpoint(path, model, *out));
  const bool is_folder = std::filesystem::is_directory(path);
  const lineage::SafetensorsContents& contents = is_folder ? out->folder.contents
                                                           : out->file.contents;
  notes = out->folder.notes;
  const auto table = runtime::parameter_table(ws, model);
  problems = out->folder.problems;
  add_mismatches(table, contents, problems);
  add_non_float(contents, problems);
  if (!problems.empty())
    return spec_error(fmt::format(
        "'{}' does not fit model '{}' as declared at {}:{} ({} problem(s)); fix the "
        "architecture in the spec or convert the checkpoint",
        path.string(), model.name, model.location.file, model.location.line, problems.size()));
  out->non_finite = non_finite_tensors(contents);

  std::map<std::string, const lineage::SafetensorsTensor*> by_name;
  for (const auto& t : contents.tensors) by_name[t.name] = &t;
  out->converted.reserve(table.size());
  for (const auto& p : table) {
    const auto& t = *by_name.at(p.name);
    std::span<const std::byte> values = t.bytes;
    if (t.dtype != lineage::DType::kF32) {
      out->converted.push_back(lineage::to_float32(t.dtype, t.bytes));
      values = std::as_bytes(std::span<const float>(out->converted.back()));
    }
    out->writes.push_back(
        {p.name, lineage::DType::kF32, t.shape, values, p.trainable, p.introduced_by, {}});
    out->bytes += static_cast<std::int64_t>(values.size());
  }
  return out;
}

Result<std::int64_t> commit_import(lineage::LineageStore& store, const spec::Workspace& ws,
                                   const spec::Model& model,
                                   const std::vector<lineage::ParameterWrite>& writes,
                                   const nlohmann::json& hyperparameters) {
  const lineage::ModelRecord record = lineage::model_record_for(ws, model);
  lineage::RunStart start;
  start.kind = lineage::RunKind::kImport;
  start.recipe_hash = model.recipe_hash;
  start.hyperparameters = hyperparameters;
  auto run = store.start_run(record, start);
  if (!run.is_ok()) return run.status();
  Status committed = store.commit_model(*run, record, writes);
  if (!committed.is_ok()) {
    (void)store.finish_run(*run, lineage::RunStatus::kFailed, committed.message());
    return committed;
  }
  return *run;
}

}  // namespace scion::workbench
