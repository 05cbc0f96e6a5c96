// Recipe hashes ignore formatting and unrelated names, and follow every training change.
#include <catch2/catch.hpp>

#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "spec/recipe_hash.h"
#include "spec/spec_json.h"
#include "spec/vocabulary.h"
#include "spec_test_workspace.h"

using namespace scion::spec;
using scion::spec::testing::TempWorkspace;

namespace {

const char* kFamily =
    "datasets:\n"
    "  reviews: {path: reviews.jsonl, labels: [negative, positive]}\n"
    "  corpus: {path: corpus.txt}\n"
    "models:\n"
    "  base:\n"
    "    architecture: {layers: 2, width: 16, heads: 4, max_length: 32}\n"
    "    train: {data: corpus, steps: 10, seed: 1}\n"
    "  review:\n"
    "    from: base\n"
    "    adapt: {lora: {rank: 4, targets: [q, v]}, head: {}}\n"
    "    train: {data: reviews, epochs: 2, optimizer: {lr: 0.01}, seed: 2}\n"
    "  other:\n"
    "    from: base\n"
    "    adapt: {bitfit: true, head: {}}\n"
    "    train: {data: reviews, epochs: 1}\n";

std::map<std::string, std::string> hashes(const TempWorkspace& ws, const std::string& yaml) {
  const LoadResult r = ws.load(yaml);
  for (const Diagnostic& d : r.errors) UNSCOPED_INFO(d.to_string());
  REQUIRE(r.workspace);
  std::map<std::string, std::string> out;
  for (const Model& m : r.workspace->models) out[m.name] = m.recipe_hash;
  return out;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a recipe hash is lowercase hex SHA-256 and differs between models") {
  TempWorkspace ws;
  const auto h = hashes(ws, kFamily);
  CHECK(h.at("base").size() == 64);
  CHECK(h.at("base").find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(h.at("base") != h.at("review"));
  CHECK(h.at("review") != h.at("other"));
}

TEST_CASE("reordering keys, reformatting and renaming unrelated things keep the hash") {
  TempWorkspace ws;
  const auto original = hashes(ws, kFamily);
  // Flow style to block style, keys reordered, comments added, defaults spelt out.
  const std::string reformatted =
      replaced(kFamily,
               "    adapt: {lora: {rank: 4, targets: [q, v]}, head: {}}\n"
               "    train: {data: reviews, epochs: 2, optimizer: {lr: 0.01}, seed: 2}\n",
               "    train:            # the recipe\n"
               "      seed: 2\n"
               "      optimizer:\n"
               "        lr: 1.0e-2\n"
               "        type: adamw\n"
               "      epochs: 2\n"
               "      data: reviews\n"
               "    adapt:\n"
               "      head: {pooling: cls}\n"
               "      lora:\n"
               "        targets: [q, v]\n"
               "        rank: 4\n");
  CHECK(hashes(ws, reformatted) == original);
  // Renaming an unrelated model changes only that model's hash.
  auto renamed = hashes(ws, replaced(kFamily, "  other:", "  unrelated:"));
  CHECK(renamed.at("review") == original.at("review"));
  CHECK(renamed.at("base") == original.at("base"));
  // Renaming a dataset (and every reference to it) keeps the hash: data is its content.
  std::string dataset_renamed = replaced(kFamily, "  reviews: {", "  films: {");
  dataset_renamed =
      replaced(dataset_renamed, "{data: reviews, epochs: 2", "{data: films, epochs: 2");
  dataset_renamed =
      replaced(dataset_renamed, "{data: reviews, epochs: 1", "{data: films, epochs: 1");
  CHECK(hashes(ws, dataset_renamed) == original);
}

TEST_CASE("every training-relevant change changes the hash, and descendants follow") {
  TempWorkspace ws;
  const auto original = hashes(ws, kFamily);
  const std::vector<std::pair<std::string, std::string>> changes = {
      {"lr: 0.01", "lr: 0.02"},
      {"seed: 2", "seed: 3"},
      {"epochs: 2", "epochs: 3"},
      {"rank: 4", "rank: 8"},
      {"targets: [q, v]", "targets: [v, q]"},  // order of targets is part of the recipe
      {"head: {}}", "head: {pooling: mean}}"},
  };
  for (const auto& [from, to] : changes) {
    INFO(from << " -> " << to);
    const auto changed = hashes(ws, replaced(kFamily, from, to));
    CHECK(changed.at("review") != original.at("review"));
    CHECK(changed.at("base") == original.at("base"));
  }
  // A change to the base changes every descendant through the parent's hash.
  const auto base_changed = hashes(ws, replaced(kFamily, "seed: 1", "seed: 5"));
  CHECK(base_changed.at("base") != original.at("base"));
  CHECK(base_changed.at("review") != original.at("review"));
  CHECK(base_changed.at("other") != original.at("other"));
  // So does a change to the bytes of a data file.
  ws.write("reviews.jsonl", "{\"text\": \"fine\", \"label\": \"positive\"}\n");
  const auto data_changed = hashes(ws, kFamily);
  CHECK(data_changed.at("review") != original.at("review"));
  CHECK(data_changed.at("base") == original.at("base"));
}

TEST_CASE("the canonical recipe is typed JSON, not YAML text") {
  TempWorkspace ws;
  const LoadResult r = ws.load(kFamily);
  REQUIRE(r.workspace);
  const Workspace& w = *r.workspace;
  const nlohmann::json recipe = canonical_recipe(w, *w.find_model("review"));
  CHECK(recipe["parent_recipe"] == w.find_model("base")->recipe_hash);
  CHECK(recipe["adapt"]["lora"]["rank"] == 4);
  CHECK(recipe["train"]["seed"] == "2");
  CHECK(recipe["train"]["data"]["digest"] == w.find_dataset("reviews")->digest);
  CHECK_FALSE(recipe["train"]["data"].contains("path"));
}

TEST_CASE("a model's hash follows the recipes of the models it shares modules with") {
  TempWorkspace ws;
  const std::string shared = std::string(kFamily) +
                             "  third:\n"
                             "    from: base\n"
                             "    adapt: {lora: {rank: 4, targets: [q, v]}, head: {}}\n"
                             "    train: {data: reviews, epochs: 2, seed: 3}\n"
                             "share:\n"
                             "  heads: {models: [review, third], modules: ['head.$model.*']}\n";
  const auto before = hashes(ws, shared);
  const auto after = hashes(ws, replaced(shared, "seed: 3", "seed: 4"));
  CHECK(after.at("third") != before.at("third"));
  CHECK(after.at("review") != before.at("review"));  // its shared head trains with third's data
  CHECK(after.at("other") == before.at("other"));
  CHECK(after.at("base") == before.at("base"));
}

TEST_CASE("precision is part of the recipe: bf16 changes the hash, fp32 is the default") {
  TempWorkspace ws;
  const auto original = hashes(ws, kFamily);
  const auto fp32 = hashes(ws, replaced(kFamily, "optimizer: {lr: 0.01}, seed: 2}",
                                        "optimizer: {lr: 0.01}, seed: 2, precision: fp32}"));
  CHECK(fp32 == original);
  const auto bf16 = hashes(ws, replaced(kFamily, "optimizer: {lr: 0.01}, seed: 2}",
                                        "optimizer: {lr: 0.01}, seed: 2, precision: bf16}"));
  CHECK(bf16.at("review") != original.at("review"));
  CHECK(bf16.at("base") == original.at("base"));
  CHECK(bf16.at("other") == original.at("other"));
}

TEST_CASE("an unknown precision is a spec error naming the choices") {
  TempWorkspace ws;
  const LoadResult r = ws.load(replaced(kFamily, "seed: 2}", "seed: 2, precision: fp16}"));
  CHECK_FALSE(r.workspace);
  REQUIRE_FALSE(r.errors.empty());
  CHECK(r.errors.front().to_string().find("precision") != std::string::npos);
  CHECK(r.errors.front().to_string().find("bf16") != std::string::npos);
}

TEST_CASE("recompute is read but changes no hash: it changes no trained value") {
  TempWorkspace ws;
  const auto original = hashes(ws, kFamily);
  const auto recompute = hashes(ws, replaced(kFamily, "optimizer: {lr: 0.01}, seed: 2}",
                                             "optimizer: {lr: 0.01}, seed: 2, recompute: true}"));
  CHECK(recompute == original);
  const LoadResult bad = ws.load(replaced(kFamily, "seed: 2}", "seed: 2, recompute: maybe}"));
  CHECK_FALSE(bad.workspace);
  REQUIRE_FALSE(bad.errors.empty());
  CHECK(bad.errors.front().to_string().find("recompute") != std::string::npos);
}

// On an imported BERT, RoBERTa or GPT-2 base prefix tuning moves the text's positions
// (spec/text_positions.h); the rule is folded into those prefix models' recipes only, so
// that models trained before it are out of date there and every other hash is unchanged.
TEST_CASE("the prefix position rule is in the recipe of shifted prefix models only") {
  auto recipes = [](const std::string& model_type, PositionKind positions) {
    Workspace ws;
    Model base;
    base.name = "base";
    base.architecture = Architecture{};
    base.architecture->layers = 2;
    base.architecture->hf_model_type = model_type;
    base.architecture->positions = positions;
    Model prefix;
    prefix.name = "prefix";
    prefix.from = "base";
    prefix.adaptation.prefix = PrefixSpec{.virtual_tokens = 2, .layers = {}, .reparam_hidden = 0};
    Model lora;
    lora.name = "lora";
    lora.from = "base";
    lora.adaptation.set(
        LoraSpec{.rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q"}, .layers = {}});
    ws.models = {base, prefix, lora};
    return std::pair{canonical_recipe(ws, ws.models[1]), canonical_recipe(ws, ws.models[2])};
  };
  for (const char* type : {"bert", "roberta", "gpt2"}) {
    const auto [prefix, lora] = recipes(type, PositionKind::kLearned);
    INFO(type);
    CHECK(prefix["adapt"]["prefix"]["text_positions"] == "after_prefix");
    CHECK(lora.dump().find("text_positions") == std::string::npos);
  }
  // Native models and rotary positions (Llama) keep the recipes they had.
  for (const auto& [type, positions] :
       {std::pair{"", PositionKind::kLearned}, std::pair{"llama", PositionKind::kRotary}}) {
    const auto [prefix, lora] = recipes(type, positions);
    INFO(type);
    CHECK(prefix["adapt"]["prefix"].size() == 3);  // virtual_tokens, layers, reparam_hidden
    CHECK(prefix.dump().find("text_positions") == std::string::npos);
  }
}

TEST_CASE("use_rslora enters the recipe only when set, and round-trips through it") {
  TempWorkspace ws;
  const auto original = hashes(ws, kFamily);
  const auto off = hashes(ws, replaced(kFamily, "lora: {rank: 4, targets: [q, v]}",
                                       "lora: {rank: 4, targets: [q, v], use_rslora: false}"));
  CHECK(off == original);
  const std::string rs = replaced(kFamily, "lora: {rank: 4, targets: [q, v]}",
                                  "lora: {rank: 4, targets: [q, v], use_rslora: true}");
  const auto on = hashes(ws, rs);
  CHECK(on.at("review") != original.at("review"));
  CHECK(on.at("other") == original.at("other"));
  const LoadResult r = ws.load(rs);
  REQUIRE(r.workspace);
  const Model& review = *r.workspace->find_model("review");
  REQUIRE(review.adaptation.find<LoraSpec>());
  CHECK(review.adaptation.find<LoraSpec>()->use_rslora);
  CHECK(review.adaptation.find<LoraSpec>()->scaling() == Approx(16.0f / 2.0f));  // alpha / sqrt(4)
  const auto back = adaptation_from_recipe(canonical_recipe(*r.workspace, review)["adapt"]);
  REQUIRE(back);
  REQUIRE(back->find<LoraSpec>());
  CHECK(back->find<LoraSpec>()->use_rslora);
  const LoadResult bad = ws.load(replaced(kFamily, "lora: {rank: 4, targets: [q, v]}",
                                          "lora: {rank: 4, targets: [q, v], use_rslora: yes}"));
  REQUIRE_FALSE(bad.errors.empty());
  CHECK(bad.errors.front().to_string().find("adapt.lora.use_rslora") != std::string::npos);
}

// Issue #28: one vocabulary (keys.h's tables) and one serialiser with two modes.
TEST_CASE("every closed value has exactly one word, the one the loader parses") {
  using scion::spec::word;
  for (const auto& choice : keys::kObjectives) CHECK(word(choice.value) == choice.word);
  for (const auto& choice : kBottleneckPlacements) CHECK(word(choice.value) == choice.word);
  for (const auto& choice : keys::kPromptInits) CHECK(word(choice.value) == choice.word);
  for (const auto& choice : keys::kPoolings) CHECK(word(choice.value) == choice.word);
  for (const auto& choice : keys::kTasks) CHECK(word(choice.value) == choice.word);
  for (const auto& choice : keys::kTokenizers) CHECK(word(choice.value) == choice.word);
  for (const auto& choice : keys::kDatasetFormats) CHECK(word(choice.value) == choice.word);
  for (const auto& choice : keys::kLabelTypes) CHECK(word(choice.value) == choice.word);
  // By index, as the canonical recipe stores enums: E(i) has a word for every i.
  const auto placements = vocabulary_detail::by_index(kBottleneckPlacements);
  REQUIRE(placements.size() == 3);
  CHECK(placements[static_cast<int>(BottleneckPlacement::kAfterFfn)] == "ffn");
  CHECK(std::string(head_task_name(HeadTask::kMultiLabel)) == "multi_label");
  CHECK(std::string(precision_name(Precision::kBF16)) == "bf16");
}

TEST_CASE("the words form of an adaptation has the canonical form's keys, enums in words") {
  TempWorkspace ws;
  const LoadResult r = ws.load(
      "datasets:\n"
      "  reviews: {path: reviews.jsonl, labels: [negative, positive]}\n"
      "  corpus: {path: corpus.txt}\n"
      "models:\n"
      "  base:\n"
      "    architecture: {layers: 2, width: 16, heads: 4, max_length: 32}\n"
      "    train: {data: corpus, steps: 10}\n"
      "  adapted:\n"
      "    from: base\n"
      "    adapt: {bottleneck: {reduction: 4, placement: ffn}, prompt: {virtual_tokens: 2},\n"
      "            lora: {rank: 2, alpha: 0.1, use_dora: true}, head: {pooling: mean}}\n"
      "    train: {data: reviews, steps: 2, max_length: 16}\n");
  for (const Diagnostic& d : r.errors) UNSCOPED_INFO(d.to_string());
  REQUIRE(r.workspace);
  const Model& m = *r.workspace->find_model("adapted");
  const nlohmann::json canonical = adaptation_json(m.adaptation);
  const nlohmann::json words = adaptation_in_words(m.adaptation);
  CHECK(canonical["bottleneck"]["placement"] == 1);
  CHECK(words["bottleneck"]["placement"] == "ffn");
  // The bottleneck adapter's block reads its record back in either mode.
  const MethodBlock* bottleneck = find_method_block("bottleneck");
  REQUIRE(bottleneck);
  for (const nlohmann::json& form : {canonical["bottleneck"], words["bottleneck"]}) {
    const auto back = bottleneck->from_json(form);
    REQUIRE(back);
    CHECK(back->json() == canonical["bottleneck"]);
  }
  CHECK_FALSE(bottleneck->from_json({{"reduction", 4}, {"placement", "sideways"}, {"layers", {}}}));
  CHECK(words["prompt"]["init"] == "random");
  CHECK(words["head"]["pooling"] == "mean");
  CHECK(words["lora"]["alpha"] == 0.1);  // as written, not 0.10000000149011612
  CHECK(canonical["lora"]["alpha"] != 0.1);
  for (const auto& [method, settings] : canonical.items()) {
    REQUIRE(words.contains(method));
    for (const auto& [key, value] : settings.items()) CHECK(words[method].contains(key));
    CHECK(words[method].size() == settings.size());
  }
  // Reading the canonical form back gives the same adaptation.
  const auto back = adaptation_from_recipe(canonical);
  REQUIRE(back);
  CHECK(adaptation_json(*back) == canonical);
  // A store record's LoRA (the words form, alpha as written) reads back through its block to
  // the settings it recorded.
  const MethodBlock* lora = find_method_block("lora");
  REQUIRE(lora);
  const auto recorded = lora->from_json(words["lora"]);
  REQUIRE(recorded);
  CHECK(recorded->json() == canonical["lora"]);
  const nlohmann::json architecture = architecture_in_words(r.workspace->architecture_of(m));
  CHECK(architecture["type"] == "encoder");
  CHECK(architecture["tokenizer"]["kind"] == "byte");
}
