// Data for the tasks beyond single labels: reading list labels, numbers and tagged words
// (JSONL and CSV), sentence pairs framed and truncated as Hugging Face tokenizers do,
// token types, and word tags on each word's first sub-word.
#include <catch2/catch.hpp>
#include <filesystem>

#include "runtime/data/batcher.h"
#include "runtime/data/dataset_reader.h"
#include "runtime/data/tokenized_dataset.h"
#include "runtime/text/byte_tokenizer.h"
#include "runtime/text/tokenizer.h"
#include "tests/unit/data_test_files.h"

using namespace scion;
using test::TempFile;

namespace {

constexpr std::int32_t kPad = 256, kCls = 257, kSep = 258;

spec::Dataset dataset(const TempFile& file, spec::DatasetFormat format, spec::LabelType type,
                      std::vector<std::string> labels) {
  spec::Dataset d;
  d.name = std::string("d");  // not = "d": GCC 12 -O3 reports a false -Wrestrict there
  d.path = file.path();
  d.format = format;
  d.label_type = type;
  d.labels = std::move(labels);
  return d;
}

std::string error_of(const spec::Dataset& d) {
  auto read = data::read_dataset(d);
  REQUIRE_FALSE(read);
  return read.status().message();
}

std::filesystem::path fixture(const char* name) {
  return std::filesystem::path(SCION_TEST_FIXTURES) / "hf" / name / "tokenizer.json";
}

}  // namespace

TEST_CASE("multi-label rows: a list of names in JSONL, '|'-joined in CSV") {
  TempFile jsonl("t.jsonl",
                 "{\"text\": \"a\", \"label\": [\"money\", \"sport\", \"money\"]}\n"
                 "{\"text\": \"b\", \"label\": []}\n");
  auto read = data::read_dataset(
      dataset(jsonl, spec::DatasetFormat::kJsonl, spec::LabelType::kMulti, {"sport", "money"}));
  REQUIRE(read.is_ok());
  CHECK(read->examples[0].label_set == std::vector<std::int32_t>{0, 1});
  CHECK(read->examples[1].label_set.empty());
  TempFile csv("t.csv", "text,label\na,sport|money\nb,\n");
  read = data::read_dataset(
      dataset(csv, spec::DatasetFormat::kCsv, spec::LabelType::kMulti, {"sport", "money"}));
  REQUIRE(read.is_ok());
  CHECK(read->examples[0].label_set == std::vector<std::int32_t>{0, 1});
  TempFile wrong("w.jsonl", "{\"text\": \"a\", \"label\": \"sport\"}\n");
  CHECK_THAT(
      error_of(dataset(wrong, spec::DatasetFormat::kJsonl, spec::LabelType::kMulti, {"sport"})),
      Catch::Contains(":1: field 'label' is a string, expected a list of label names"));
  const auto tokens = data::tokenize_examples(*read, text::ByteTokenizer(), 2);
  CHECK(tokens.targets[0] == std::vector<float>{1, 1});
  CHECK(tokens.targets[1] == std::vector<float>{0, 0});
}

TEST_CASE("number rows: one value or a list of one length") {
  TempFile jsonl("n.jsonl",
                 "{\"text\": \"a\", \"label\": 0.25}\n{\"text\": \"b\", \"label\": [3]}\n");
  auto read =
      data::read_dataset(dataset(jsonl, spec::DatasetFormat::kJsonl, spec::LabelType::kNumber, {}));
  REQUIRE(read.is_ok());
  CHECK(read->examples[0].values == std::vector<float>{0.25f});
  CHECK(read->examples[1].values == std::vector<float>{3.0f});
  TempFile ragged("r.jsonl",
                  "{\"text\": \"a\", \"label\": [1, 2]}\n{\"text\": \"b\", \"label\": [1]}\n");
  CHECK_THAT(error_of(dataset(ragged, spec::DatasetFormat::kJsonl, spec::LabelType::kNumber, {})),
             Catch::Contains(":2: field 'label' holds 1 numbers, but the first row holds 2"));
  TempFile csv("n.csv", "text,label\na,1.5\nb,x\n");
  CHECK_THAT(error_of(dataset(csv, spec::DatasetFormat::kCsv, spec::LabelType::kNumber, {})),
             Catch::Contains(":3: column 'label' holds 'x', expected a number"));
}

TEST_CASE("tagged words: one tag per word, words without whitespace") {
  TempFile jsonl("t.jsonl", "{\"text\": [\"Ann\", \"ran\"], \"label\": [\"B-PER\", \"O\"]}\n");
  auto read = data::read_dataset(
      dataset(jsonl, spec::DatasetFormat::kJsonl, spec::LabelType::kTags, {"O", "B-PER"}));
  REQUIRE(read.is_ok());
  CHECK(read->examples[0].text == "Ann ran");
  CHECK(read->examples[0].tags == std::vector<std::int32_t>{1, 0});
  TempFile uneven("u.jsonl", "{\"text\": [\"Ann\", \"ran\"], \"label\": [\"B-PER\"]}\n");
  CHECK_THAT(error_of(dataset(uneven, spec::DatasetFormat::kJsonl, spec::LabelType::kTags,
                              {"O", "B-PER"})),
             Catch::Contains("2 words but 1 tags"));
  TempFile spaced("s.jsonl", "{\"text\": [\"New York\"], \"label\": [\"O\"]}\n");
  CHECK_THAT(error_of(dataset(spaced, spec::DatasetFormat::kJsonl, spec::LabelType::kTags, {"O"})),
             Catch::Contains("without whitespace"));
}

TEST_CASE("word tags go to each kept word's first sub-word") {
  // Bytes: "Ann" is 3 tokens, a space token between words starts no word.
  data::ExampleSet set{.labelled = true, .label_type = spec::LabelType::kTags};
  set.examples.push_back(
      {.text = "Ann ran far", .words = {"Ann", "ran", "far"}, .tags = {1, 0, 2}});
  const auto tokens = data::tokenize_examples(set, text::ByteTokenizer(), 3);
  CHECK(tokens.word_starts[0] == std::vector<std::int32_t>{0, 4, 8});
  const std::vector<std::int64_t> rows{0};
  data::Batch b = data::make_classification_batch(tokens, rows, {.max_length = 8});
  // [CLS] A n n ␣ r a [SEP]: "far" is cut off, so its tag takes no loss.
  CHECK(b.targets == std::vector<std::int32_t>{-100, 1, -100, -100, -100, 0, -100, -100});
  CHECK(b.labels.empty());
}

TEST_CASE("pairs: framed [CLS] A [SEP] B [SEP], truncated longest first, with token types") {
  CHECK(data::truncate_pair(3, 4, 10) == std::pair<std::size_t, std::size_t>{3, 4});
  CHECK(data::truncate_pair(2, 9, 6) ==
        std::pair<std::size_t, std::size_t>{2, 4});  // only the longer
  CHECK(data::truncate_pair(9, 2, 6) == std::pair<std::size_t, std::size_t>{4, 2});
  CHECK(data::truncate_pair(7, 9, 5) == std::pair<std::size_t, std::size_t>{2, 3});  // both: halves
  data::ExampleSet set{.labelled = true};
  set.pairs = true;
  set.examples.push_back({.text = "ab", .label = 1, .line = 1, .text_pair = "cdefg"});
  const auto tokens = data::tokenize_examples(set, text::ByteTokenizer(), 2);
  const std::vector<std::int64_t> rows{0};
  data::Batch b = data::make_classification_batch(tokens, rows, {.max_length = 8});
  CHECK(b.tokens == std::vector<std::int32_t>{kCls, 'a', 'b', kSep, 'c', 'd', 'e', kSep});
  CHECK(b.token_types == std::vector<std::int32_t>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(b.labels == std::vector<std::int32_t>{1});
  // With room for both texts whole, nothing is cut.
  data::Batch whole = data::make_classification_batch(tokens, rows, {.max_length = 12});
  CHECK(whole.tokens ==
        std::vector<std::int32_t>{kCls, 'a', 'b', kSep, 'c', 'd', 'e', 'f', 'g', kSep});
  data::Batch padded =
      data::make_classification_batch(tokens, rows, {.max_length = 12, .pad_to_max_length = true});
  CHECK(padded.tokens.size() == 12);
  CHECK(padded.tokens.back() == kPad);
  CHECK(padded.token_types.back() == 0);  // padding
}

TEST_CASE("a tokenizer.json frames pairs as its post-processor says") {
  auto bert =
      text::make_tokenizer({spec::TokenizerKind::kWordPiece, fixture("tiny-bert").string()}, "/");
  REQUIRE(bert.is_ok());
  const text::PairFraming b = (*bert)->pair_framing();
  CHECK(b.open.size() == 1);
  CHECK(b.middle == std::vector<std::int32_t>{(*bert)->special_tokens().sep});
  CHECK(b.second_type == 1);
  auto roberta =
      text::make_tokenizer({spec::TokenizerKind::kBpe, fixture("tiny-roberta").string()}, "/");
  REQUIRE(roberta.is_ok());
  const text::PairFraming r = (*roberta)->pair_framing();
  CHECK(r.middle.size() == 2);  // </s></s>
  CHECK(r.second_type == 0);
  // Words with a space before each, as add_prefix_space=True encodes them.
  std::vector<std::int32_t> ids, starts;
  const std::vector<std::string> words = {"the", "movie"};
  (*roberta)->encode_words(words, ids, starts);
  CHECK(ids == (*roberta)->encode(" the movie"));
  CHECK(starts.size() == 2);
}
