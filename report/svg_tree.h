// The family tree as an SVG picture: one box per model (name, method, status, shared and
// own parameters, last validation metrics), parent-to-child edges labelled with the
// tensors the child shares with its parent, and each `share` of the spec drawn as a
// dashed link between its members. Bases sit at the top; each subtree is laid out under
// its root with leaves side by side and parents centred over their children.
#pragma once

#include <string>
#include <vector>

#include "report/family_report.h"

namespace scion::report {

// Each box links to "#model-<index in models>".
// REQUIRES: parents come before their children in `models`.
std::string lineage_tree_svg(const std::vector<ReportModel>& models,
                             const std::vector<ReportShare>& shares);

}  // namespace scion::report
