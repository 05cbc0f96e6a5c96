// `scion predict`: labels and class probabilities of stored classifiers, or, with
// --generate, the continuations of prompts by stored causal language models
// (cli/cmd_predict_generate.cpp). Both read their texts the same way
// (workbench/predict_input.h).
#pragma once

#include <string>
#include <vector>

#include "cli/global_options.h"
#include "runtime/evaluation/text_generator.h"
#include "workbench/predict_input.h"

namespace scion::cli {

struct PredictOptions {
  std::vector<std::string> models;
  workbench::PredictInputOptions input;
  bool check_assertions = false;
  int chunk_size = 64;  // texts (classification) or sequences (generation) at once
  bool generate = false;
  runtime::GenerationOptions generation;  // with --generate; its chunk_size is chunk_size
  // The generation options given on the command line, which need --generate.
  std::vector<std::string> generation_flags;
};

// Continues each prompt with each model and prints the completions (text or --json).
// Returns 0 or the error's exit code.
int generate_text(const GlobalOptions& global, const PredictOptions& options);

}  // namespace scion::cli
