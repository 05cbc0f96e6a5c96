// Every perturbation kind: expected outputs on fixed inputs, "not applicable" when the
// rule cannot change the text, seeded determinism, and spec errors.
#include <catch2/catch.hpp>

#include "assertions/perturbation.h"

using namespace scion;
using namespace scion::assertions;

namespace {

Perturbation make(const nlohmann::json& body, const LexiconSet& lexicons = LexiconSet::builtin()) {
  auto p = Perturbation::compile(body, lexicons, "t.yaml:4:3: test 'p'", "body.perturb");
  INFO((p.is_ok() ? std::string() : p.status().message()));
  REQUIRE(p.is_ok());
  return *p;
}

std::string apply(const Perturbation& p, std::string_view text, std::uint64_t seed = 0) {
  auto out = p.apply(text, seed);
  INFO(text);
  REQUIRE(out.has_value());
  return *out;
}

}  // namespace

TEST_CASE("typos: swap, drop and duplicate adjacent letters, seeded", "[assertions][perturb]") {
  const auto swap = make({{"kind", "typos"}, {"ops", {"swap"}}});
  const auto drop = make({{"kind", "typos"}, {"ops", "drop"}});
  const auto dup = make({{"kind", "typos"}, {"ops", "duplicate"}});
  const std::string text = "ab cd";
  // Each single operation on "ab cd" has exactly these possible results.
  CHECK((apply(swap, text, 1) == "ba cd" || apply(swap, text, 1) == "ab dc"));
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const std::string d = apply(drop, text, seed);
    CHECK((d == "b cd" || d == "a cd" || d == "ab d" || d == "ab c"));
    const std::string u = apply(dup, text, seed);
    CHECK((u == "aab cd" || u == "abb cd" || u == "ab ccd" || u == "ab cdd"));
  }
  const auto typos = make({{"kind", "typos"}, {"count", 3}});
  const std::string sentence = "The service was wonderful.";
  CHECK(apply(typos, sentence, 9) == apply(typos, sentence, 9));
  bool seeds_differ = false;
  for (std::uint64_t seed = 1; seed < 10; ++seed)
    seeds_differ |= apply(typos, sentence, seed) != apply(typos, sentence, 0);
  CHECK(seeds_differ);
  // One-letter words cannot take a typo without vanishing; equal letters cannot swap.
  CHECK_FALSE(typos.apply("a I ! 7", 0).has_value());
  CHECK_FALSE(swap.apply("aa", 0).has_value());
}

TEST_CASE("punctuation: strip all marks (not decimal points) or add a final one",
          "[assertions][perturb]") {
  const auto strip = make({{"kind", "punctuation"}, {"mode", "strip"}});
  const auto add = make({{"kind", "punctuation"}, {"mode", "add"}, {"mark", "!"}});
  const auto any = make({{"kind", "punctuation"}});
  CHECK(apply(strip, "Well, it costs 3.50 dollars!") == "Well it costs 3.50 dollars");
  CHECK_FALSE(strip.apply("no marks here", 0).has_value());
  CHECK(apply(add, "I loved it") == "I loved it!");
  CHECK_FALSE(add.apply("I loved it.", 0).has_value());
  CHECK(apply(any, "Great.") == "Great");
  CHECK(apply(any, "Great") == "Great.");
}

TEST_CASE("contractions: expand and contract, keeping capitals", "[assertions][perturb]") {
  const auto expand = make({{"kind", "contractions"}, {"mode", "expand"}});
  const auto contract = make({{"kind", "contractions"}, {"mode", "contract"}});
  const auto any = make({{"kind", "contractions"}});
  CHECK(apply(expand, "It's good and I can't complain, they're nice.") ==
        "It is good and I cannot complain, they are nice.");
  CHECK(apply(contract, "It is good and I cannot complain.") == "It's good and I can't complain.");
  CHECK(apply(contract, "I am sure it does not work") == "I'm sure it doesn't work");
  CHECK_FALSE(expand.apply("Nothing to expand.", 0).has_value());
  CHECK_FALSE(contract.apply("Nothing to contract.", 0).has_value());
  CHECK(apply(any, "You're right.") == "You are right.");
  CHECK(apply(any, "You are right.") == "You're right.");
  // Whole words only: "island" holds "is" and "this" holds "is".
  CHECK_FALSE(contract.apply("this island not here", 0).has_value());
}

TEST_CASE("negation: add at the first auxiliary and remove it again", "[assertions][perturb]") {
  const auto add = make({{"kind", "negation"}});
  const auto remove = make({{"kind", "negation"}, {"mode", "remove"}});
  const auto any = make({{"kind", "negation"}, {"mode", "any"}});
  CHECK(apply(add, "The food is good.") == "The food is not good.");
  CHECK(apply(add, "The staff were friendly.") == "The staff were not friendly.");
  CHECK(apply(add, "I can recommend it.") == "I cannot recommend it.");
  CHECK(apply(add, "We do like the plot.") == "We do not like the plot.");
  CHECK(apply(add, "It will work.") == "It will not work.");
  CHECK(apply(add, "It has been fun.") == "It has not been fun.");
  CHECK(apply(add, "IT IS GREAT") == "IT IS NOT GREAT");
  CHECK_FALSE(add.apply("I loved the film.", 0).has_value());      // no auxiliary
  CHECK_FALSE(add.apply("The food is not good.", 0).has_value());  // already negated

  CHECK(apply(remove, "The food is not good.") == "The food is good.");
  CHECK(apply(remove, "I cannot recommend it.") == "I can recommend it.");
  CHECK(apply(remove, "I can't recommend it.") == "I can recommend it.");
  CHECK(apply(remove, "It isn't good.") == "It is good.");
  CHECK(apply(remove, "We don't like it.") == "We do like it.");
  CHECK(apply(remove, "It won't work.") == "It will work.");
  CHECK_FALSE(remove.apply("The food is good.", 0).has_value());

  CHECK(apply(any, "It is good.") == "It is not good.");
  CHECK(apply(any, "It is not good.") == "It is good.");
}

TEST_CASE("name, location and lexicon swaps use the lexicons consistently",
          "[assertions][perturb]") {
  LexiconSet lex = LexiconSet::builtin();
  REQUIRE(lex.add("name", {"Ana", "Wei"}, "test").is_ok());
  REQUIRE(lex.add("city", {"Paris", "Mexico City"}, "test").is_ok());
  REQUIRE(lex.add("country", {"Peru", "Chad"}, "test").is_ok());
  const auto names = make({{"kind", "names"}}, lex);
  CHECK(apply(names, "Ana told Ana's friend.") == "Wei told Wei's friend.");
  CHECK_FALSE(names.apply("Nobody is named here.", 0).has_value());
  const auto places = make({{"kind", "locations"}}, lex);
  CHECK(apply(places, "From Mexico City to Peru.") == "From Paris to Chad.");
  const auto professions = make({{"kind", "swap"}, {"lexicons", "profession"}});
  const std::string swapped = apply(professions, "My doctor was kind.", 5);
  CHECK(swapped != "My doctor was kind.");
  CHECK(swapped == apply(professions, "My doctor was kind.", 5));
  CHECK_THAT(swapped, Catch::StartsWith("My ") && Catch::EndsWith(" was kind."));
}

TEST_CASE("numbers: numerals move by up to 20 percent, keeping decimals", "[assertions][perturb]") {
  LexiconSet lex;
  REQUIRE(lex.add("number", {"two", "three"}, "test").is_ok());
  const auto numbers = make({{"kind", "numbers"}}, lex);
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const std::string out = apply(numbers, "I paid 100 for 2.5 kg", seed);
    INFO(out);
    const auto first = std::stoi(out.substr(7));
    CHECK(first >= 80);
    CHECK(first <= 120);
    CHECK(first != 100);
    CHECK_THAT(out, Catch::Matches(R"(I paid \d+ for \d\.\d kg)"));
  }
  CHECK(apply(numbers, "two dogs") == "three dogs");
  CHECK(apply(numbers, "mp3 costs 0") == "mp3 costs 1");
  CHECK_FALSE(numbers.apply("mp3 players", 0).has_value());
}

TEST_CASE("case: upper, lower and title", "[assertions][perturb]") {
  CHECK(apply(make({{"kind", "case"}, {"mode", "upper"}}), "Good film") == "GOOD FILM");
  CHECK(apply(make({{"kind", "case"}}), "Good Film") == "good film");
  CHECK(apply(make({{"kind", "case"}, {"mode", "title"}}), "a gOOD film") == "A Good Film");
  CHECK_FALSE(make({{"kind", "case"}}).apply("already lower", 0).has_value());
}

TEST_CASE("substitute: user pairs, whole words, optionally both ways", "[assertions][perturb]") {
  const auto one_way = make({{"kind", "substitute"}, {"pairs", {{"good", "great"}}}});
  CHECK(apply(one_way, "Good, good, goodness") == "Great, great, goodness");
  const auto both =
      make({{"kind", "substitute"}, {"pairs", {{"good", "bad"}}}, {"both_directions", true}});
  CHECK(apply(both, "good or bad") == "bad or good");
  const auto mapping = make({{"kind", "substitute"}, {"pairs", {{"the movie", "the film"}}}});
  CHECK(apply(mapping, "I saw the movie.") == "I saw the film.");
  CHECK_FALSE(one_way.apply("nothing matches", 0).has_value());
}

TEST_CASE("perturbation spec errors name the key", "[assertions][perturb]") {
  const LexiconSet lex = LexiconSet::builtin();
  auto error_of = [&](const nlohmann::json& body) {
    auto p = Perturbation::compile(body, lex, "t.yaml:4:3: test 'p'", "body.perturb");
    REQUIRE_FALSE(p.is_ok());
    CHECK_THAT(p.status().message(), Catch::StartsWith("t.yaml:4:3: test 'p': body.perturb"));
    return p.status().message();
  };
  CHECK_THAT(error_of({{"kind", "typo"}}),
             Catch::Contains("perturb.kind: unknown perturbation 'typo'"));
  CHECK_THAT(error_of({{"mode", "add"}}), Catch::Contains("perturb.kind: is required"));
  CHECK_THAT(error_of({{"kind", "negation"}, {"mode", "ad"}}),
             Catch::Contains("perturb.mode: expected one of add"));
  CHECK_THAT(error_of({{"kind", "typos"}, {"count", 0}}), Catch::Contains("perturb.count"));
  CHECK_THAT(error_of({{"kind", "typos"}, {"ops", "flip"}}),
             Catch::Contains("unknown typo operation 'flip'"));
  CHECK_THAT(error_of({{"kind", "swap"}}), Catch::Contains("body.perturb.lexicons: is required"));
  CHECK_THAT(error_of({{"kind", "swap"}, {"lexicons", "fruit"}}),
             Catch::Contains("body.perturb.lexicons: unknown lexicon 'fruit'"));
  CHECK_THAT(error_of({{"kind", "substitute"}}), Catch::Contains("perturb.pairs: is required"));
  CHECK_THAT(error_of({{"kind", "case"}, {"colour", "red"}}),
             Catch::Contains("perturb.colour: unknown key"));
  CHECK_THAT(error_of("negation"), Catch::Contains("expected a mapping"));
}
