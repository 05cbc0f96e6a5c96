// The import step of `scion run` (and `scion train`): a base declared with `import:` in the
// spec, read from that file or Hugging Face folder, checked like `scion import` does
// (workbench/base_import.h) and committed as an `import` run. The checkpoint's digest is
// computed again and must equal the one the spec was loaded with (the recipe hash covers
// it), so what is stored is what the plan named.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

struct DeclaredImport {
  std::int64_t run = 0;
  std::size_t tensors = 0;
  std::int64_t bytes = 0;
  std::vector<std::string> notes;  // what a Hugging Face folder skips on purpose
};

// REQUIRES: `model` is a base of `ws` with an import path. Errors: the checkpoint changed
// since the spec was read (kSpecError: run again), does not fit the model (kSpecError,
// every problem in the message), holds values that are not finite (kCorruption: import it
// with `scion import --allow-nonfinite`), and store errors.
Result<DeclaredImport> import_declared_base(const spec::Workspace& ws, lineage::LineageStore& store,
                                            const spec::Model& model);

}  // namespace scion::workbench
