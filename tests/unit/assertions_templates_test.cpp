// Lexicons and templates: built-ins, spec and file lexicons, slot syntax, articles,
// cross product vs seeded sampling, and parse errors with their column.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "assertions/lexicon.h"
#include "assertions/text_template.h"

using namespace scion;
using namespace scion::assertions;

namespace {

LexiconSet small_lexicons() {
  LexiconSet set;
  REQUIRE(set.add("name", {"Ana", "Wei", "Omar"}, "test").is_ok());
  REQUIRE(set.add("noun", {"movie", "apple", "hour"}, "test").is_ok());
  REQUIRE(set.add("pos_adj", {"good", "great"}, "test").is_ok());
  return set;
}

TextTemplate parse_ok(std::string_view text, const LexiconSet& lexicons) {
  auto t = TextTemplate::parse(text, lexicons, "t.yaml:3:5: test 'x', body.template");
  INFO((t.is_ok() ? std::string() : t.status().message()));
  REQUIRE(t.is_ok());
  return *t;
}

}  // namespace

TEST_CASE("built-in lexicons are compiled in and named in the catalog", "[assertions][lexicon]") {
  const LexiconSet builtin = LexiconSet::builtin();
  for (const char* name : {"name", "city", "country", "number", "pos_adj", "neg_adj", "neutral_adj",
                           "intensifier", "noun", "product", "movie_noun", "profession", "religion",
                           "nationality", "pos_verb", "neg_verb"}) {
    INFO(name);
    const auto* entries = builtin.find(name);
    REQUIRE(entries != nullptr);
    CHECK(entries->size() >= 8);
  }
  const auto catalog = builtin_lexicon_catalog();
  CHECK(catalog.size() == builtin.names().size());
  for (const auto& info : catalog) CHECK_FALSE(info.description.empty());
  // Multi-word entries survive the generator.
  const auto* cities = builtin.find("city");
  CHECK(std::find(cities->begin(), cities->end(), "Mexico City") != cities->end());
}

TEST_CASE("workspace lexicons add to and replace built-ins", "[assertions][lexicon]") {
  spec::Workspace ws;
  ws.spec_path = "/tmp/scion.yaml";
  ws.lexicons["fruit"] = {"apple", "pear"};
  ws.lexicons["name"] = {"Zed"};
  auto set = LexiconSet::for_workspace(ws);
  REQUIRE(set.is_ok());
  CHECK(*set->find("fruit") == std::vector<std::string>{"apple", "pear"});
  CHECK(*set->find("name") == std::vector<std::string>{"Zed"});
  CHECK(set->find("city") != nullptr);

  ws.lexicons["empty"] = {};
  auto bad = LexiconSet::for_workspace(ws);
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("/tmp/scion.yaml: lexicons.empty"));
  CHECK_THAT(bad.status().message(), Catch::Contains("is empty"));

  LexiconSet set2;
  CHECK_FALSE(set2.add("2bad", {"x"}, "here").is_ok());
}

TEST_CASE("lexicon files: one entry per line, comments and blanks skipped",
          "[assertions][lexicon]") {
  const auto path = std::filesystem::temp_directory_path() / "scion_assertions_lexicon_test.txt";
  {
    std::ofstream out(path);
    out << "# fruits\n apple \n\npear\r\n# a comment\nblood orange\n";
  }
  auto entries = read_lexicon_file(path);
  REQUIRE(entries.is_ok());
  CHECK(*entries == std::vector<std::string>{"apple", "pear", "blood orange"});
  std::filesystem::remove(path);
  auto missing = read_lexicon_file(path);
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == StatusCode::kIoError);
  CHECK_THAT(missing.status().message(), Catch::Contains(path.string()));
}

TEST_CASE("templates fill slots, articles, repeats and literal braces", "[assertions][template]") {
  const LexiconSet lex = small_lexicons();
  const TextTemplate t = parse_ok("{name} thinks the {noun} is {pos_adj}.", lex);
  REQUIRE(t.slots().size() == 3);
  CHECK(t.render({1, 0, 1}) == "Wei thinks the movie is great.");

  const TextTemplate article = parse_ok("{a:noun} is not {noun}, {{literal}}", lex);
  REQUIRE(article.slots().size() == 1);  // {a:noun} and {noun} are one slot
  CHECK(article.render({0}) == "A movie is not movie, {literal}");
  CHECK(article.render({1}) == "An apple is not apple, {literal}");
  CHECK(article.render({2}) == "An hour is not hour, {literal}");

  const TextTemplate mid = parse_ok("It is {a:noun}.", lex);
  CHECK(mid.render({1}) == "It is an apple.");
  CHECK(indefinite_article("university") == "a");
  CHECK(indefinite_article("Umbrella") == "an");
  CHECK(indefinite_article("European") == "a");
}

TEST_CASE("numbered slots are independent draws from one lexicon and differ",
          "[assertions][template]") {
  const LexiconSet lex = small_lexicons();
  const TextTemplate t = parse_ok("{name1} met {name2}.", lex);
  REQUIRE(t.slots().size() == 2);
  CHECK(t.slots()[0].lexicon == "name");
  CHECK(t.slots()[1].lexicon == "name");
  const auto fills = expand_templates({t}, 100, 1);
  CHECK(fills.size() == 6);  // 3 x 3 minus the 3 pairs of a name with itself
  for (const auto& f : fills) CHECK(f.values[0].second != f.values[1].second);
  CHECK(fills.front().text == "Ana met Wei.");
  CHECK(fills.front().values[0] == std::pair<std::string, std::string>{"name1", "Ana"});
}

TEST_CASE("cross product when it fits, seeded distinct sampling when it does not",
          "[assertions][template]") {
  const LexiconSet lex = small_lexicons();
  const TextTemplate t = parse_ok("{name} thinks the {noun} is {pos_adj}.", lex);
  const auto all = expand_templates({t}, 18, 7);
  CHECK(all.size() == 18);
  CHECK(all[0].text == "Ana thinks the movie is good.");
  CHECK(all[1].text == "Ana thinks the movie is great.");

  const auto sample_a = expand_templates({t}, 5, 42);
  const auto sample_b = expand_templates({t}, 5, 42);
  const auto sample_c = expand_templates({t}, 5, 43);
  REQUIRE(sample_a.size() == 5);
  std::set<std::string> distinct;
  for (std::size_t i = 0; i < sample_a.size(); ++i) {
    CHECK(sample_a[i].text == sample_b[i].text);
    distinct.insert(sample_a[i].text);
  }
  CHECK(distinct.size() == 5);
  bool differs = false;
  for (std::size_t i = 0; i < sample_a.size(); ++i)
    differs = differs || sample_a[i].text != sample_c[i].text;
  CHECK(differs);
}

TEST_CASE("max_cases is shared between templates", "[assertions][template]") {
  const LexiconSet lex = small_lexicons();
  const TextTemplate small = parse_ok("Hi {pos_adj}.", lex);         // 2 fills
  const TextTemplate big = parse_ok("{name} and the {noun}.", lex);  // 9 fills
  const auto fills = expand_templates({small, big}, 8, 3);
  REQUIRE(fills.size() == 8);
  CHECK(fills[0].template_index == 0);
  CHECK(fills[1].template_index == 0);
  CHECK(fills[2].template_index == 1);  // the small template's unused share moved on
  const auto no_slots = expand_templates({parse_ok("No slots here.", lex)}, 10, 0);
  REQUIRE(no_slots.size() == 1);
  CHECK(no_slots[0].text == "No slots here.");
}

TEST_CASE("template errors name the place and the column", "[assertions][template]") {
  const LexiconSet lex = small_lexicons();
  auto error_of = [&](std::string_view text) {
    auto t = TextTemplate::parse(text, lex, "t.yaml:3:5: test 'x', body.template");
    REQUIRE_FALSE(t.is_ok());
    CHECK(t.status().code() == StatusCode::kSpecError);
    CHECK_THAT(t.status().message(), Catch::StartsWith("t.yaml:3:5: test 'x', body.template"));
    return t.status().message();
  };
  CHECK_THAT(error_of("The {nun} is good."),
             Catch::Contains("column 5: unknown lexicon 'nun' \u2014 did you mean 'noun'?"));
  CHECK_THAT(error_of("The {noun is good."), Catch::Contains("column 5: '{' is not closed"));
  CHECK_THAT(error_of("The {noun {pos_adj}"), Catch::Contains("column 5: '{' is not closed"));
  CHECK_THAT(error_of("The noun} is"), Catch::Contains("column 9: '}' has no matching '{'"));
  CHECK_THAT(error_of("A {} slot"), Catch::Contains("column 3: the slot is empty"));
  CHECK_THAT(error_of("A {a:} slot"), Catch::Contains("column 3: the slot is empty"));
  CHECK_THAT(error_of("A {no-un} slot"), Catch::Contains("is not a lexicon name"));
  CHECK_THAT(error_of("   "), Catch::Contains("the template is empty"));
  CHECK_THAT(error_of(""), Catch::Contains("the template is empty"));
}

TEST_CASE("huge cross products are sampled without overflow", "[assertions][template]") {
  const LexiconSet builtin = LexiconSet::builtin();
  // 70^12 combinations do not fit in 64 bits.
  const TextTemplate t = parse_ok(
      "{name1} {name2} {name3} {name4} {name5} {name6} {name7} {name8} {name9} "
      "{name10} {name11} {name12}",
      builtin);
  const auto fills = expand_templates({t}, 25, 11);
  CHECK(fills.size() == 25);
  // An unbounded budget enumerates a small template completely.
  const TextTemplate small = parse_ok("{pos_adj}", builtin);
  CHECK(expand_templates({small}, std::numeric_limits<std::size_t>::max(), 0).size() ==
        builtin.find("pos_adj")->size());
}
