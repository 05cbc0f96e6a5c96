// Wrong JSON types in the Hugging Face files scion reads (issue #29, item 1): every key
// path of the fixtures' config.json and tokenizer.json files (WordPiece and BPE), with its
// value replaced by every JSON type, through the readers behind `scion validate` and
// `scion import`. Each is either accepted or a spec error (exit 2) of one line naming the
// file and the key; nlohmann's type_error never escapes a reader (it used to end as
// "internal error ... (please report this as a scion bug)", exit 3).
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hf_fixtures.h"
#include "runtime/text/bpe_tokenizer.h"
#include "runtime/text/wordpiece_tokenizer.h"
#include "spec/hf_model_folder.h"

namespace scion {
namespace {

using nlohmann::json;

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A key path: object keys and array indices from the document's root.
using Path = std::vector<json>;

// Every key path worth confusing: every key of objects (a few of a large vocabulary's),
// the first two elements of arrays, recursively.
void collect_paths(const json& value, Path& prefix, std::vector<Path>& out) {
  if (value.is_object()) {
    std::size_t seen = 0;
    for (auto it = value.begin(); it != value.end() && (value.size() <= 64 || seen < 3);
         ++it, ++seen) {
      prefix.push_back(it.key());
      out.push_back(prefix);
      collect_paths(it.value(), prefix, out);
      prefix.pop_back();
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size() && i < 2; ++i) {
      prefix.push_back(i);
      out.push_back(prefix);
      collect_paths(value[i], prefix, out);
      prefix.pop_back();
    }
  }
}

json& at_path(json& doc, const Path& path) {
  json* node = &doc;
  for (const json& key : path)
    node = key.is_string() ? &(*node)[key.get<std::string>()] : &(*node)[key.get<std::size_t>()];
  return *node;
}

const std::vector<json>& every_json_type() {
  static const std::vector<json> types = {nullptr,
                                          true,
                                          5,
                                          -1,
                                          2.5,
                                          "x",
                                          json::array(),
                                          json::array({1, "a"}),
                                          json::object(),
                                          json({{"type", 7}})};
  return types;
}

// For each key path of `original` and each JSON type: the reader either accepts the
// document or returns a one-line spec error naming `file`; returns how many were refused.
template <typename Read>
int check_every_key_and_type(const std::string& original, const std::string& file, Read read) {
  const json doc = json::parse(original);
  std::vector<Path> paths;
  Path prefix;
  collect_paths(doc, prefix, paths);
  REQUIRE(!paths.empty());
  int refused = 0;
  for (const Path& path : paths) {
    for (const json& value : every_json_type()) {
      json changed = doc;
      at_path(changed, path) = value;
      const std::string text = changed.dump();
      INFO(file << " at " << json(path).dump() << " = " << value.dump());
      Status status;
      REQUIRE_NOTHROW(status = read(text));
      if (status.is_ok()) continue;
      ++refused;
      CHECK(status.code() == StatusCode::kSpecError);
      CHECK(status.message().find(file) != std::string::npos);
      CHECK(status.message().find('\n') == std::string::npos);
      CHECK(status.message().find("type_error") == std::string::npos);
    }
  }
  return refused;
}

Status read_config(const std::string& text) {
  auto arch = spec::hf_config_architecture(text, "config.json");
  return arch ? Status::ok() : arch.status();
}

Status read_wordpiece(const std::string& text) {
  auto tok = text::WordPieceTokenizer::parse_hugging_face(text, "tokenizer.json");
  return tok ? Status::ok() : tok.status();
}

Status read_bpe(const std::string& text, const std::string& config) {
  auto tok = text::BpeTokenizer::parse_hugging_face(text, "tokenizer.json", config,
                                                    "tokenizer_config.json");
  return tok ? Status::ok() : tok.status();
}

TEST_CASE("every key of config.json with every JSON type is accepted or a spec error",
          "[hf][json]") {
  for (const char* folder : {"tiny-bert", "tiny-roberta", "tiny-gpt2", "tiny-llama", "tiny-qwen2",
                             "tiny-mistral", "tiny-phi3"}) {
    INFO(folder);
    const std::string text = read_text(test::kFixtures / folder / "config.json");
    REQUIRE(read_config(text).is_ok());
    CHECK(check_every_key_and_type(text, "config.json", read_config) > 0);
  }
}

TEST_CASE("every key of tokenizer.json with every JSON type is accepted or a spec error",
          "[hf][json]") {
  for (const char* folder : {"tiny-bert", "golden-uncased"}) {
    INFO(folder);
    const std::string text = read_text(test::kFixtures / folder / "tokenizer.json");
    REQUIRE(read_wordpiece(text).is_ok());
    CHECK(check_every_key_and_type(text, "tokenizer.json", read_wordpiece) > 0);
  }
  for (const char* folder : {"bpe-gpt2", "bpe-llama2", "bpe-roberta"}) {
    INFO(folder);
    const std::string text = read_text(test::kFixtures / folder / "tokenizer.json");
    const std::string config = read_text(test::kFixtures / folder / "tokenizer_config.json");
    auto bpe = [&](const std::string& t) { return read_bpe(t, config); };
    REQUIRE(bpe(text).is_ok());
    CHECK(check_every_key_and_type(text, "tokenizer.json", bpe) > 0);
    // tokenizer_config.json beside it is read the same way.
    auto with_config = [&](const std::string& c) { return read_bpe(text, c); };
    check_every_key_and_type(config, "tokenizer_config.json", with_config);
  }
}

// The cases the issue reports, each with its key path and the type expected.
TEST_CASE("the reported wrong types name the file, the key path and the expected type",
          "[hf][json]") {
  const json bert = json::parse(read_text(test::kFixtures / "tiny-bert" / "config.json"));
  auto config_error = [&](const char* key, const json& value) {
    json changed = bert;
    changed[key] = value;
    return read_config(changed.dump()).message();
  };
  CHECK(config_error("model_type", 5) ==
        "config.json: model_type is 5 (an integer), expected a string");
  CHECK(config_error("hidden_act", 1) ==
        "config.json: hidden_act is 1 (an integer), expected a string");
  CHECK(config_error("position_embedding_type", 0) ==
        "config.json: position_embedding_type is 0 (an integer), expected a string");
  CHECK(config_error("is_decoder", "no") ==
        "config.json: is_decoder is \"no\" (a string), expected true or false");
  CHECK(config_error("add_cross_attention", "false") ==
        "config.json: add_cross_attention is \"false\" (a string), expected true or false");

  const json tokenizer = json::parse(read_text(test::kFixtures / "tiny-bert" / "tokenizer.json"));
  auto tokenizer_error = [&](const std::vector<json>& path, const json& value) {
    json changed = tokenizer;
    at_path(changed, path) = value;
    return read_wordpiece(changed.dump()).message();
  };
  CHECK(tokenizer_error({"model", "continuing_subword_prefix"}, 2) ==
        "tokenizer.json: model.continuing_subword_prefix is 2 (an integer), expected a string");
  CHECK(tokenizer_error({"model", "max_input_chars_per_word"}, "100") ==
        "tokenizer.json: model.max_input_chars_per_word is \"100\" (a string), expected an "
        "integer from 0 to 1073741824");
  CHECK(tokenizer_error({"normalizer", "lowercase"}, "yes") ==
        "tokenizer.json: normalizer.lowercase is \"yes\" (a string), expected true or false");
  CHECK(tokenizer_error({"added_tokens", 0, "content"}, 7) ==
        "tokenizer.json: added_tokens[0].content is 7 (an integer), expected a string");
  CHECK(tokenizer_error({"added_tokens"}, json({{"content", "[X]"}})) ==
        "tokenizer.json: added_tokens is {\"content\":\"[X]\"} (an object), expected an array");
}

}  // namespace
}  // namespace scion
