// The files of `scion init` (workbench/scaffold.h).
#include "workbench/scaffold.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <span>
#include <system_error>

#include "lineage/env.h"
#include "spec/json_schema.h"

namespace scion::workbench {
namespace {

constexpr const char* kSpecName = "scion.yaml";
constexpr const char* kSchemaName = "scion.schema.json";
constexpr const char* kDataName = "data/reviews.jsonl";

// Every key is explained where it first appears; docs/spec.md has the rest.
constexpr const char* kSpec = R"(# yaml-language-server: $schema=scion.schema.json
# A scion workspace: one small trunk and the models adapted from it. Start here:
#   scion validate        check this file and its data
#   scion run             train every model (a few seconds)
#   scion test            run the behavioural tests and assertions
#   scion lineage tree    the family and how each model was made
# Every key is documented in docs/spec.md; `scion schema` prints the JSON Schema an
# editor uses (through the modeline above) to complete and check keys as you type.

datasets:
  reviews:                       # a labelled data file; paths are relative to this file
    path: data/reviews.jsonl     # one JSON object per line: {"text": ..., "label": ...}
    labels: [negative, positive]

models:
  trunk:                         # the base model: a tiny byte-level encoder from scratch
    architecture:
      type: encoder
      layers: 1
      width: 32
      heads: 2
      ffn_width: 64
      max_length: 32
      tokenizer: byte
    train:                       # trained as a classifier (a CLS head) on the reviews
      data: reviews
      objective: classification
      epochs: 3
      batch_size: 16
      optimizer: {type: adamw, lr: 3.0e-3}
      seed: 1

  trunk-lora:                    # a descendant: low-rank updates to two projections;
    from: trunk                  # the trunk's weights and head stay frozen and shared
    adapt:
      lora: {rank: 4, alpha: 8, targets: [q, v]}
    train: &adapt                # one recipe, reused below with a YAML anchor
      data: reviews
      epochs: 2
      batch_size: 16
      optimizer: {type: adamw, lr: 3.0e-3}
      seed: 2

  trunk-bitfit:                  # another method on the same trunk: only biases train
    from: trunk
    adapt:
      bitfit: true
    train: *adapt

lexicons:                        # word lists that test templates draw from
  dish: [soup, pasta, coffee, bread]
  praise: [great, tasty, lovely, fresh]

tests:
  praise-is-positive:            # a minimum functionality test (mft): every filled-in
    type: mft                    # template must get the expected label
    capability: Vocabulary
    template: "the {dish} was {praise}."
    expect: {label: positive}
    max_failure_rate: 0.25       # the test fails above this share of failing cases

assertions:
  confident:                     # a runtime check on every prediction the tests make
    kind: low_confidence
    threshold: 0.55
)";

// Dishes and words for the dataset: each dish with each word, so every model can learn the
// words apart from the dishes.
constexpr const char* kDishes[] = {"soup", "pasta", "coffee", "bread", "salad", "cake"};
constexpr const char* kPositive[] = {"great", "tasty", "lovely", "fresh", "good"};
constexpr const char* kNegative[] = {"awful", "bland", "stale", "cold", "bad"};

std::string dataset_text() {
  std::string out;
  for (const char* dish : kDishes)
    for (std::size_t i = 0; i < std::size(kPositive); ++i) {
      out += fmt::format(R"({{"text": "the {} was {}.", "label": "positive"}})"
                         "\n",
                         dish, kPositive[i]);
      out += fmt::format(R"({{"text": "the {} was {}.", "label": "negative"}})"
                         "\n",
                         dish, kNegative[i]);
    }
  return out;
}

// Through the store's write guard (lineage::write_file_atomically): a link planted under
// the name is replaced, never written through.
Status write_text(const std::filesystem::path& path, const std::string& text) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()),
                                         text.size());
  Status written = lineage::write_file_atomically(lineage::default_env(), path,
                                                  std::span(&bytes, 1));
  if (!written)
    return io_error(fmt::format("{}; check the folder's permissions and free space",
                                written.message()));
  return Status::ok();
}

}  // namespace

Result<std::vector<ScaffoldedFile>> scaffold_workspace(const std::filesystem::path& dir) {
  const std::pair<const char*, std::string> files[] = {
      {kSpecName, kSpec},
      {kSchemaName, spec::workspace_json_schema().dump(2) + "\n"},
      {kDataName, dataset_text()},
  };
  std::vector<std::string> existing;
  for (const auto& [name, text] : files) {
    std::error_code ec;
    if (std::filesystem::exists(dir / name, ec) || ec) existing.push_back((dir / name).string());
  }
  if (!existing.empty())
    return invalid_argument(
        fmt::format("'{}' already {}; scion init never replaces files: choose an empty folder "
                    "(scion init DIR) or move {} away",
                    fmt::join(existing, "', '"), existing.size() == 1 ? "exists" : "exist",
        existing.size() == 1 ? "it" : "them"));
  std::error_code ec;
  std::filesystem::create_directories(dir / "data", ec);
  if (ec)
    return io_error(
        fmt::format("cannot create the folder '{}': {}", (dir / "data").string(), ec.message()));
  std::vector<ScaffoldedFile> written;
  for (const auto& [name, text] : files) {
    SCION_RETURN_IF_ERROR(write_text(dir / name, text));
    written.push_back({name, text.size()});
  }
  return written;
}

}  // namespace scion::workbench
