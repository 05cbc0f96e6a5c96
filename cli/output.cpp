#include "cli/output.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <regex>
#include <string>

namespace scion::cli {
namespace {

struct JsonErrorState {
  bool enabled = false;
  bool document_printed = false;
  std::optional<std::string> first_error;
  nlohmann::json first_location;  // null: parse it from the message
};

JsonErrorState& json_state() {
  static JsonErrorState state;
  return state;
}

bool colour_allowed(int fd) {
  const char* term = std::getenv("TERM");
  return isatty(fd) && std::getenv("NO_COLOR") == nullptr &&
         (term == nullptr || std::string_view(term) != "dumb");
}

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
bool stderr_is_terminal() { return isatty(STDERR_FILENO); }

std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    // C1 controls (U+0080..U+009F) are 0xC2 0x80..0x9F in UTF-8; some terminals obey them
    // like ESC sequences (0x9B is CSI).
    const bool c1 = c == 0xC2 && i + 1 < text.size() &&
                    static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    char escaped[8];
    if ((c < 0x20 && c != '\t') || c == 0x7F) {
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else if (c1) {
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(text[++i]));
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string terminal_text(std::string_view text) {
  static const bool terminal = isatty(STDOUT_FILENO) != 0;
  return terminal ? escape_controls(text) : std::string(text);
}

std::string paint(std::string_view text, Color color, bool stream_is_tty) {
  if (!stream_is_tty || color == Color::kNone) return std::string(text);
  return std::string(ansi_code(color)) + std::string(text) + "\033[0m";
}

void print_error(const Status& status) { print_error(status.message()); }
void print_error(std::string_view message) {
  JsonErrorState& state = json_state();
  if (state.enabled && !state.first_error) state.first_error = std::string(message);
  print_labelled("error", Color::kRed, message);
}
void print_warning(std::string_view message) { print_labelled("warning", Color::kYellow, message); }
void print_note(std::string_view message) { print_labelled("note", Color::kCyan, message); }

void print_json(const nlohmann::json& document) {
  json_state().document_printed = true;
  if (!document.is_object()) {
    std::cout << document.dump(2) << '\n';
    return;
  }
  nlohmann::json versioned = document;
  versioned["schema_version"] = kJsonSchemaVersion;
  std::cout << versioned.dump(2) << '\n';
}

void enable_json_errors() { json_state().enabled = true; }

void remember_json_error(std::string_view message, const nlohmann::json& location) {
  JsonErrorState& state = json_state();
  if (!state.enabled || state.first_error) return;
  state.first_error = std::string(message);
  state.first_location = location;
}
bool json_document_printed() { return json_state().document_printed; }

nlohmann::json json_error_document(int code) {
  std::string message = json_state().first_error.value_or("failed with exit code " + std::to_string(code));
  nlohmann::json location = json_state().first_location;
  // "scion.yaml:12:5: error: ..." or "data/x.jsonl:7: ...": the place the message names.
  static const std::regex kPlace(R"(^([^\s:]+):(\d+)(?::(\d+))?: (?:error: )?)");
  std::smatch match;
  if (location.is_null() && std::regex_search(message, match, kPlace)) {
    location = {{"file", match[1].str()}, {"line", std::stoi(match[2].str())}};
    location["column"] = match[3].matched ? nlohmann::json(std::stoi(match[3].str())) : nlohmann::json();
    message = match.suffix().str();
  }
  return {{"schema_version", kJsonSchemaVersion},
          {"error", {{"code", code}, {"message", message}, {"location", location}}}};
}

namespace {

void print(const std::vector<spec::Diagnostic>& diagnostics, const char* severity, Color color) {
  for (const spec::Diagnostic& d : diagnostics)
    std::cerr << d.where() << ": " << paint(severity, color, stderr_is_tty()) << ": " << d.message
              << '\n';
}

}  // namespace

void print_diagnostics(const workbench::CheckedWorkspace& checked) {
  if (!checked.errors.empty()) {
    const spec::Diagnostic& first = checked.errors.front();
    remember_json_error(first.message, {{"file", first.location.file},
                                        {"line", first.location.line},
                                        {"column", first.location.column},
                                        {"key_path", first.key_path}});
  }
  print(checked.warnings, "warning", Color::kYellow);
  print(checked.errors, "error", Color::kRed);
}

}  // namespace scion::cli
