// Terminal and JSON output shared by the subcommands.
//
// Errors and progress go to stderr (coloured only when stderr is a terminal and NO_COLOR
// is unset); results go to stdout, as text or, with --json, as one JSON document.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "spec/status.h"
#include "workbench/checked_workspace.h"

namespace scion::cli {

enum class Color { kNone, kRed, kYellow, kGreen, kBold, kDim, kCyan };

// Wraps text in an ANSI colour when `stream_is_tty`; plain text otherwise.
std::string paint(std::string_view text, Color color, bool stream_is_tty);
bool stdout_is_tty();
bool stderr_is_tty();

// "error: <message>" on stderr, the word "error" in red on a terminal.
void print_error(const Status& status);
void print_error(std::string_view message);
void print_warning(std::string_view message);
void print_note(std::string_view message);

// Prints each warning and error as "file:line:col: warning|error: message" on stderr.
void print_diagnostics(const workbench::CheckedWorkspace& checked);

// Pretty-printed JSON document on stdout, followed by a newline.
void print_json(const nlohmann::json& document);

}  // namespace scion::cli
