#include "report/graph_formats.h"

#include <fmt/format.h>

#include <map>

namespace scion::report {
namespace {

enum class Look { kPlain, kStale, kAbsent };

Look look_of(const std::string& status) {
  if (status == "out of date") return Look::kStale;
  if (status == "not trained" || status.starts_with("interrupted")) return Look::kAbsent;
  return Look::kPlain;
}

// The members of each share, consecutive pairs: a chain is enough to show who is joined.
template <typename Emit>
void for_each_share_link(const std::vector<ReportShare>& shares, Emit emit) {
  for (const ReportShare& s : shares)
    for (std::size_t i = 1; i < s.models.size(); ++i) emit(s.name, s.models[i - 1], s.models[i]);
}

}  // namespace

std::string dot_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += {'\\', c};
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string mermaid_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '"':
        out += "#quot;";
        break;
      case '<':
        out += "#lt;";
        break;
      case '>':
        out += "#gt;";
        break;
      case '&':
        out += "#amp;";
        break;
      case '#':
        out += "#35;";
        break;
      case '\n':
        out += "<br/>";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string family_dot(const std::vector<ReportModel>& models,
                       const std::vector<ReportShare>& shares) {
  std::string out = "digraph scion {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (const ReportModel& m : models) {
    const Look look = look_of(m.status);
    out += fmt::format("  \"{}\" [label=\"{}\\n{}\\n{}\"{}];\n", dot_escape(m.name),
                       dot_escape(m.name), dot_escape(m.method), dot_escape(m.status),
                       look == Look::kStale    ? ", color=orange"
                       : look == Look::kAbsent ? ", style=dashed"
                                               : "");
  }
  for (const ReportModel& m : models)
    if (!m.parent.empty())
      out += fmt::format("  \"{}\" -> \"{}\";\n", dot_escape(m.parent), dot_escape(m.name));
  for_each_share_link(shares,
                      [&out](const std::string& share, const std::string& a, const std::string& b) {
                        out += fmt::format(
                            "  \"{}\" -> \"{}\" [dir=none, style=dashed, color=purple, "
                            "fontcolor=purple, constraint=false, "
                            "label=\"share {}\"];\n",
                            dot_escape(a), dot_escape(b), dot_escape(share));
                      });
  return out + "}\n";
}

std::string family_mermaid(const std::vector<ReportModel>& models,
                           const std::vector<ReportShare>& shares) {
  // Mermaid ids are m0, m1, ...: a model's name is only ever a label.
  std::map<std::string, std::size_t> id;
  for (std::size_t i = 0; i < models.size(); ++i) id[models[i].name] = i;
  std::string out = "graph TD\n";
  for (std::size_t i = 0; i < models.size(); ++i)
    out += fmt::format("  m{}[\"{}<br/>{}<br/>{}\"]\n", i, mermaid_escape(models[i].name),
                       mermaid_escape(models[i].method), mermaid_escape(models[i].status));
  for (std::size_t i = 0; i < models.size(); ++i)
    if (auto parent = id.find(models[i].parent); parent != id.end())
      out += fmt::format("  m{} --> m{}\n", parent->second, i);
  for_each_share_link(
      shares, [&](const std::string& share, const std::string& a, const std::string& b) {
        if (id.count(a) && id.count(b))
          out += fmt::format("  m{} -.-|\"share {}\"| m{}\n", id[a], mermaid_escape(share), id[b]);
      });
  out += "  classDef stale stroke:#d08a00,stroke-width:2px\n";
  out += "  classDef absent stroke-dasharray:5 5\n";
  for (std::size_t i = 0; i < models.size(); ++i) {
    const Look look = look_of(models[i].status);
    if (look != Look::kPlain)
      out += fmt::format("  class m{} {}\n", i, look == Look::kStale ? "stale" : "absent");
  }
  return out;
}

}  // namespace scion::report
