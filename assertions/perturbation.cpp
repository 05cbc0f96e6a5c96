#include "assertions/perturbation.h"

#include <fmt/format.h>

#include "assertions/body_fields.h"
#include "assertions/perturb_rules.h"
#include "spec/spelling.h"

namespace scion::assertions {
namespace {

struct KindInfo {
  std::string_view name;
  PerturbationKind kind;
  std::vector<std::string> default_lexicons;
};

const std::vector<KindInfo>& kinds() {
  static const std::vector<KindInfo> table = {
      {"typos", PerturbationKind::kTypos, {}},
      {"punctuation", PerturbationKind::kPunctuation, {}},
      {"contractions", PerturbationKind::kContractions, {}},
      {"negation", PerturbationKind::kNegation, {}},
      {"names", PerturbationKind::kSwap, {"name"}},
      {"locations", PerturbationKind::kSwap, {"city", "country"}},
      {"swap", PerturbationKind::kSwap, {}},
      {"numbers", PerturbationKind::kNumbers, {"number"}},
      {"case", PerturbationKind::kCase, {}},
      {"substitute", PerturbationKind::kSubstitute, {}},
  };
  return table;
}

Status read_typos(const BodyFields& f, PerturbationOptions* o) {
  auto count = f.integer("count", 1, 100, 1);
  if (!count) return count.status();
  o->count = static_cast<int>(*count);
  auto ops = f.strings("ops");
  if (!ops) return ops.status();
  if (ops->empty()) return Status::ok();
  o->typo_ops.clear();
  for (const std::string& op : *ops) {
    if (op == "swap")
      o->typo_ops.push_back(TypoOp::kSwap);
    else if (op == "drop")
      o->typo_ops.push_back(TypoOp::kDrop);
    else if (op == "duplicate")
      o->typo_ops.push_back(TypoOp::kDuplicate);
    else
      return f.error("ops",
                     fmt::format("unknown typo operation '{}'; use swap, drop or duplicate", op));
  }
  return Status::ok();
}

Status read_mode(const BodyFields& f, PerturbationOptions* o,
                 std::initializer_list<std::string_view> modes, std::string fallback) {
  auto mode = f.choice("mode", modes, std::move(fallback));
  if (!mode) return mode.status();
  o->mode = *mode;
  return Status::ok();
}

Status read_pairs(const BodyFields& f, PerturbationOptions* o) {
  const nlohmann::json* pairs = f.find("pairs");
  if (pairs == nullptr)
    return f.error("pairs", "is required: a mapping {from: to} or a list of [from, to]");
  if (pairs->is_object()) {
    for (const auto& [from, to] : pairs->items()) {
      if (!to.is_string()) return f.error(fmt::format("pairs.{}", from), "expected a string");
      o->pairs.emplace_back(from, to.get<std::string>());
    }
  } else if (pairs->is_array()) {
    for (std::size_t i = 0; i < pairs->size(); ++i) {
      const auto& p = (*pairs)[i];
      if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_string())
        return f.error(fmt::format("pairs[{}]", i), "expected a pair of strings [from, to]");
      o->pairs.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
    }
  } else {
    return f.error("pairs", "expected a mapping {from: to} or a list of [from, to]");
  }
  for (const auto& [from, to] : o->pairs)
    if (from.empty()) return f.error("pairs", "a substitution has an empty `from`");
  if (o->pairs.empty()) return f.error("pairs", "is empty; give at least one substitution");
  auto both = f.boolean("both_directions", false);
  if (!both) return both.status();
  o->both_directions = *both;
  return Status::ok();
}

Status read_options(const BodyFields& f, const KindInfo& info, PerturbationOptions* o) {
  o->kind = info.kind;
  o->lexicons = info.default_lexicons;
  switch (info.kind) {
    case PerturbationKind::kTypos:
      SCION_RETURN_IF_ERROR(f.check_keys({"kind", "count", "ops"}));
      return read_typos(f, o);
    case PerturbationKind::kPunctuation: {
      SCION_RETURN_IF_ERROR(f.check_keys({"kind", "mode", "mark"}));
      auto mark = f.string("mark", ".");
      if (!mark) return mark.status();
      o->mark = *mark;
      return read_mode(f, o, {"strip", "add", "any"}, "any");
    }
    case PerturbationKind::kContractions:
      SCION_RETURN_IF_ERROR(f.check_keys({"kind", "mode"}));
      return read_mode(f, o, {"expand", "contract", "any"}, "any");
    case PerturbationKind::kNegation:
      SCION_RETURN_IF_ERROR(f.check_keys({"kind", "mode"}));
      return read_mode(f, o, {"add", "remove", "any"}, "add");
    case PerturbationKind::kCase:
      SCION_RETURN_IF_ERROR(f.check_keys({"kind", "mode"}));
      return read_mode(f, o, {"upper", "lower", "title"}, "lower");
    case PerturbationKind::kSwap:
    case PerturbationKind::kNumbers: {
      SCION_RETURN_IF_ERROR(f.check_keys({"kind", "lexicons"}));
      auto lexicons = f.strings("lexicons");
      if (!lexicons) return lexicons.status();
      if (!lexicons->empty()) o->lexicons = *lexicons;
      if (o->lexicons.empty() && info.kind == PerturbationKind::kSwap)
        return f.error("lexicons",
                       "is required for kind swap: the lexicons whose entries are swapped");
      return Status::ok();
    }
    case PerturbationKind::kSubstitute:
      SCION_RETURN_IF_ERROR(f.check_keys({"kind", "pairs", "both_directions"}));
      return read_pairs(f, o);
  }
  return Status::ok();
}

}  // namespace

Result<Perturbation> Perturbation::compile(const nlohmann::json& body, const LexiconSet& lexicons,
                                           std::string_view origin, std::string_view path,
                                           const spec::BodyLocations* locations) {
  BodyFields f(body, std::string(origin), std::string(path), locations);
  if (!body.is_object()) return f.error("", "expected a mapping such as {kind: negation}");
  auto kind = f.string("kind");
  if (!kind) return kind.status();
  const KindInfo* info = nullptr;
  for (const KindInfo& k : kinds())
    if (k.name == *kind) info = &k;
  if (info == nullptr) {
    std::vector<std::string_view> names;
    for (const KindInfo& k : kinds()) names.push_back(k.name);
    const std::string hint = spec::did_you_mean(*kind, names);
    return f.error("kind", hint.empty() ? fmt::format("unknown perturbation '{}'; use one of: {}",
                                                      *kind, fmt::join(names, ", "))
                                        : fmt::format("unknown perturbation '{}'{}", *kind, hint));
  }
  PerturbationOptions options;
  options.name = *kind;
  SCION_RETURN_IF_ERROR(read_options(f, *info, &options));
  return from_options(std::move(options), lexicons, f.where(""));
}

Result<Perturbation> Perturbation::from_options(PerturbationOptions options,
                                                const LexiconSet& lexicons,
                                                std::string_view where) {
  Perturbation p;
  for (const std::string& name : options.lexicons) {
    const auto* entries = lexicons.find(name);
    if (entries == nullptr) {
      const auto names = lexicons.names();
      const std::vector<std::string_view> words(names.begin(), names.end());
      return spec_error(
          fmt::format("{}.lexicons: unknown lexicon '{}'{}; define it under `lexicons:`", where,
                      name, spec::did_you_mean(name, words)));
    }
    p.swap_lists_.push_back(*entries);
  }
  if (options.kind == PerturbationKind::kTypos && options.typo_ops.empty())
    return spec_error(fmt::format("{}.ops: give at least one of swap, drop, duplicate", where));
  if (options.mode.empty()) {
    // Programmatic options get the same defaults as the spec keys.
    switch (options.kind) {
      case PerturbationKind::kPunctuation:
        options.mode = "any";
        break;
      case PerturbationKind::kContractions:
        options.mode = "any";
        break;
      case PerturbationKind::kNegation:
        options.mode = "add";
        break;
      case PerturbationKind::kCase:
        options.mode = "lower";
        break;
      default:
        break;
    }
  }
  p.options_ = std::move(options);
  return p;
}

std::optional<std::string> Perturbation::apply(std::string_view text, std::uint64_t seed) const {
  const PerturbationOptions& o = options_;
  switch (o.kind) {
    case PerturbationKind::kTypos:
      return perturb_typos(text, o.count, o.typo_ops, seed);
    case PerturbationKind::kPunctuation:
      return perturb_punctuation(text, o.mode, o.mark);
    case PerturbationKind::kContractions:
      return perturb_contractions(text, o.mode);
    case PerturbationKind::kNegation:
      return perturb_negation(text, o.mode);
    case PerturbationKind::kSwap:
      return perturb_swap(text, swap_lists_, seed);
    case PerturbationKind::kNumbers:
      return perturb_numbers(text, swap_lists_, seed);
    case PerturbationKind::kCase:
      return perturb_case(text, o.mode);
    case PerturbationKind::kSubstitute:
      return perturb_substitute(text, o.pairs, o.both_directions);
  }
  return std::nullopt;
}

}  // namespace scion::assertions
