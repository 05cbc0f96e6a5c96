// The family report as one self-contained HTML page: inline CSS and SVG only, no
// scripts, fonts or anything else fetched over a network, so it opens from a CI artifact
// or an e-mail as it is. Sections: family tree, behavioural-test matrix (a heat map whose
// cells link to their failing cases), assertion violations, blame, training curves and
// each model's recipe.
#pragma once

#include <string>

#include "report/family_report.h"

namespace scion::report {

std::string render_html(const FamilyReport& report);

}  // namespace scion::report
