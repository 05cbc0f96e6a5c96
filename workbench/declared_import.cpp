#include "workbench/declared_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "spec/file_digest.h"
#include "spec/hf_model_folder.h"
#include "workbench/base_import.h"

namespace scion::workbench {
namespace {

// The checkpoint's digest as the spec loader computes it: a Hugging Face folder's listing
// of file digests, or a safetensors file's bytes.
Result<std::string> checkpoint_digest(const std::filesystem::path& path) {
  if (!std::filesystem::is_directory(path)) return spec::sha256_file(path);
  auto folder = spec::read_hf_model_folder(path, path.string());
  if (!folder) return folder.status();
  return folder->digest;
}

}  // namespace

Result<DeclaredImport> import_declared_base(const spec::Workspace& ws, lineage::LineageStore& store,
                                            const spec::Model& model) {
  const std::filesystem::path path = model.import_path;
  auto digest = checkpoint_digest(path);
  if (!digest) return digest.status();
  if (*digest != model.import_digest)
    return spec_error(fmt::format(
        "'{}' ({}:{}) changed since the spec was read (sha256 {}, the spec's {}); nothing was "
        "imported. Run the command again",
        path.string(), model.location.file, model.location.line, digest->substr(0, 12),
        model.import_digest.substr(0, 12)));
  DeclaredImport out;
  std::vector<std::string> problems;
  auto checkpoint = read_base_import(ws, model, path, problems, out.notes);
  if (!checkpoint) {
    if (problems.empty()) return checkpoint.status();
    return Status(checkpoint.status().code(),
                  fmt::format("{}: {}", checkpoint.status().message(), fmt::join(problems, "; ")));
  }
  if (const auto& bad = (*checkpoint)->non_finite; !bad.empty())
    return corruption(fmt::format(
        "'{}' holds values that are not finite ({}); nothing was imported. Import it with "
        "`scion import {} --as {} --allow-nonfinite` if that is meant",
        path.string(), fmt::join(bad, "; "), path.string(), model.name));
  auto run = commit_import(
      store, ws, model, (*checkpoint)->writes,
      {{"file", std::filesystem::absolute(path).string()}, {"digest", model.import_digest}});
  if (!run) return run.status();
  out.run = *run;
  out.tensors = (*checkpoint)->writes.size();
  out.bytes = (*checkpoint)->bytes;
  return out;
}

}  // namespace scion::workbench
