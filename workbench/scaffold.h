// `scion init`: a new workspace to start from, a small family that validates and trains in a
// couple of seconds.
//
// scaffold_workspace writes, into a folder (made when missing):
//   scion.yaml          a commented spec: a trunk, two adapted models, a behavioural test and
//                       an assertion, with the yaml-language-server modeline;
//   scion.schema.json   the spec's JSON Schema (spec/json_schema.h), which the modeline names;
//   data/reviews.jsonl  a tiny labelled dataset the spec trains on.
// It never replaces a file: when any of them exists it writes nothing and says which.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"

namespace scion::workbench {

struct ScaffoldedFile {
  std::string path;  // relative to the folder
  std::size_t bytes = 0;
};

// REQUIRES: nothing; a folder that holds any of the files is refused (invalid argument).
Result<std::vector<ScaffoldedFile>> scaffold_workspace(const std::filesystem::path& dir);

}  // namespace scion::workbench
