#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "runtime/data/batch_stream.h"
#include "runtime/data/shuffle.h"
#include "runtime/data/training_data.h"
#include "runtime/text/byte_tokenizer.h"
#include "tests/unit/data_test_files.h"

using namespace scion;
using data::Batch;
using data::kIgnoreIndex;

namespace {

constexpr std::int32_t kPad = 256, kCls = 257, kSep = 258, kMask = 259;

std::shared_ptr<const data::TokenizedDataset> byte_dataset(std::vector<std::string> texts,
                                                           bool labelled) {
  data::ExampleSet set;
  set.labelled = labelled;
  for (std::size_t i = 0; i < texts.size(); ++i)
    set.examples.push_back({texts[i], labelled ? static_cast<std::int32_t>(i % 2) : data::kNoLabel,
                            static_cast<int>(i + 1)});
  return std::make_shared<const data::TokenizedDataset>(
      data::tokenize_examples(set, text::ByteTokenizer()));
}

std::vector<std::int32_t> row(const Batch& b, int r, const std::vector<std::int32_t>& of) {
  const auto T = static_cast<std::ptrdiff_t>(b.length);
  return {of.begin() + r * T, of.begin() + (r + 1) * T};
}

std::vector<std::int64_t> rows_0_to(std::int64_t n) {
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < n; ++i) rows.push_back(i);
  return rows;
}

}  // namespace

TEST_CASE("classification batch: framing, truncation, padding, mask, labels", "[data][batch]") {
  auto data = byte_dataset({"abc", "hello world"}, true);
  const std::vector<std::int64_t> rows{0, 1};
  Batch b = data::make_classification_batch(*data, rows, {.max_length = 8});
  CHECK(b.batch_size == 2);
  CHECK(b.length == 8);  // the longest row after truncation
  CHECK(row(b, 0, b.tokens) ==
        std::vector<std::int32_t>{kCls, 'a', 'b', 'c', kSep, kPad, kPad, kPad});
  // "hello world" keeps its first 6 bytes: max_length 8 less [CLS] and [SEP].
  CHECK(row(b, 1, b.tokens) == std::vector<std::int32_t>{kCls, 'h', 'e', 'l', 'l', 'o', ' ', kSep});
  CHECK(row(b, 0, b.attention_mask) == std::vector<std::int32_t>{1, 1, 1, 1, 1, 0, 0, 0});
  CHECK(b.lengths == std::vector<std::int32_t>{5, 8});
  CHECK(b.labels == std::vector<std::int32_t>{0, 1});
  CHECK(b.targets.empty());
  CHECK(b.rows == rows);

  Batch short_rows =
      data::make_classification_batch(*data, std::vector<std::int64_t>{0}, {.max_length = 8});
  CHECK(short_rows.length == 5);
  Batch padded = data::make_classification_batch(*data, std::vector<std::int64_t>{0},
                                                 {.max_length = 8, .pad_to_max_length = true});
  CHECK(padded.length == 8);
  CHECK(padded.tokens.size() == 8);
}

TEST_CASE("causal-LM batch: targets shifted by one, ignored on padding", "[data][batch]") {
  auto data = byte_dataset({"abc", "abcdefghij"}, false);
  Batch b = data::make_causal_lm_batch(*data, std::vector<std::int64_t>{0, 1}, {.max_length = 6});
  CHECK(b.length == 6);
  CHECK(row(b, 0, b.tokens) == std::vector<std::int32_t>{kCls, 'a', 'b', 'c', kPad, kPad});
  CHECK(row(b, 0, b.targets) ==
        std::vector<std::int32_t>{'a', 'b', 'c', kSep, kIgnoreIndex, kIgnoreIndex});
  // Truncated to 5 content tokens: 6 inputs [BOS] a..e, targets a..e [EOS].
  CHECK(row(b, 1, b.tokens) == std::vector<std::int32_t>{kCls, 'a', 'b', 'c', 'd', 'e'});
  CHECK(row(b, 1, b.targets) == std::vector<std::int32_t>{'a', 'b', 'c', 'd', 'e', kSep});
  CHECK(b.lengths == std::vector<std::int32_t>{4, 6});
}

TEST_CASE("masked-LM batch: targets only where chosen, specials never masked", "[data][batch]") {
  auto data = byte_dataset({"abcdefgh", "xy"}, false);
  const std::vector<std::int64_t> rows{0, 1};
  base::SeededRng rng(5, base::RngPurpose::kMasking, 0);
  Batch b = data::make_masked_lm_batch(*data, rows, {.max_length = 16}, 0.5f, rng);
  REQUIRE(b.length == 10);
  for (int r = 0; r < 2; ++r) {
    const auto tokens = row(b, r, b.tokens), targets = row(b, r, b.targets);
    const std::string original = r == 0 ? "abcdefgh" : "xy";
    CHECK(tokens[0] == kCls);
    CHECK(targets[0] == kIgnoreIndex);
    int chosen = 0;
    for (std::size_t pos = 1; pos < static_cast<std::size_t>(b.length); ++pos) {
      if (pos <= original.size()) {
        if (targets[pos] != kIgnoreIndex) {
          ++chosen;
          CHECK(targets[pos] == original[pos - 1]);
        } else {
          CHECK(tokens[pos] == original[pos - 1]);
        }
      } else {
        CHECK(targets[pos] == kIgnoreIndex);  // [SEP] and padding
      }
    }
    CHECK(chosen >= 1);  // every row contributes to the loss
  }

  base::SeededRng same(5, base::RngPurpose::kMasking, 0);
  Batch again = data::make_masked_lm_batch(*data, rows, {.max_length = 16}, 0.5f, same);
  CHECK(again.tokens == b.tokens);
  CHECK(again.targets == b.targets);
}

TEST_CASE("masked-LM statistics follow the 15% and 80/10/10 rule", "[data][batch]") {
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) {
    std::string t;
    for (int j = 0; j < 126; ++j) t.push_back(static_cast<char>('a' + (i * 7 + j) % 26));
    texts.push_back(t);
  }
  auto data = byte_dataset(texts, false);
  base::SeededRng rng(2024, base::RngPurpose::kMasking, 0);
  Batch b = data::make_masked_lm_batch(*data, rows_0_to(200), {.max_length = 128}, 0.15f, rng);
  int chosen = 0, masked = 0, replaced = 0, kept = 0;
  for (std::size_t i = 0; i < b.tokens.size(); ++i) {
    if (b.targets[i] == kIgnoreIndex) continue;
    ++chosen;
    if (b.tokens[i] == kMask)
      ++masked;
    else if (b.tokens[i] != b.targets[i])
      ++replaced;
    else
      ++kept;
    CHECK(b.tokens[i] != kPad);
    CHECK(b.tokens[i] != kCls);
    CHECK(b.tokens[i] != kSep);
  }
  const double positions = 200.0 * 126;
  // 25,200 positions: sd of the chosen fraction ~0.0022, of the 80% share ~0.0065 and of a
  // 10% share ~0.0049 (about 3,800 chosen); the margins are 4-5 sd. A random token equal to
  // the original (1/256 of replacements) counts as kept.
  CHECK(chosen / positions == Approx(0.15).margin(0.01));
  CHECK(masked / static_cast<double>(chosen) == Approx(0.8).margin(0.03));
  CHECK(replaced / static_cast<double>(chosen) == Approx(0.1).margin(0.025));
  CHECK(kept / static_cast<double>(chosen) == Approx(0.1).margin(0.025));
}

TEST_CASE("tokenize_corpus cuts windows that fit after framing", "[data][batch]") {
  const int window = data::content_capacity(false, 6);
  CHECK(window == 4);
  CHECK(data::content_capacity(true, 6) == 5);
  auto corpus = data::tokenize_corpus("abcdefghij", text::ByteTokenizer(), window);
  REQUIRE(corpus.row_count() == 3);
  CHECK(corpus.rows[0] == std::vector<std::int32_t>{'a', 'b', 'c', 'd'});
  CHECK(corpus.rows[2] == std::vector<std::int32_t>{'i', 'j'});
  CHECK_FALSE(corpus.labelled());
}

TEST_CASE("batch stream: epochs cover every row once, in a seeded order", "[data][stream]") {
  std::vector<std::string> texts;
  for (int i = 0; i < 10; ++i) texts.push_back(std::string(static_cast<std::size_t>(i + 1), 'x'));
  auto data = byte_dataset(texts, true);
  const std::vector<std::int64_t> train{0, 2, 3, 5, 6, 7, 9};
  data::BatchStreamOptions options{.batch_size = 3, .max_length = 16, .seed = 11};
  auto stream = data::BatchStream::create(data, train, options);
  REQUIRE(stream);
  CHECK(stream->batches_per_epoch() == 3);

  std::vector<std::vector<std::int64_t>> epochs(2);
  std::vector<Batch> first_pass;
  for (int i = 0; i < 6; ++i) {
    Batch b = stream->next();
    CHECK(b.number == i);
    CHECK(b.epoch == i / 3);
    CHECK(b.batch_size == (i % 3 == 2 ? 1 : 3));  // 7 rows: 3 + 3 + 1
    epochs[static_cast<std::size_t>(b.epoch)].insert(
        epochs[static_cast<std::size_t>(b.epoch)].end(), b.rows.begin(), b.rows.end());
    first_pass.push_back(b);
  }
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto& order = epochs[static_cast<std::size_t>(epoch)];
    CHECK(order == data::epoch_order(train, 11, epoch));
    std::sort(order.begin(), order.end());
    CHECK(order == train);
  }
  CHECK(stream->epoch() == 2);

  // seek() resumes exactly.
  stream->seek(4);
  Batch resumed = stream->next();
  CHECK(resumed.rows == first_pass[4].rows);
  CHECK(resumed.tokens == first_pass[4].tokens);
  CHECK(resumed.labels == first_pass[4].labels);
}

TEST_CASE("batch streams: each job its own order; masking reproducible by batch number",
          "[data][stream]") {
  auto data = byte_dataset(std::vector<std::string>(40, "some text to mask"), false);
  data::BatchStreamOptions a{
      .objective = spec::Objective::kMaskedLm, .batch_size = 40, .max_length = 32, .seed = 1};
  data::BatchStreamOptions b = a;
  b.seed = 2;
  auto job_a = data::BatchStream::create(data, rows_0_to(40), a);
  auto job_b = data::BatchStream::create(data, rows_0_to(40), b);
  REQUIRE(job_a);
  REQUIRE(job_b);
  Batch a0 = job_a->next(), b0 = job_b->next();
  CHECK(a0.rows != b0.rows);
  CHECK(a0.targets != b0.targets);
  Batch a1 = job_a->next();
  CHECK(a1.targets != a0.targets);  // a new batch number draws new masks
  job_a->seek(1);
  CHECK(job_a->next().tokens == a1.tokens);

  data::BatchStreamOptions in_order = a;
  in_order.shuffle = false;
  in_order.batch_size = 4;
  auto sequential = data::BatchStream::create(data, {7, 3, 9, 1, 2}, in_order);
  REQUIRE(sequential);
  CHECK(sequential->next().rows == std::vector<std::int64_t>{7, 3, 9, 1});
  CHECK(sequential->next().rows == std::vector<std::int64_t>{2});
}

TEST_CASE("batch stream options are checked", "[data][stream]") {
  auto unlabelled = byte_dataset({"a", "b"}, false);
  auto error = [&](data::BatchStreamOptions options, std::vector<std::int64_t> rows = {0, 1}) {
    auto stream = data::BatchStream::create(unlabelled, std::move(rows), options);
    REQUIRE_FALSE(stream);
    return stream.status().message();
  };
  CHECK(error({.objective = spec::Objective::kClassification, .max_length = 8}) ==
        "training.objective is classification but the dataset has no labels; list them under "
        "the dataset's labels");
  CHECK(error({.objective = spec::Objective::kCausalLm, .batch_size = 0, .max_length = 8}) ==
        "training.batch_size is 0; it must be at least 1");
  CHECK(error({.objective = spec::Objective::kCausalLm, .max_length = 2}) ==
        "training.max_length is 2; it must be at least 3 (two special tokens and one token of "
        "text)");
  CHECK(error({.objective = spec::Objective::kMaskedLm, .max_length = 8, .mask_probability = 0}) ==
        "training.mask_probability is 0; it must be in (0, 1]");
  CHECK(error({.objective = spec::Objective::kCausalLm, .max_length = 8}, {}) ==
        "the dataset has no rows to train on; add examples or lower training.validation_split");
  CHECK(error({.objective = spec::Objective::kCausalLm, .max_length = 8}, {0, 2}) ==
        "batch stream row 2 is outside the dataset's 2 rows");
}

TEST_CASE("batch options come from the training recipe", "[data][stream]") {
  spec::TrainingSpec training;
  training.objective = spec::Objective::kMaskedLm;
  training.batch_size = 16;
  training.mask_probability = 0.2f;
  training.seed = 99;
  spec::Architecture architecture;
  architecture.max_length = 64;
  auto options = data::batch_options_for(training, architecture);
  CHECK(options.max_length == 64);
  CHECK(options.batch_size == 16);
  CHECK(options.seed == 99);
  CHECK(options.mask_probability == 0.2f);
  training.max_length = 32;
  CHECK(data::batch_options_for(training, architecture).max_length == 32);
}

TEST_CASE("training data: text corpora are packed for language models", "[data][stream]") {
  test::TempFile corpus("corpus.txt", "abcdefghij\nklm\n");
  spec::Dataset text_set;
  text_set.name = "corpus";
  text_set.path = corpus.path();
  text_set.format = spec::DatasetFormat::kText;
  const text::ByteTokenizer bytes;

  auto causal = data::load_tokenized_dataset(text_set, bytes, spec::Objective::kCausalLm, 6);
  REQUIRE(causal);
  REQUIRE((*causal)->row_count() == 3);  // 15 bytes in windows of 5
  CHECK((*causal)->rows[2] == std::vector<std::int32_t>{'\n', 'k', 'l', 'm', '\n'});

  auto masked = data::load_tokenized_dataset(text_set, bytes, spec::Objective::kMaskedLm, 6);
  REQUIRE(masked);
  CHECK((*masked)->row_count() == 4);  // windows of 4

  auto lines = data::load_tokenized_dataset(text_set, bytes, spec::Objective::kClassification, 6);
  REQUIRE(lines);
  REQUIRE((*lines)->row_count() == 2);  // one row per line, not truncated here
  CHECK((*lines)->rows[0].size() == 10);
  CHECK_FALSE((*lines)->labelled());

  test::TempFile jsonl("train.jsonl", "{\"text\": \"abcdefghij\"}\n{\"text\": \"k\"}\n");
  spec::Dataset json_set = text_set;
  json_set.path = jsonl.path();
  json_set.format = spec::DatasetFormat::kJsonl;
  auto examples = data::load_tokenized_dataset(json_set, bytes, spec::Objective::kMaskedLm, 6);
  REQUIRE(examples);
  CHECK((*examples)->row_count() == 2);

  json_set.path = jsonl.path().parent_path() / "absent.jsonl";
  auto missing = data::load_tokenized_dataset(json_set, bytes, spec::Objective::kMaskedLm, 6);
  REQUIRE_FALSE(missing);
  CHECK(missing.status().code() == StatusCode::kNotFound);
}

TEST_CASE("prompt/completion rows: no loss on the prompt, the prompt cut first", "[data][batch]") {
  test::TempFile jsonl("sft.jsonl",
                       "{\"q\": \"ab\", \"a\": \"cd\"}\n"
                       "{\"q\": \"0123456\", \"a\": \"xy\"}\n"
                       "{\"q\": \"\", \"a\": \"0123456789\"}\n");
  spec::Dataset set;
  set.name = "sft";
  set.path = jsonl.path();
  set.format = spec::DatasetFormat::kJsonl;
  set.prompt_field = "q";
  set.completion_field = "a";
  set.label_field.clear();
  auto data =
      data::load_tokenized_dataset(set, text::ByteTokenizer(), spec::Objective::kCausalLm, 8);
  REQUIRE(data);
  // Each row is the prompt's tokens, then the completion's; the prompt's length is kept.
  CHECK((*data)->rows[0] == std::vector<std::int32_t>{'a', 'b', 'c', 'd'});
  CHECK((*data)->prompt_lengths == std::vector<std::int32_t>{2, 7, 0});
  Batch b =
      data::make_causal_lm_batch(**data, std::vector<std::int64_t>{0, 1, 2}, {.max_length = 8});
  // [BOS] a b c d: the targets a, b are the prompt's and take no loss; c, d and EOS do.
  CHECK(row(b, 0, b.tokens) ==
        std::vector<std::int32_t>{kCls, 'a', 'b', 'c', 'd', kPad, kPad, kPad});
  CHECK(row(b, 0, b.targets) == std::vector<std::int32_t>{kIgnoreIndex, kIgnoreIndex, 'c', 'd',
                                                          kSep, kIgnoreIndex, kIgnoreIndex,
                                                          kIgnoreIndex});
  // 9 content tokens for 7 places: the prompt loses its first two, the completion stays.
  CHECK(row(b, 1, b.tokens) == std::vector<std::int32_t>{kCls, '2', '3', '4', '5', '6', 'x', 'y'});
  CHECK(row(b, 1, b.targets) == std::vector<std::int32_t>{kIgnoreIndex, kIgnoreIndex, kIgnoreIndex,
                                                          kIgnoreIndex, kIgnoreIndex, 'x', 'y',
                                                          kSep});
  // No prompt: a completion too long is cut from its end, as any text.
  CHECK(row(b, 2, b.targets) == std::vector<std::int32_t>{'0', '1', '2', '3', '4', '5', '6', kSep});

  // CSV reads the same two columns.
  test::TempFile csv("sft.csv", "q,a,other\nab,cd,z\n");
  set.path = csv.path();
  set.format = spec::DatasetFormat::kCsv;
  auto from_csv =
      data::load_tokenized_dataset(set, text::ByteTokenizer(), spec::Objective::kCausalLm, 8);
  REQUIRE(from_csv);
  CHECK((*from_csv)->rows[0] == std::vector<std::int32_t>{'a', 'b', 'c', 'd'});
  CHECK((*from_csv)->prompt_lengths == std::vector<std::int32_t>{2});

  // Each problem names the file, line and spec key.
  test::TempFile bad("bad.jsonl", "{\"q\": \"ab\"}\n{\"q\": \"ab\", \"a\": 3}\n");
  set.path = bad.path();
  set.format = spec::DatasetFormat::kJsonl;
  const auto problems = data::dataset_problems(set, 10);
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0].message(), Catch::Contains("bad.jsonl:1: missing field 'a' "
                                                    "(datasets.sft.completion_field)"));
  CHECK_THAT(problems[1].message(), Catch::Contains("bad.jsonl:2: field 'a' is a number"));
  test::TempFile bad_csv("bad.csv", "q,other\nab,cd\n");
  set.path = bad_csv.path();
  set.format = spec::DatasetFormat::kCsv;
  CHECK_THAT(data::read_dataset(set).status().message(),
             Catch::Contains("no column 'a'") && Catch::Contains("datasets.sft.completion_field"));
}
