#include "cli/output.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace scion::cli {
namespace {

bool colour_allowed(int fd) { return isatty(fd) && std::getenv("NO_COLOR") == nullptr; }

const char* ansi_code(Color color) {
  switch (color) {
    case Color::kRed:
      return "\033[1;31m";
    case Color::kYellow:
      return "\033[1;33m";
    case Color::kGreen:
      return "\033[32m";
    case Color::kBold:
      return "\033[1m";
    case Color::kDim:
      return "\033[2m";
    case Color::kCyan:
      return "\033[36m";
    case Color::kNone:
      return "";
  }
  return "";
}

void print_labelled(std::string_view label, Color color, std::string_view message) {
  std::cerr << paint(label, color, stderr_is_tty()) << ": " << message << '\n';
}

}  // namespace

bool stdout_is_tty() { return colour_allowed(STDOUT_FILENO); }
bool stderr_is_tty() { return colour_allowed(STDERR_FILENO); }

std::string paint(std::string_view text, Color color, bool stream_is_tty) {
  if (!stream_is_tty || color == Color::kNone) return std::string(text);
  return std::string(ansi_code(color)) + std::string(text) + "\033[0m";
}

void print_error(const Status& status) { print_error(status.message()); }
void print_error(std::string_view message) { print_labelled("error", Color::kRed, message); }
void print_warning(std::string_view message) { print_labelled("warning", Color::kYellow, message); }
void print_note(std::string_view message) { print_labelled("note", Color::kCyan, message); }

void print_json(const nlohmann::json& document) { std::cout << document.dump(2) << '\n'; }

namespace {

void print(const std::vector<spec::Diagnostic>& diagnostics, const char* severity, Color color) {
  for (const spec::Diagnostic& d : diagnostics)
    std::cerr << d.where() << ": " << paint(severity, color, stderr_is_tty()) << ": " << d.message
              << '\n';
}

}  // namespace

void print_diagnostics(const workbench::CheckedWorkspace& checked) {
  print(checked.warnings, "warning", Color::kYellow);
  print(checked.errors, "error", Color::kRed);
}

}  // namespace scion::cli
