// The family as a graph in the formats of other tools: Graphviz DOT and Mermaid. Each
// model is a node labelled with its name, method and status (styled by status: dashed
// when not trained or interrupted, orange when out of date); parent -> child edges; each
// `share` is a dashed, undirected purple link between its members. Labels are escaped
// for each format, so any text (`odd "name" <x>&y`) shows as written and cannot end a
// string early.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/family_report.h"

namespace scion::report {

std::string family_dot(const std::vector<ReportModel>& models,
                       const std::vector<ReportShare>& shares);
std::string family_mermaid(const std::vector<ReportModel>& models,
                           const std::vector<ReportShare>& shares);

// `text` inside a DOT double-quoted string: `"` and `\` escaped, a newline as \n.
std::string dot_escape(std::string_view text);
// `text` inside a Mermaid ["..."] label: " < > & # as entity codes (#quot; ...).
std::string mermaid_escape(std::string_view text);

}  // namespace scion::report
