// `scion predict MODEL... --generate`: stored causal language models continue each prompt
// (workbench/generation.h). This file reads the prompts, calls the workbench and prints:
// per prompt, each model's completion as a quoted string (so that newlines and trailing
// spaces show), with why it ended and how many tokens it took; --json gives every field.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/cmd_predict.h"
#include "cli/command_context.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "workbench/generation.h"

namespace scion::cli {
namespace {

nlohmann::json generation_json(const workbench::GeneratedText& g,
                               const std::vector<workbench::PredictText>& prompts) {
  const runtime::Generation& out = g.generation;
  return {{"model", g.model},
          {"prompt", prompts[g.prompt].text},
          {"completion", out.text},
          {"finish_reason", runtime::finish_reason_name(out.finish)},
          {"prompt_token_ids", out.prompt_tokens},
          {"token_ids", out.tokens}};
}

nlohmann::json options_json(const runtime::GenerationOptions& o) {
  return {{"max_new_tokens", o.max_new_tokens},
          {"temperature", o.sampling.temperature},
          {"top_k", o.sampling.top_k},
          {"top_p", o.sampling.top_p},
          {"seed", o.sampling.seed},
          {"stop", o.stop}};
}

// "  model  "completion"  (eos, 5 tokens)"
void print_generations(const workbench::Generations& result,
                       const std::vector<workbench::PredictText>& prompts) {
  const bool tty = stdout_is_tty();
  std::size_t width = 0;
  for (const std::string& model : result.models) width = std::max(width, model.size());
  for (std::size_t i = 0; i < result.generations.size(); ++i) {
    const workbench::GeneratedText& g = result.generations[i];
    if (i % result.models.size() == 0)
      std::cout << paint(nlohmann::json(prompts[g.prompt].text).dump(), Color::kDim, tty) << "\n";
    const runtime::Generation& out = g.generation;
    std::cout << fmt::format("  {:<{}}  ", g.model, width)
              << paint(nlohmann::json(out.text).dump(), Color::kBold, tty)
              << paint(fmt::format("  ({}, {} token{})", runtime::finish_reason_name(out.finish),
                                   out.tokens.size(), out.tokens.size() == 1 ? "" : "s"),
                       Color::kDim, tty)
              << "\n";
  }
}

}  // namespace

int generate_text(const GlobalOptions& global, const PredictOptions& options) {
  if (options.input.file == "-" && global.spec_file == workbench::kStdinSpec)
    return fail(
        invalid_argument("-f - and --file - both read standard input; give one of them a file"));
  auto prompts = workbench::read_predict_texts(options.input, std::cin);
  if (!prompts) return fail(prompts.status());
  if (prompts->empty())
    return fail(invalid_argument("nothing to continue: give --text PROMPT or --file FILE"));
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  workbench::GenerateRequest request{
      .models = options.models, .prompts = std::move(*prompts), .options = options.generation};
  request.options.chunk_size = options.chunk_size;
  if (Status s = runtime::check_generation(request.options); !s.is_ok()) return fail(s);
  auto context = workbench::Context::open(context_options(global, workbench::StoreAccess::kRead));
  if (!context) return fail(context.status());
  auto backend = (*context)->backend();
  if (!backend) return fail(backend.status());
  auto result = workbench::generate_versions(*ws, (*context)->store(), **backend, request);
  if (!result) return fail(result.status());
  if (Status s = (*context)->check_backends("scion predict --generate"); !s.is_ok()) return fail(s);
  if (global.json) {
    nlohmann::json generations = nlohmann::json::array();
    for (const workbench::GeneratedText& g : result->generations)
      generations.push_back(generation_json(g, request.prompts));
    print_json({{"models", result->models},
                {"options", options_json(request.options)},
                {"generations", generations}});
  } else {
    print_generations(*result, request.prompts);
  }
  return kExitOk;
}

}  // namespace scion::cli
