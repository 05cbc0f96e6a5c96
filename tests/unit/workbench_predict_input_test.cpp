// The texts `scion predict` reads: --text values, lines or JSONL records of a file or of
// standard input, each named by where it came from; empty texts and bad records refused.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "workbench/predict_input.h"

using namespace scion;
using namespace scion::workbench;

namespace {

std::filesystem::path write_file(const std::string& name, const std::string& contents) {
  const auto dir = std::filesystem::temp_directory_path() / "scion-predict-input-test";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << contents;
  return path;
}

std::vector<PredictText> read_ok(const PredictInputOptions& options,
                                 const std::string& standard_input = "") {
  std::istringstream in(standard_input);
  auto texts = read_predict_texts(options, in);
  INFO((texts.is_ok() ? std::string() : texts.status().message()));
  REQUIRE(texts.is_ok());
  return *texts;
}

std::string read_error(const PredictInputOptions& options, const std::string& standard_input = "") {
  std::istringstream in(standard_input);
  auto texts = read_predict_texts(options, in);
  REQUIRE_FALSE(texts.is_ok());
  CHECK((texts.status().code() == StatusCode::kInvalidArgument ||
         texts.status().code() == StatusCode::kNotFound));
  return texts.status().message();
}

}  // namespace

TEST_CASE("--text values come first, then the file's lines, blank lines skipped") {
  const auto file = write_file("lines.txt", "first line\n\n  \nsecond line\r\n");
  const auto texts = read_ok({.texts = {"a text"}, .file = file.string()});
  REQUIRE(texts.size() == 3);
  CHECK(texts[0].text == "a text");
  CHECK(texts[0].origin == "--text 1");
  CHECK(texts[1].text == "first line");
  CHECK(texts[1].origin == file.string() + ":1");
  CHECK(texts[2].text == "second line");
  CHECK(texts[2].origin == file.string() + ":4");
}

TEST_CASE("--file - reads standard input, as lines or, with --format jsonl, as records") {
  auto texts = read_ok({.file = "-"}, "one\ntwo\n");
  REQUIRE(texts.size() == 2);
  CHECK(texts[1].text == "two");
  CHECK(texts[1].origin == "stdin:2");
  texts = read_ok({.file = "-", .format = PredictFormat::kJsonl, .text_field = "review"},
                  "{\"review\": \"a fine film\", \"stars\": 4}\n");
  REQUIRE(texts.size() == 1);
  CHECK(texts[0].text == "a fine film");
}

TEST_CASE("a .jsonl file is read as records; its text field defaults to text") {
  const auto file =
      write_file("reviews.jsonl", "{\"text\": \"good\"}\n\n{\"text\": \"bad\", \"label\": 0}\n");
  const auto texts = read_ok({.file = file.string()});
  REQUIRE(texts.size() == 2);
  CHECK(texts[1].text == "bad");
  CHECK(texts[1].origin == file.string() + ":3");
  // The same file read as lines gives the JSON itself.
  CHECK(read_ok({.file = file.string(), .format = PredictFormat::kLines})[0].text ==
        "{\"text\": \"good\"}");
}

TEST_CASE("empty texts and bad records are errors that say where") {
  CHECK_THAT(read_error({.texts = {"fine", "  "}}),
             Catch::StartsWith("--text 2: the text is empty"));
  CHECK_THAT(read_error({.texts = {""}}), Catch::StartsWith("--text 1: the text is empty"));
  const auto empty = write_file("empty-text.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"\"}\n");
  CHECK_THAT(read_error({.file = empty.string()}),
             Catch::StartsWith(empty.string() + ":2: the text is empty"));
  const auto missing = write_file("missing.jsonl", "{\"review\": \"ok\", \"stars\": 3}\n");
  CHECK_THAT(read_error({.file = missing.string()}),
             Catch::Contains(":1: no field 'text' (the record has: review, stars)") &&
                 Catch::Contains("--text-field"));
  const auto broken = write_file("broken.jsonl", "{\"text\": \"ok\"}\n{\"text\": \n");
  CHECK_THAT(read_error({.file = broken.string()}),
             Catch::Contains(":2:") && Catch::Contains("not valid JSON"));
  const auto number = write_file("number.jsonl", "{\"text\": 5}\n");
  CHECK_THAT(read_error({.file = number.string()}),
             Catch::Contains("field 'text' is a number, expected a string"));
  CHECK_THAT(read_error({.file = "/nonexistent/texts.txt"}), Catch::Contains("no such file"));
  CHECK_THAT(read_error({.file = "-", .text_field = "review"}),
             Catch::Contains("--text-field") && Catch::Contains("--format jsonl"));
  CHECK_THAT(read_error({.texts = {"x"}, .text_field = "review"}), Catch::Contains("--text-field"));
}
