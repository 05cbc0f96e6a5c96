#include "spec/diagnostic.h"

#include <fmt/format.h>

namespace scion::spec {

std::string Diagnostic::to_string() const { return where() + ": error: " + message; }

std::string Diagnostic::where() const {
  if (location.line == 0) return location.file;
  if (location.column == 0) return fmt::format("{}:{}", location.file, location.line);
  return fmt::format("{}:{}:{}", location.file, location.line, location.column);
}

Diagnostic Diagnostic::at(std::string file, int line, int column, std::string message,
                          std::string key_path) {
  Diagnostic d;
  d.location.file = std::move(file);
  d.location.line = line;
  d.location.column = column;
  d.key_path = std::move(key_path);
  d.message = std::move(message);
  return d;
}

}  // namespace scion::spec
