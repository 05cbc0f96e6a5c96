// Diagnostic: one problem found in a spec, with where it is and what to do about it.
//
// The loader collects every diagnostic it finds instead of stopping at the first, so a
// user fixes a spec in one round. A diagnostic is a plain value.
#pragma once

#include <string>

#include "spec/workspace.h"

namespace scion::spec {

struct Diagnostic {
  SourceLocation location;
  std::string key_path;  // e.g. models.review.adapt.prefix.layers; empty for syntax errors
  std::string message;   // complete sentence: what, at which key, and the expected value

  // "<where()>: error: <message>", e.g. "scion.yaml:12:5: error: ..." or, for a spec file
  // that does not exist, "scion.yaml: error: ...".
  std::string to_string() const;
  // "file:line:col"; "file:line" when column is 0 (a row of a data file); "file" when
  // line is 0.
  std::string where() const;

  static Diagnostic at(std::string file, int line, int column, std::string message,
                       std::string key_path = "");
};

}  // namespace scion::spec
