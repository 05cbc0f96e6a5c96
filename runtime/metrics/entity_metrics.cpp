#include "runtime/metrics/entity_metrics.h"

#include <map>
#include <set>
#include <string_view>

#include "runtime/metrics/ratio.h"

namespace scion::runtime {
namespace {

// seqeval's split of a tag into its chunk letter and type: "B-PER" -> (B, PER); "O" ->
// (O, _); a tag with no '-' after its first letter is that letter and the rest.
std::pair<char, std::string> split_tag(const std::string& tag) {
  if (tag.empty()) return {'O', "_"};
  // string_view, not substr: GCC 12 -O3 reports a false -Wrestrict on substr's copies.
  std::string_view rest(tag);
  rest.remove_prefix(1);
  if (const std::size_t dash = rest.find('-'); dash != std::string_view::npos)
    rest.remove_prefix(dash + 1);
  return {tag[0], rest.empty() ? std::string("_") : std::string(rest)};
}

bool end_of_chunk(char prev, char tag, const std::string& prev_type, const std::string& type) {
  if (prev == 'E' || prev == 'S') return true;
  if (prev == 'B' && (tag == 'B' || tag == 'S' || tag == 'O')) return true;
  if (prev == 'I' && (tag == 'B' || tag == 'S' || tag == 'O')) return true;
  return prev != 'O' && prev != '.' && prev_type != type;
}

bool start_of_chunk(char prev, char tag, const std::string& prev_type, const std::string& type) {
  if (tag == 'B' || tag == 'S') return true;
  if (prev == 'E' && (tag == 'E' || tag == 'I')) return true;
  if (prev == 'S' && (tag == 'E' || tag == 'I')) return true;
  if (prev == 'O' && (tag == 'E' || tag == 'I')) return true;
  return tag != 'O' && tag != '.' && prev_type != type;
}

}  // namespace

std::vector<Entity> entities(std::span<const std::string> tags) {
  std::vector<Entity> found;
  char prev = 'O';
  std::string prev_type;
  std::int64_t begin = 0;
  for (std::size_t i = 0; i <= tags.size(); ++i) {
    const auto [tag, type] =
        i < tags.size() ? split_tag(tags[i]) : std::pair<char, std::string>{'O', "_"};
    const auto at = static_cast<std::int64_t>(i);
    if (end_of_chunk(prev, tag, prev_type, type)) found.emplace_back(prev_type, begin, at - 1);
    if (start_of_chunk(prev, tag, prev_type, type)) begin = at;
    prev = tag;
    prev_type = type;
  }
  return found;
}

EntityMetrics entity_metrics(const std::vector<std::string>& tags,
                             const std::vector<std::vector<std::int32_t>>& truth,
                             const std::vector<std::vector<std::int32_t>>& predicted) {
  EntityMetrics m;
  m.sentences = static_cast<std::int64_t>(truth.size());
  std::map<std::string, std::int64_t> true_count, pred_count, hit_count;
  std::int64_t right_words = 0, hits = 0, true_total = 0, pred_total = 0;
  for (std::size_t s = 0; s < truth.size(); ++s) {
    std::vector<std::string> t, p;
    for (std::size_t w = 0; w < truth[s].size(); ++w) {
      t.push_back(tags[static_cast<std::size_t>(truth[s][w])]);
      p.push_back(tags[static_cast<std::size_t>(predicted[s][w])]);
      right_words += truth[s][w] == predicted[s][w];
    }
    m.words += static_cast<std::int64_t>(t.size());
    const std::vector<Entity> te = entities(t), pe = entities(p);
    const std::set<Entity> true_set(te.begin(), te.end());
    for (const Entity& e : te) ++true_count[std::get<0>(e)];
    for (const Entity& e : pe) {
      ++pred_count[std::get<0>(e)];
      if (true_set.count(e)) ++hit_count[std::get<0>(e)];
    }
    true_total += static_cast<std::int64_t>(te.size());
    pred_total += static_cast<std::int64_t>(pe.size());
  }
  for (const auto& [type, n] : hit_count) hits += n;
  m.precision = ratio(static_cast<double>(hits), static_cast<double>(pred_total));
  m.recall = ratio(static_cast<double>(hits), static_cast<double>(true_total));
  m.f1 = m.precision + m.recall == 0 ? 0.0 : 2 * m.precision * m.recall / (m.precision + m.recall);
  m.accuracy = ratio(static_cast<double>(right_words), static_cast<double>(m.words));
  std::set<std::string> types;
  for (const auto& [type, n] : true_count) types.insert(type);
  for (const auto& [type, n] : pred_count) types.insert(type);
  for (const std::string& type : types) {
    EntityTypeMetrics tm{.type = type, .support = true_count[type], .predicted = pred_count[type]};
    tm.precision = ratio(static_cast<double>(hit_count[type]), static_cast<double>(tm.predicted));
    tm.recall = ratio(static_cast<double>(hit_count[type]), static_cast<double>(tm.support));
    const double pr = tm.precision + tm.recall;
    tm.f1 = pr == 0 ? 0.0 : 2 * tm.precision * tm.recall / pr;
    m.per_type.push_back(tm);
  }
  return m;
}

}  // namespace scion::runtime
