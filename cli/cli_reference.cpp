// Walks the CLI11 app: its commands (nested: `lineage tree`), their options and help texts,
// and writes roff or shell from them (cli/cli_reference.h).
#include "cli/cli_reference.h"

#include <fmt/format.h>

#include <vector>

namespace scion::cli {
namespace {

// A command and where it sits: "" for scion itself, "lineage tree" for a nested one.
struct Command {
  std::string path;
  const CLI::App* app = nullptr;
};

void collect(const CLI::App& app, const std::string& path, std::vector<Command>& out) {
  out.push_back({path, &app});
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
    collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
}

std::vector<Command> commands_of(const CLI::App& app) {
  std::vector<Command> out;
  collect(app, "", out);
  return out;
}

std::vector<const CLI::App*> visible_subcommands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
}

std::vector<const CLI::Option*> visible_options(const CLI::App& app) {
  return app.get_options([](const CLI::Option* o) { return !o->get_group().empty(); });
}

// The words a user types for an option: "-f", "--file"; none for a positional.
std::vector<std::string> option_words(const CLI::Option& o) {
  std::vector<std::string> words;
  for (const std::string& s : o.get_snames()) words.push_back("-" + s);
  for (const std::string& l : o.get_lnames()) words.push_back("--" + l);
  return words;
}

// What completes after `path`: its subcommands and option words.
std::vector<std::string> completions_of(const Command& c) {
  std::vector<std::string> words;
  for (const CLI::App* sub : visible_subcommands(*c.app)) words.push_back(sub->get_name());
  for (const CLI::Option* o : visible_options(*c.app))
    for (std::string& w : option_words(*o)) words.push_back(std::move(w));
  return words;
}

// roff: backslashes and hyphens escaped, a line never starting with a control character.
std::string roff(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
    line_start = c == '\n';
  }
  return out;
}

std::string man_options(const CLI::App& app) {
  std::string out;
  for (const CLI::Option* o : visible_options(app)) {
    std::string words;
    for (const std::string& w : option_words(*o)) words += (words.empty() ? "" : ", ") + fmt::format("\\fB{}\\fR", roff(w));
    if (words.empty()) words = fmt::format("\\fI{}\\fR", roff(o->get_name(true)));
    const std::string value = o->get_option_text();
    if (!value.empty() && !option_words(*o).empty()) words += fmt::format(" \\fI{}\\fR", roff(value));
    out += fmt::format(".TP\n{}\n{}\n", words, roff(o->get_description()));
  }
  return out;
}

// Single quotes for the shell: 'it'\''s'.
std::string shell_quoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The loop both shells use to find which command the words so far name.
std::string command_patterns(const std::vector<Command>& commands) {
  std::string patterns;
  for (const Command& c : commands)
    if (!c.path.empty()) patterns += (patterns.empty() ? "" : "|") + shell_quoted(" " + c.path);
  return patterns;
}

}  // namespace

std::string man_page(const CLI::App& app) {
  std::string out = fmt::format(
      ".TH SCION 1 \"\" \"scion {}\" \"User Commands\"\n.SH NAME\nscion \\- {}\n"
      ".SH SYNOPSIS\n\\fBscion\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]\n"
      ".SH DESCRIPTION\nscion trains, tests and traces families of adapted transformer models: "
      "one pretrained trunk and the models adapted from it, recorded in a lineage store. "
      "The full reference is docs/cli.md.\n.SH OPTIONS\n",
      SCION_VERSION, roff(app.get_description().substr(app.get_description().find(": ") + 2)));
  out += man_options(app);
  out += ".SH COMMANDS\n";
  for (const Command& c : commands_of(app)) {
    if (c.path.empty()) continue;
    out += fmt::format(".SS \"scion {}\"\n{}\n", roff(c.path), roff(c.app->get_description()));
    out += man_options(*c.app);
    const std::string footer = c.app->get_footer();
    if (!footer.empty()) out += fmt::format(".PP\n.nf\n{}\n.fi\n", roff(footer));
  }
  out += fmt::format(".SH EXIT STATUS\n.nf\n{}\n.fi\n", roff(app.get_footer()));
  out += ".SH SEE ALSO\nThe documents in docs/ of the scion source: cli.md, spec.md, json.md.\n";
  return out;
}

std::string bash_completion(const CLI::App& app) {
  const std::vector<Command> commands = commands_of(app);
  std::string cases;
  for (const Command& c : commands) {
    std::string words;
    for (const std::string& w : completions_of(c)) words += (words.empty() ? "" : " ") + w;
    cases += fmt::format("    {}) words={} ;;\n", shell_quoted(c.path.empty() ? "" : " " + c.path),
                         shell_quoted(words));
  }
  return fmt::format(
      "# bash completion for scion, generated from its CLI definition (scion --generate bash)\n"
      "_scion() {{\n"
      "  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" path=\"\" i words\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case \"$path ${{COMP_WORDS[i]}}\" in\n"
      "      {}) path=\"$path ${{COMP_WORDS[i]}}\" ;;\n"
      "    esac\n"
      "  done\n"
      "  case \"$path\" in\n{}"
      "  esac\n"
      "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      "}}\n"
      "complete -o default -F _scion scion\n",
      command_patterns(commands), cases);
}

std::string zsh_completion(const CLI::App& app) {
  const std::vector<Command> commands = commands_of(app);
  std::string cases;
  for (const Command& c : commands) {
    std::string items;
    for (const CLI::App* sub : visible_subcommands(*c.app))
      items.append(" ").append(shell_quoted(fmt::format("{}:{}", sub->get_name(), sub->get_description())));
    for (const CLI::Option* o : visible_options(*c.app))
      for (const std::string& w : option_words(*o))
        items.append(" ").append(shell_quoted(fmt::format("{}:{}", w, o->get_description())));
    cases += fmt::format("    ({}) items=({}) ;;\n", shell_quoted(c.path.empty() ? "" : " " + c.path), items);
  }
  return fmt::format(
      "#compdef scion\n"
      "# zsh completion for scion, generated from its CLI definition (scion --generate zsh)\n"
      "_scion() {{\n"
      "  local path_so_far=\"\" i\n"
      "  local -a items\n"
      "  for ((i = 2; i < CURRENT; i++)); do\n"
      "    case \"$path_so_far ${{words[i]}}\" in\n"
      "      ({}) path_so_far=\"$path_so_far ${{words[i]}}\" ;;\n"
      "    esac\n"
      "  done\n"
      "  case \"$path_so_far\" in\n{}"
      "  esac\n"
      "  _describe -t commands 'scion' items\n"
      "}}\n"
      "_scion \"$@\"\n",
      command_patterns(commands), cases);
}

}  // namespace scion::cli
