#include "assertions/behavioural_test.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "assertions/body_fields.h"
#include "assertions/random.h"

namespace scion::assertions {
namespace {

constexpr std::int64_t kMaxCasesLimit = 1'000'000;

Status read_test_lexicons(const BodyFields& body, const std::filesystem::path& root_dir,
                          LexiconSet* lexicons) {
  const nlohmann::json* value = body.find("lexicons");
  if (value == nullptr) return Status::ok();
  if (!value->is_object())
    return body.error("lexicons", "expected a mapping {name: [entries] or \"file.txt\"}");
  for (const auto& [name, entries] : value->items()) {
    const std::string where = body.where("lexicons." + name);
    if (entries.is_string()) {
      const std::filesystem::path path = root_dir / entries.get<std::string>();
      auto read = read_lexicon_file(path);
      if (!read.is_ok()) return spec_error(fmt::format("{}: {}", where, read.status().message()));
      SCION_RETURN_IF_ERROR(lexicons->add(name, std::move(read.value()), where));
      continue;
    }
    auto list = body.nested("lexicons").strings(name);
    if (!list.is_ok()) return list.status();
    SCION_RETURN_IF_ERROR(lexicons->add(name, std::move(list.value()), where));
  }
  return Status::ok();
}

Status read_sources(const BodyFields& body, const LexiconSet& lexicons, BehaviouralTest* test) {
  std::vector<std::string> texts;
  std::vector<std::string> paths;
  if (body.has("template")) {
    auto one = body.string("template");
    if (!one) return one.status();
    texts.push_back(*one);
    paths.push_back("template");
  }
  auto many = body.strings("templates");
  if (!many) return many.status();
  for (std::size_t i = 0; i < many->size(); ++i) {
    texts.push_back((*many)[i]);
    paths.push_back(fmt::format("templates[{}]", i));
  }
  for (std::size_t i = 0; i < texts.size(); ++i) {
    auto t = TextTemplate::parse(texts[i], lexicons, body.where(paths[i]));
    if (!t) return t.status();
    test->templates.push_back(std::move(t.value()));
  }
  auto inputs = body.strings("inputs");
  if (!inputs) return inputs.status();
  test->inputs = std::move(inputs.value());
  if (body.has("data")) {
    const BodyFields data = body.nested("data");
    SCION_RETURN_IF_ERROR(data.check_keys({"dataset", "max_cases"}));
    auto dataset = data.string("dataset");
    if (!dataset) return dataset.status();
    auto max_cases =
        data.integer("max_cases", 1, kMaxCasesLimit, static_cast<std::int64_t>(test->max_cases));
    if (!max_cases) return max_cases.status();
    test->data = DataSource{*dataset, static_cast<std::size_t>(*max_cases)};
  }
  if (test->templates.empty() && test->inputs.empty() && !test->data)
    return body.error("", "gives no inputs; add `template`, `templates`, `inputs` or `data`");
  return Status::ok();
}

// The slot names "{x}" used in a preference string.
std::vector<std::string> slot_references(const std::string& text) {
  std::vector<std::string> keys;
  for (std::size_t open = text.find('{'); open != std::string::npos;
       open = text.find('{', open + 1)) {
    const std::size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    keys.push_back(text.substr(open + 1, close - open - 1));
  }
  return keys;
}

Status check_preference_slots(const BodyFields& expect, const BehaviouralTest& test) {
  for (const char* key : {"prefer", "over"}) {
    const std::string& text =
        std::string_view(key) == "prefer" ? test.expect.prefer : test.expect.over;
    for (const std::string& slot : slot_references(text)) {
      if (!test.inputs.empty() || test.data)
        return expect.error(
            key,
            fmt::format("uses slot '{{{}}}', but the test also has inputs without slots", slot));
      for (std::size_t t = 0; t < test.templates.size(); ++t) {
        const auto& slots = test.templates[t].slots();
        if (std::none_of(slots.begin(), slots.end(), [&](const auto& s) { return s.key == slot; }))
          return expect.error(
              key, fmt::format("uses slot '{{{}}}', which template {} does not have", slot, t));
      }
    }
  }
  return Status::ok();
}

Status read_expect(const BodyFields& body, BehaviouralTest* test) {
  if (!body.has("expect")) return Status::ok();
  const BodyFields expect = body.nested("expect");
  SCION_RETURN_IF_ERROR(
      expect.check_keys({"label", "not_label", "predicate", "prefer", "over", "margin", "score"}));
  Expectation& e = test->expect;
  int kinds = 0;
  if (expect.has("label")) {
    auto labels = expect.strings("label");
    if (!labels) return labels.status();
    e.kind = Expectation::Kind::kLabel;
    e.labels = std::move(labels.value());
    ++kinds;
  }
  if (expect.has("not_label")) {
    auto labels = expect.strings("not_label");
    if (!labels) return labels.status();
    e.kind = Expectation::Kind::kNotLabel;
    e.labels = std::move(labels.value());
    ++kinds;
  }
  if (expect.has("predicate")) {
    auto text = expect.string("predicate");
    if (!text) return text.status();
    auto predicate = Expression::compile(*text, expect.where("predicate"));
    if (!predicate) return predicate.status();
    if (predicate->uses_prefix("lm.") || predicate->uses_prefix("parent.lm."))
      return expect.error("predicate",
                          "predicates judge classifier outputs and see no lm.* scores; to test "
                          "a language model write expect: {prefer: \" ...\", over: \" ...\"}");
    e.kind = Expectation::Kind::kPredicate;
    e.predicate = std::move(predicate.value());
    ++kinds;
  }
  if (expect.has("prefer") || expect.has("over")) {
    auto prefer = expect.string("prefer");
    if (!prefer) return prefer.status();
    auto over = expect.string("over");
    if (!over) return over.status();
    auto margin = expect.number("margin", 0.0);
    if (!margin) return margin.status();
    auto score = expect.choice("score", {"mean", "sum"}, "mean");
    if (!score) return score.status();
    for (const auto& [key, text] : {std::pair{"prefer", *prefer}, std::pair{"over", *over}})
      if (text.empty())
        return expect.error(key, "is empty; give the continuation to score, e.g. \" was right\"");
    e.kind = Expectation::Kind::kPrefer;
    e.prefer = *prefer;
    e.over = *over;
    e.margin = *margin;
    e.score = *score == "sum" ? Expectation::Score::kSum : Expectation::Score::kMean;
    SCION_RETURN_IF_ERROR(check_preference_slots(expect, *test));
    ++kinds;
  }
  if (kinds != 1)
    return expect.error("", "give exactly one of label, not_label, predicate, or prefer + over");
  if (e.kind != Expectation::Kind::kPrefer && expect.has("score"))
    return expect.error("score", "scores continuations: it goes with prefer + over");
  if ((e.kind == Expectation::Kind::kLabel || e.kind == Expectation::Kind::kNotLabel) &&
      e.labels.empty())
    return expect.error(e.kind == Expectation::Kind::kLabel ? "label" : "not_label",
                        "names no label");
  return Status::ok();
}

Status read_direction(const BodyFields& body, BehaviouralTest* test) {
  if (!body.has("direction")) return Status::ok();
  const BodyFields f = body.nested("direction");
  SCION_RETURN_IF_ERROR(f.check_keys({"label", "change", "confidence", "tolerance"}));
  Direction d;
  if (f.has("label") == f.has("confidence"))
    return f.error("", "give either `label` with `change`, or `confidence: increase|decrease`");
  std::string change;
  if (f.has("label")) {
    auto label = f.string("label");
    if (!label) return label.status();
    auto c = f.choice("change", {"increase", "decrease"});
    if (!c) return c.status();
    d.quantity = Direction::Quantity::kLabel;
    d.label = *label;
    change = *c;
  } else {
    if (f.has("change"))
      return f.error("change", "goes with `label`; with `confidence` write confidence: increase");
    auto c = f.choice("confidence", {"increase", "decrease"});
    if (!c) return c.status();
    d.quantity = Direction::Quantity::kConfidence;
    change = *c;
  }
  auto tolerance = f.number("tolerance", 0.0);
  if (!tolerance) return tolerance.status();
  if (*tolerance < 0.0 || *tolerance > 1.0) return f.error("tolerance", "must be between 0 and 1");
  d.increase = change == "increase";
  d.tolerance = *tolerance;
  test->direction = d;
  return Status::ok();
}

Status check_type_rules(const BodyFields& body, const BehaviouralTest& test) {
  const bool has_expect = test.expect.kind != Expectation::Kind::kNone;
  switch (test.type) {
    case TestType::kMft:
      if (!has_expect) return body.error("expect", "is required for an MFT test");
      if (test.perturb || test.direction || test.threshold)
        return body.error(
            "", "an MFT test takes no perturb, direction or threshold; use type inv or dir");
      break;
    case TestType::kInv:
      if (!test.perturb) return body.error("perturb", "is required for an INV test");
      if (has_expect || test.direction)
        return body.error("", "an INV test takes no expect or direction; use type dir");
      break;
    case TestType::kDir:
      if (!test.perturb) return body.error("perturb", "is required for a DIR test");
      if (!has_expect && !test.direction)
        return body.error("direction", "a DIR test needs `direction` or `expect`");
      if (test.threshold) return body.error("threshold", "applies to INV tests only");
      break;
  }
  if (test.expect.kind == Expectation::Kind::kPrefer && test.type != TestType::kMft)
    return body.error("expect.prefer",
                      "language-model preferences are MFT expectations; use type mft");
  return Status::ok();
}

}  // namespace

std::string_view test_type_name(TestType type) {
  switch (type) {
    case TestType::kMft:
      return "mft";
    case TestType::kInv:
      return "inv";
    case TestType::kDir:
      return "dir";
  }
  return "?";
}

std::optional<std::string> unsupported_for(const BehaviouralTest& test, spec::HeadTask task) {
  const bool labels = test.expect.kind == Expectation::Kind::kLabel ||
                      test.expect.kind == Expectation::Kind::kNotLabel;
  switch (task) {
    case spec::HeadTask::kRegression:
      if (labels)
        return "a regression head predicts values, not labels; test them with expect: {predicate: "
               "\"value > 0.5\"}";
      if (test.type == TestType::kInv && !test.threshold)
        return "an INV test of a regression head needs threshold: the largest change of its value "
               "allowed";
      if (test.direction && test.direction->quantity == Direction::Quantity::kConfidence)
        return "a regression head has no confidence to move; name its output: direction: {label: "
               "NAME, ...}";
      return std::nullopt;
    case spec::HeadTask::kTokenClassification:
      if (test.type == TestType::kDir)
        return "a token classifier has no one probability to move; test it with mft or inv";
      return std::nullopt;
    case spec::HeadTask::kClassification:
    case spec::HeadTask::kMultiLabel:
      break;
  }
  return std::nullopt;
}

Result<BehaviouralTest> compile_test(const spec::TestSpec& spec, const LexiconSet& lexicons,
                                     const std::filesystem::path& root_dir) {
  BehaviouralTest test;
  test.name = spec.name;
  test.origin = fmt::format("{}:{}:{}: test '{}'", spec.location.file, spec.location.line,
                            spec.location.column, spec.name);
  test.capability = spec.capability;
  test.models = spec.models;
  test.max_failure_rate = spec.max_failure_rate;
  // Body keys sit beside type and capability in the spec, so errors use the spec's key path.
  const BodyFields body(
      spec.body,
      fmt::format("{}:{}:{}", spec.location.file, spec.location.line, spec.location.column),
      fmt::format("tests.{}", spec.name), &spec.body_locations);
  if (spec.type == "mft")
    test.type = TestType::kMft;
  else if (spec.type == "inv")
    test.type = TestType::kInv;
  else if (spec.type == "dir")
    test.type = TestType::kDir;
  else
    return body.error("type",
                      fmt::format("unknown test type '{}'; use mft, inv or dir", spec.type));

  SCION_RETURN_IF_ERROR(
      body.check_keys({"template", "templates", "inputs", "data", "lexicons", "max_cases", "seed",
                       "expect", "perturb", "direction", "threshold", "regression"}));
  auto max_cases = body.integer("max_cases", 1, kMaxCasesLimit, 100);
  if (!max_cases) return max_cases.status();
  test.max_cases = static_cast<std::size_t>(*max_cases);
  auto seed = body.integer("seed", 0, std::numeric_limits<std::int64_t>::max(), 0);
  if (!seed) return seed.status();
  test.seed = static_cast<std::uint64_t>(*seed);

  LexiconSet all_lexicons = lexicons;
  SCION_RETURN_IF_ERROR(read_test_lexicons(body, root_dir, &all_lexicons));
  SCION_RETURN_IF_ERROR(read_sources(body, all_lexicons, &test));
  SCION_RETURN_IF_ERROR(read_expect(body, &test));
  SCION_RETURN_IF_ERROR(read_direction(body, &test));
  if (body.has("perturb")) {
    auto p = Perturbation::compile(*body.find("perturb"), all_lexicons, body.origin(),
                                   body.path() + ".perturb", body.locations());
    if (!p) return p.status();
    test.perturb = std::move(p.value());
  }
  if (body.has("threshold")) {
    auto t = body.number("threshold");
    if (!t) return t.status();
    // A probability's change (classifiers), or a regression head's value's, unbounded.
    if (!(*t >= 0.0) || !std::isfinite(*t))
      return body.error("threshold",
                        "must be a number of at least 0 (a probability's change "
                        "for classifiers, a value's for regression heads)");
    test.threshold = *t;
  }
  if (body.has("regression")) {
    auto r = body.choice("regression", {"parent"});
    if (!r) return r.status();
    test.regression_parent = true;
  }
  SCION_RETURN_IF_ERROR(check_type_rules(body, test));
  return test;
}

namespace {

std::string fill_slots(std::string text,
                       const std::vector<std::pair<std::string, std::string>>& fills) {
  for (const auto& [key, value] : fills) {
    const std::string ref = "{" + key + "}";
    for (std::size_t at = text.find(ref); at != std::string::npos;
         at = text.find(ref, at + value.size()))
      text.replace(at, ref.size(), value);
  }
  return text;
}

// A seeded choice of `count` indices out of `size`, in ascending (file) order.
std::vector<std::size_t> sample_indices(std::size_t size, std::size_t count, std::uint64_t seed) {
  std::vector<std::size_t> order(size);
  std::iota(order.begin(), order.end(), 0);
  if (count >= size) return order;
  auto rng = base::SeededRng::from_state(seed);
  for (std::size_t i = 0; i < count; ++i) std::swap(order[i], order[i + rng.below(size - i)]);
  order.resize(count);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

Result<CaseSet> generate_cases(const BehaviouralTest& test,
                               std::span<const std::string> dataset_texts) {
  if (test.data && dataset_texts.empty())
    return invalid_argument(
        fmt::format("{}: reads dataset '{}'; pass its texts to generate_cases (the dataset is "
                    "empty or was not read)",
                    test.origin, test.data->dataset));
  const std::uint64_t seed = derive_seed(test.seed, base::stable_hash(test.name));
  std::vector<TestCase> raw;
  for (TemplateFill& fill : expand_templates(test.templates, test.max_cases, seed)) {
    TestCase c;
    c.input = std::move(fill.text);
    c.source = fmt::format("template {}", fill.template_index);
    c.fills = std::move(fill.values);
    raw.push_back(std::move(c));
  }
  auto add_plain = [&raw](std::string input, std::string source) {
    TestCase c;
    c.input = std::move(input);
    c.source = std::move(source);
    raw.push_back(std::move(c));
  };
  for (std::size_t i = 0; i < test.inputs.size() && raw.size() < test.max_cases; ++i)
    add_plain(test.inputs[i], fmt::format("inputs[{}]", i));
  if (test.data) {
    for (std::size_t row :
         sample_indices(dataset_texts.size(), test.data->max_cases, derive_seed(seed, 1)))
      add_plain(dataset_texts[row], fmt::format("data {}[{}]", test.data->dataset, row));
  }
  CaseSet set;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    TestCase& c = raw[i];
    c.id = fmt::format("{}/{}", test.name, i);
    if (test.expect.kind == Expectation::Kind::kPrefer) {
      c.prefer = fill_slots(test.expect.prefer, c.fills);
      c.over = fill_slots(test.expect.over, c.fills);
    }
    if (test.perturb) {
      c.perturbed = test.perturb->apply(c.input, derive_seed(seed, 2 + i));
      if (!c.perturbed) {
        ++set.not_applicable;
        continue;
      }
    }
    set.cases.push_back(std::move(c));
  }
  return set;
}

}  // namespace scion::assertions
