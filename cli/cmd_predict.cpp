// `scion predict MODEL... --text T [--pair P] | --file F [--assert]`: stored head models'
// answers for each text or sentence pair, by task: a classifier's label and class
// probabilities, a regression head's values, a multi-label head's labels at its threshold
// and their probabilities, a token classifier's tag per word and the entities they spell; with
// --assert, the spec's model assertions for each model are checked on every prediction and their
// violations printed. Several models answer in one evaluation through the shared trunk (the trie of
// layer applications: what their ancestry has in common is computed once), as `scion test`
// evaluates the family. The texts come from workbench/predict_input.h (lines or JSONL, a file or
// standard input), the predictions from workbench/prediction.h; this file parses and prints. A text
// longer than a model reads is classified by its first tokens, with a warning.
// With --generate, causal language models continue the texts instead
// (cli/cmd_predict_generate.cpp); this file holds the options of both.
#include "cli/cmd_predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>
#include <map>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "runtime/metrics/entity_metrics.h"
#include "workbench/checked_workspace.h"
#include "workbench/prediction.h"

namespace scion::cli {
namespace {

// A token classifier's words with their tags and probabilities, and its entities.
void add_tags(const assertions::ModelOutput& o, nlohmann::json& json) {
  const std::vector<std::string> tags = assertions::predicted_tags(o);
  nlohmann::json words = nlohmann::json::array();
  for (std::size_t w = 0; w < o.words.size(); ++w) {
    const std::vector<float>& p = o.word_probabilities[w];
    words.push_back(
        {{"word", o.words[w]},
         {"tag", p.empty() ? nlohmann::json() : nlohmann::json(tags[w])},
         {"probability",
          p.empty() ? nlohmann::json() : nlohmann::json(*std::max_element(p.begin(), p.end()))}});
  }
  nlohmann::json entities = nlohmann::json::array();
  std::vector<std::string> read(tags.begin(), tags.end());
  for (std::string& t : read)
    if (t.empty()) t = "O";
  for (const auto& [type, first, last] : runtime::entities(read)) {
    std::vector<std::string> span(o.words.begin() + first, o.words.begin() + last + 1);
    entities.push_back({{"type", type},
                        {"text", fmt::format("{}", fmt::join(span, " "))},
                        {"start", first},
                        {"end", last}});
  }
  json["words"] = words;
  json["entities"] = entities;
}

nlohmann::json prediction_json(const workbench::Prediction& p, bool with_violations) {
  const assertions::ModelOutput& o = p.output;
  nlohmann::json probabilities = nlohmann::json::object();
  for (std::size_t k = 0; k < o.labels.size() && k < o.probabilities.size(); ++k)
    probabilities[o.labels[k]] = o.probabilities[k];
  nlohmann::json json = {
      {"model", p.model}, {"text", p.text}, {"task", spec::head_task_name(o.task)}};
  if (p.pair) json["pair"] = *p.pair;
  switch (o.task) {
    case spec::HeadTask::kClassification:
      json["label"] = assertions::predicted_label(o);
      json["confidence"] = assertions::confidence(o);
      json["probabilities"] = probabilities;
      break;
    case spec::HeadTask::kMultiLabel:
      json["labels"] = assertions::predicted_labels(o);
      json["threshold"] = o.threshold;
      json["probabilities"] = probabilities;
      break;
    case spec::HeadTask::kRegression: {
      nlohmann::json values = nlohmann::json::object();
      for (std::size_t k = 0; k < o.labels.size() && k < o.values.size(); ++k)
        values[o.labels[k]] = o.values[k];
      json["value"] = o.values.empty() ? nlohmann::json() : nlohmann::json(o.values.front());
      json["values"] = values;
      break;
    }
    case spec::HeadTask::kTokenClassification:
      add_tags(o, json);
      break;
  }
  if (with_violations) {
    nlohmann::json v = nlohmann::json::array();
    for (const workbench::PredictionViolation& f : p.violations) {
      nlohmann::json item = {{"assertion", f.assertion}, {"severity", f.severity}};
      if (!f.perturbed.empty()) item["perturbed"] = f.perturbed;
      v.push_back(item);
    }
    json["violations"] = v;
  }
  return json;
}

// What a prediction says after its answer, in parentheses: each label's probability, a
// regression head's named values, a token classifier's entities.
std::string prediction_details(const assertions::ModelOutput& o) {
  std::vector<std::string> parts;
  if (o.task == spec::HeadTask::kRegression) {
    for (std::size_t k = 0; k < o.labels.size() && k < o.values.size(); ++k)
      parts.push_back(fmt::format("{} {:.4f}", o.labels[k], o.values[k]));
  } else if (o.task == spec::HeadTask::kTokenClassification) {
    std::vector<std::string> tags = assertions::predicted_tags(o);
    for (std::string& t : tags)
      if (t.empty()) t = "O";
    for (const auto& [type, first, last] : runtime::entities(tags)) {
      std::vector<std::string> span(o.words.begin() + first, o.words.begin() + last + 1);
      parts.push_back(fmt::format("{}: {}", type, fmt::join(span, " ")));
    }
    if (parts.empty()) parts.push_back("no entities");
  } else {
    for (std::size_t k = 0; k < o.labels.size() && k < o.probabilities.size(); ++k)
      parts.push_back(fmt::format("{} {:.3f}", o.labels[k], o.probabilities[k]));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// "<lead>positive  (negative 0.081, positive 0.919)<tail>", and below it each violation,
// indented by `indent`.
void print_prediction(const std::string& lead, const std::string& tail, const std::string& indent,
                      const workbench::Prediction& p, bool tty) {
  const assertions::ModelOutput& o = p.output;
  std::cout << lead << paint(terminal_text(assertions::prediction(o)), Color::kBold, tty) << "  ("
            << terminal_text(prediction_details(o)) << ")" << tail << "\n";
  for (const workbench::PredictionViolation& f : p.violations)
    std::cout << indent << paint("violation", Color::kYellow, tty) << " " << f.assertion
              << fmt::format(" (severity {:.3f})", f.severity)
              << (f.perturbed.empty() ? "" : " on \"" + terminal_text(f.perturbed) + "\"") << "\n";
}

// Warns about each text longer than a model reads: it is classified by its first tokens.
void warn_truncated(const std::vector<workbench::Truncation>& truncated) {
  for (const workbench::Truncation& t : truncated) {
    std::vector<std::string> readers;
    for (const auto& [model, kept] : t.readers)
      readers.push_back(fmt::format("'{}' reads its first {}", model, kept));
    print_warning(
        fmt::format("{} is {} tokens, longer than the model reads: {}; the rest is ignored",
                    t.origin, t.tokens, fmt::join(readers, ", ")));
  }
}

void print_predictions(const workbench::Predictions& result, bool check_assertions) {
  const bool tty = stdout_is_tty();
  const bool several = result.models.size() > 1;
  std::size_t width = 0;
  for (const std::string& model : result.models) width = std::max(width, model.size());
  for (std::size_t i = 0; i < result.predictions.size(); ++i) {
    const workbench::Prediction& p = result.predictions[i];
    // One model: a line per text. Several: the text, then a line per model.
    const std::string input = p.pair ? p.text + "  ||  " + *p.pair : p.text;
    if (several && i % result.models.size() == 0) std::cout << terminal_text(input) << "\n";
    if (several)
      print_prediction(fmt::format("  {:<{}}  ", p.model, width), "", std::string(width + 6, ' '),
                       p, tty);
    else
      print_prediction("", "  " + terminal_text(input), "  ", p, tty);
  }
  if (check_assertions)
    std::cout << fmt::format("{} assertion violation{} ({} assertion{} checked)\n",
                             result.violations, result.violations == 1 ? "" : "s", result.checks,
                             result.checks == 1 ? "" : "s");
}

int predict(const GlobalOptions& global, const PredictOptions& options) {
  if (options.generate) {
    if (options.check_assertions)
      return fail(invalid_argument(
          "--assert checks classifiers' predictions; it does not apply with --generate"));
    if (!options.input.pairs.empty() || !options.input.pair_field.empty())
      return fail(invalid_argument(
          "--pair and --pair-field give sentence pairs to head models; they do not apply with "
          "--generate"));
    return generate_text(global, options);
  }
  if (!options.generation_flags.empty())
    return fail(invalid_argument(fmt::format(
        "{} applies only with --generate (continuing prompts with a causal language model)",
        fmt::join(options.generation_flags, ", "))));
  if (options.input.file == "-" && global.spec_file == workbench::kStdinSpec)
    return fail(
        invalid_argument("-f - and --file - both read standard input; give one of them a file"));
  auto texts = workbench::read_predict_texts(options.input, std::cin);
  if (!texts) return fail(texts.status());
  if (texts->empty())
    return fail(invalid_argument("nothing to predict: give --text TEXT or --file FILE"));
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  auto context = workbench::Context::open(context_options(global, workbench::StoreAccess::kRead));
  if (!context) return fail(context.status());

  const workbench::PredictRequest request{.models = options.models,
                                          .texts = std::move(*texts),
                                          .check_assertions = options.check_assertions,
                                          .chunk_size = options.chunk_size};
  auto backend = (*context)->backend();
  if (!backend) return fail(backend.status());
  std::vector<std::string> notes;
  auto result = workbench::predict_versions(*ws, (*context)->store(), **backend, request, notes);
  for (const std::string& note : notes) print_note(note);
  if (!result) return fail(result.status());
  if (Status s = (*context)->check_backends("scion predict"); !s.is_ok()) return fail(s);
  if (global.verbosity >= 0) warn_truncated(result->truncated);

  if (global.json) {
    nlohmann::json predictions = nlohmann::json::array();
    for (const workbench::Prediction& p : result->predictions)
      predictions.push_back(prediction_json(p, options.check_assertions));
    print_json({{"models", result->models}, {"predictions", predictions}});
  } else {
    print_predictions(*result, options.check_assertions);
  }
  return kExitOk;
}

constexpr const char* kGenerationFlags[] = {"--max-new-tokens", "--temperature", "--top-k",
                                            "--top-p",          "--seed",        "--stop"};

// --seed takes 0 to 2^64-1, written in digits. CLI11 alone would read "-1" and
// "18446744073709551616" as 2^64-1 and "" as 0: a seed the user did not give.
CLI::Validator seed_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (!text.empty() && ec == std::errc() && end == text.data() + text.size()) return "";
        return "expected a whole number from 0 to " +
               std::to_string(std::numeric_limits<std::uint64_t>::max()) + ", got '" + text + "'";
      },
      "INT in [0 - 2^64-1]");
}

void add_generation_options(CLI::App& cmd, PredictOptions& options) {
  runtime::GenerationOptions& g = options.generation;
  cmd.add_flag("--generate", options.generate,
               "Continue each text with causal language models instead of classifying it");
  cmd.add_option("--max-new-tokens", g.max_new_tokens, "Most tokens to generate (default 32)")
      ->check(whole_number(1, 1 << 20));
  cmd.add_option("--temperature", g.sampling.temperature,
                 "0: greedy (the default); above 0: sample, the logits divided by it");
  cmd.add_option("--top-k", g.sampling.top_k,
                 "Sample from the K most likely tokens only (default 0: all)");
  cmd.add_option("--top-p", g.sampling.top_p,
                 "Sample from the most likely tokens holding this probability mass (default 1)");
  cmd.add_option("--seed", g.sampling.seed, "The seed of sampling (default 0)")
      ->check(seed_number());
  cmd.add_option("--stop", g.stop, "End a completion where this text appears (repeatable)")
      ->option_text("TEXT");
}

}  // namespace

void add_predict_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  static PredictOptions options;
  CLI::App* cmd = app.add_subcommand(
      "predict", "Labels, values or tags of trained head models (any task), per text or pair");
  cmd->add_option("MODEL", options.models,
                  "The models (one shared pass; MODEL@N or MODEL@<hash>: a stored version)")
      ->required();
  cmd->add_option("--text", options.input.texts, "A text to classify (repeatable)");
  cmd->add_option("--pair", options.input.pairs,
                  "The second text of a sentence pair, one per --text (repeatable)");
  cmd->add_option("--file", options.input.file,
                  "A file with one text per line, or JSONL records; - reads stdin")
      ->option_text("FILE");
  cmd->add_option("--format", options.input.format,
                  "lines | jsonl (default: jsonl for *.jsonl, else lines)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, workbench::PredictFormat>{
          {"lines", workbench::PredictFormat::kLines},
          {"jsonl", workbench::PredictFormat::kJsonl}}));
  cmd->add_option("--text-field", options.input.text_field,
                  "The JSONL field holding the text (default text)")
      ->option_text("NAME");
  cmd->add_option("--pair-field", options.input.pair_field,
                  "The JSONL field holding a sentence pair's second text")
      ->option_text("NAME");
  cmd->add_flag("--assert", options.check_assertions,
                "Check the spec's model assertions on each prediction");
  cmd->add_option("--chunk-size", options.chunk_size,
                  "Texts per forward pass, or sequences generated at once (default 64)")
      ->check(whole_number(1, 65536));
  add_generation_options(*cmd, options);
  cmd->footer(
      "A text longer than a model reads is classified by its first tokens, with a warning;\n"
      "an empty text is an error (exit 2). --generate continues each text (a prompt) with\n"
      "causal language models instead: greedy by default, sampled with --temperature.\n"
      "Example: scion -C examples/sentiment predict review-lora --text \"a lovely film\" --assert\n"
      "         jq -c '{text: .review}' reviews.jsonl | scion predict review-lora --file - "
      "--format jsonl\n"
      "         scion -C examples/sentiment predict base review-lora product-lora --text \"the "
      "kettle was solid\"\n"
      "         scion -C examples/generation predict gpt2 gpt2-lora --generate --text \"the cat\" "
      "--max-new-tokens 12");
  cmd->callback([cmd, &global, &action] {
    options.generation_flags.clear();
    for (const char* flag : kGenerationFlags)
      if (cmd->get_option(flag)->count() > 0) options.generation_flags.push_back(flag);
    action = [&global] { return predict(global, options); };
  });
}

}  // namespace scion::cli
