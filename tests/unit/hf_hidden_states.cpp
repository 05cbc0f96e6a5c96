// Prints what scion computes for a Hugging Face BERT folder, for tests that compare with
// transformers at run time (tests/cli/test_hf_minilm.py): the token ids of each text
// (framed [CLS] … [SEP]) and its [CLS] hidden state.
//
// Usage: hf_hidden_states FOLDER < texts.json   (a JSON list of strings)
// Output: {"ids": [[...], ...], "cls_hidden": [[...], ...]} on stdout.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tests/unit/hf_model_support.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FOLDER < texts.json\n", argv[0]);
    return 2;
  }
  try {
    const auto texts = nlohmann::json::parse(std::cin).get<std::vector<std::string>>();
    scion::test::HfBert bert(argv[1], /*labels=*/1);
    const auto rows = bert.framed(texts);
    const std::vector<float> hidden = bert.run(rows, scion::test::HfBert::Output::kClsHidden);
    const std::size_t C = static_cast<std::size_t>(bert.architecture().width);
    nlohmann::json out = {{"ids", rows}, {"cls_hidden", nlohmann::json::array()}};
    for (std::size_t b = 0; b < rows.size(); ++b)
      out["cls_hidden"].push_back(
          std::vector<float>(hidden.begin() + static_cast<std::ptrdiff_t>(b * C),
                             hidden.begin() + static_cast<std::ptrdiff_t>((b + 1) * C)));
    std::cout << out.dump() << '\n';
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hf_hidden_states: %s\n", e.what());
    return 3;
  }
  return 0;
}
