// Terminal and JSON output shared by the subcommands.
//
// Errors and progress go to stderr (coloured only when stderr is a terminal, NO_COLOR is
// unset and TERM is not dumb); results go to stdout, as text or, with --json, as one JSON document.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/status.h"
#include "workbench/checked_workspace.h"

namespace scion::cli {

enum class Color { kNone, kRed, kYellow, kGreen, kBold, kDim, kCyan };

// Wraps text in an ANSI colour when `stream_is_tty`; plain text otherwise.
std::string paint(std::string_view text, Color color, bool stream_is_tty);
// Whether colour may be written: the stream is a terminal, NO_COLOR is unset and TERM is
// not "dumb" (which shows escape codes as text).
bool stdout_is_tty();
bool stderr_is_tty();
// Whether stderr is a terminal at all, colour or not: progress lines rewrite themselves
// in place ("\r") there.
bool stderr_is_terminal();

// Text that came from data or the spec (inputs, labels, perturbations, reasons quoting
// them), as stdout shows it. On a terminal, control characters (ESC and the sequences it
// starts, OSC's BEL, newlines within a text, DEL, C1 controls) are written as \x1b-style
// escapes, so a hostile text cannot move the cursor, retitle the window or hide lines;
// anywhere else (a pipe, a file) the bytes stay as they are.
std::string terminal_text(std::string_view text);
// The escaping terminal_text applies, always.
std::string escape_controls(std::string_view text);

// "error: <message>" on stderr, the word "error" in red on a terminal.
void print_error(const Status& status);
void print_error(std::string_view message);
void print_warning(std::string_view message);
void print_note(std::string_view message);

// Prints each warning and error as "file:line:col: warning|error: message" on stderr
// (and remembers the first error for --json's error document).
void print_diagnostics(const workbench::CheckedWorkspace& checked);

// The version of the --json contract (docs/json.md): every document printed with
// print_json carries it as "schema_version". Raised when a key changes meaning or goes.
inline constexpr int kJsonSchemaVersion = 2;

// Pretty-printed JSON document on stdout, followed by a newline, with "schema_version"
// added to an object.
void print_json(const nlohmann::json& document);

// --json error reporting. Once enabled, print_error() also remembers the first error; a
// command that fails without printing a JSON document then gets
// {"schema_version": 2, "error": {"code": EXIT, "message": ..., "location": ...}} on stdout
// from main(), so a tool reading stdout always gets one JSON document.
void enable_json_errors();
bool json_document_printed();
// Remembers an error printed some other way (a spec diagnostic), with where it is:
// {"file", "line", "column"}; the first remembered error is the one reported.
void remember_json_error(std::string_view message, const nlohmann::json& location);
// The error document for a failure with exit code `code` (the first error's message, its
// file:line[:col] as `location` when it starts with one, else null).
nlohmann::json json_error_document(int code);

}  // namespace scion::cli
