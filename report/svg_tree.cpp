#include "report/svg_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/markup_escape.h"
#include "report/html_text.h"

namespace scion::report {
namespace {

constexpr double kBoxWidth = 210, kBoxHeight = 86, kGapX = 26, kLevelHeight = 136, kMargin = 20;

struct Placed {
  const ReportModel* model = nullptr;
  double x = 0;  // centre
  double y = 0;  // top
};

// Lays the subtree of `index` out from `next_leaf_x` (the left edge of the next free
// slot); returns the centre x of the subtree's root.
double place(std::size_t index, int depth, const std::vector<std::vector<std::size_t>>& children,
             std::vector<Placed>& placed, double& next_leaf_x) {
  double centre;
  if (children[index].empty()) {
    centre = next_leaf_x + kBoxWidth / 2;
    next_leaf_x += kBoxWidth + kGapX;
  } else {
    double first = 0, last = 0;
    for (std::size_t i = 0; i < children[index].size(); ++i) {
      const double c = place(children[index][i], depth + 1, children, placed, next_leaf_x);
      if (i == 0) first = c;
      last = c;
    }
    centre = (first + last) / 2;
  }
  placed[index].x = centre;
  placed[index].y = kMargin + depth * kLevelHeight;
  return centre;
}

std::string status_class(const std::string& status) {
  if (status == "trained" || status == "imported") return "ok";
  if (status == "out of date" || status.starts_with("interrupted")) return "stale";
  if (status == "not trained") return "absent";
  return "other";
}

std::string tensors_line(const ReportModel& m) {
  if (!m.parameters) return "no parameters stored";
  if (m.parent.empty()) return fmt::format("{} tensors, {} own", *m.parameters, m.own_parameters);
  return fmt::format("{} shared · {} own", m.shared_with_parent, m.own_parameters);
}

// "val accuracy 0.91 · loss 0.23": the box has room for about 32 characters.
std::string metrics_line(const ReportModel& m) {
  std::string line;
  for (const auto& [name, value] : m.validation) {
    const std::string shown = name.starts_with("val_") ? name.substr(4) : name;
    line += (line.empty() ? "val " : " · ") + shown + " " + short_number(value);
  }
  return line;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

void draw_node(std::string& svg, const Placed& p, std::size_t index) {
  const ReportModel& m = *p.model;
  const double left = p.x - kBoxWidth / 2;
  svg += fmt::format("<g class=\"node status-{}\" data-model=\"{}\">", status_class(m.status),
                     base::markup_escape(m.name));
  std::string tip =
      m.name + "\nmethod: " + m.method + "\nstatus: " + m.status + "\n" + tensors_line(m);
  if (!m.recipe_hash.empty()) tip += "\nrecipe " + m.recipe_hash.substr(0, 12);
  svg += "<title>" + base::markup_escape(tip) + "</title>";
  svg += fmt::format(
      "<a href=\"#model-{}\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "rx=\"7\"/>",
      index, left, p.y, kBoxWidth, kBoxHeight);
  const double tx = left + 10;
  svg += fmt::format("<text class=\"name\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", tx, p.y + 19,
                     base::markup_escape(shorten(m.name, 24)));
  svg += fmt::format(
      "<text class=\"meta\" x=\"{:.1f}\" y=\"{:.1f}\">{} · <tspan class=\"st\">{}</tspan></text>",
      tx, p.y + 38, base::markup_escape(shorten(m.method, 14)), base::markup_escape(shorten(m.status, 18)));
  svg += fmt::format("<text class=\"meta\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", tx, p.y + 56,
                     base::markup_escape(tensors_line(m)));
  const std::string metrics = metrics_line(m);
  if (!metrics.empty())
    svg += fmt::format("<text class=\"metric\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", tx, p.y + 74,
                       base::markup_escape(shorten(metrics, 34)));
  svg += "</a></g>";
}

}  // namespace

std::string lineage_tree_svg(const std::vector<ReportModel>& models,
                             const std::vector<ReportShare>& shares) {
  std::map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < models.size(); ++i) index_of[models[i].name] = i;
  std::vector<std::vector<std::size_t>> children(models.size());
  std::vector<std::size_t> roots;
  for (std::size_t i = 0; i < models.size(); ++i) {
    auto parent = index_of.find(models[i].parent);
    if (models[i].parent.empty() || parent == index_of.end())
      roots.push_back(i);
    else
      children[parent->second].push_back(i);
  }
  std::vector<Placed> placed(models.size());
  for (std::size_t i = 0; i < models.size(); ++i) placed[i].model = &models[i];
  double next_leaf_x = kMargin;
  for (std::size_t root : roots) place(root, 0, children, placed, next_leaf_x);

  double width = std::max(next_leaf_x - kGapX + kMargin, 2 * kMargin + kBoxWidth);
  double height = 2 * kMargin + kBoxHeight;
  for (const Placed& p : placed) height = std::max(height, p.y + kBoxHeight + kMargin);
  const bool has_shares = std::any_of(shares.begin(), shares.end(),
                                      [](const ReportShare& s) { return s.models.size() > 1; });
  if (has_shares) height += 44;  // the arcs of shares dip below the lowest boxes

  std::string svg = fmt::format(
      "<svg class=\"lineage-tree\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" "
      "height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"family tree\">",
      width, height, width, height);
  svg +=
      "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
      "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" "
      "fill=\"#7a8696\"/></marker></defs>";
  for (std::size_t i = 0; i < models.size(); ++i)
    for (std::size_t c : children[i]) {
      const Placed &from = placed[i], &to = placed[c];
      const double y1 = from.y + kBoxHeight, y2 = to.y, mid = (y1 + y2) / 2;
      svg += fmt::format(
          "<g class=\"edge\"><path d=\"M{0:.1f},{1:.1f} C{0:.1f},{2:.1f} {3:.1f},{2:.1f} "
          "{3:.1f},{4:.1f}\" marker-end=\"url(#arrow)\"/>",
          from.x, y1, mid, to.x, y2 - 1);
      if (models[c].parameters)
        svg += fmt::format("<text class=\"edge-label\" x=\"{:.1f}\" y=\"{:.1f}\">{} shared</text>",
                           to.x + 6, y2 - 10, models[c].shared_with_parent);
      svg += "</g>";
    }
  for (const ReportShare& share : shares) {
    std::vector<const Placed*> members;
    for (const std::string& name : share.models)
      if (auto it = index_of.find(name); it != index_of.end())
        members.push_back(&placed[it->second]);
    for (std::size_t i = 1; i < members.size(); ++i) {
      const Placed &a = *members[i - 1], &b = *members[i];
      const double y = std::max(a.y, b.y) + kBoxHeight;
      svg += fmt::format(
          "<g class=\"share\"><title>{}</title><path d=\"M{:.1f},{:.1f} C{:.1f},{:.1f} "
          "{:.1f},{:.1f} "
          "{:.1f},{:.1f}\"/><text x=\"{:.1f}\" y=\"{:.1f}\">share {}</text></g>",
          base::markup_escape("share '" + share.name + "': " + joined(share.modules)), a.x,
          a.y + kBoxHeight, a.x, y + 40, b.x, y + 40, b.x, b.y + kBoxHeight, (a.x + b.x) / 2,
          y + 38, base::markup_escape(share.name));
    }
  }
  for (std::size_t i = 0; i < placed.size(); ++i) draw_node(svg, placed[i], i);
  svg += "</svg>";
  return svg;
}

}  // namespace scion::report
