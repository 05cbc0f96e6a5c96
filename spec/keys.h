// The words of scion.yaml: for each mapping the keys it may hold, and for each closed value
// the words it may take.
//
// The loader checks keys and values against these tables (unknown keys get "did you mean")
// and `scion schema` builds its JSON Schema from the same tables (spec/json_schema.h), so an
// editor's completion and the loader cannot disagree about what a key is called. A new key
// is added here, read by its loader, given a type in spec/json_schema.cpp (a unit test fails
// until it has one) and documented in docs/spec.md.
#pragma once

#include <string_view>
#include <vector>

#include "spec/spec_reader.h"
#include "spec/workspace.h"

namespace scion::spec::keys {

inline constexpr std::string_view kSections[] = {"datasets", "models",     "share",
                                                 "tests",    "assertions", "lexicons"};

inline constexpr std::string_view kDataset[] = {
    "path",   "format",     "text_field",   "text_pair_field", "label_field",
    "labels", "label_type", "prompt_field", "completion_field"};
inline constexpr Choice<LabelType> kLabelTypes[] = {{"single", LabelType::kSingle},
                                                    {"multi", LabelType::kMulti},
                                                    {"number", LabelType::kNumber},
                                                    {"tags", LabelType::kTags}};
inline constexpr Choice<DatasetFormat> kDatasetFormats[] = {{"jsonl", DatasetFormat::kJsonl},
                                                            {"csv", DatasetFormat::kCsv},
                                                            {"tsv", DatasetFormat::kTsv},
                                                            {"text", DatasetFormat::kText}};

inline constexpr std::string_view kModel[] = {"architecture", "import",   "from", "adapt",
                                              "freeze",       "unfreeze", "train"};
inline constexpr std::string_view kArchitecture[] = {
    "type",      "layers",     "width", "heads",   "ffn_width",     "vocab_size",
    "tokenizer", "max_length", "norm",  "dropout", "tie_embeddings"};
inline constexpr Choice<ArchitectureKind> kArchitectureKinds[] = {
    {"encoder", ArchitectureKind::kEncoder}, {"decoder", ArchitectureKind::kDecoder}};
inline constexpr Choice<NormPlacement> kNorms[] = {{"pre", NormPlacement::kPre},
                                                   {"post", NormPlacement::kPost}};
inline constexpr Choice<TokenizerKind> kTokenizers[] = {{"byte", TokenizerKind::kByte},
                                                        {"wordpiece", TokenizerKind::kWordPiece},
                                                        {"bpe", TokenizerKind::kBpe}};

// `adapt`: one key per built-in method, each with its own settings; the methods registered
// as units (spec/adaptation_method.h) add theirs.
inline constexpr std::string_view kMethods[] = {"prefix", "prompt", "head", "bitfit", "full"};
// Every key `adapt` may hold: kMethods, then the registered methods' in registration order.
inline std::vector<std::string_view> method_keys() {
  std::vector<std::string_view> out(std::begin(kMethods), std::end(kMethods));
  for (const MethodBlock* block : method_blocks()) out.push_back(block->key());
  return out;
}
inline constexpr std::string_view kPrefix[] = {"virtual_tokens", "layers", "reparam_hidden"};
inline constexpr std::string_view kPrompt[] = {"virtual_tokens", "init", "text"};
inline constexpr std::string_view kHead[] = {"task", "labels", "pooling", "threshold"};
inline constexpr Choice<PromptInit> kPromptInits[] = {
    {"random", PromptInit::kRandom}, {"text", PromptInit::kText}, {"vocab", PromptInit::kVocab}};
inline constexpr Choice<Pooling> kPoolings[] = {
    {"cls", Pooling::kCls}, {"mean", Pooling::kMean}, {"last", Pooling::kLast}};
inline constexpr Choice<HeadTask> kTasks[] = {
    {"classification", HeadTask::kClassification},
    {"regression", HeadTask::kRegression},
    {"multi_label", HeadTask::kMultiLabel},
    {"token_classification", HeadTask::kTokenClassification}};

// `train`: the recipe.
inline constexpr std::string_view kTrain[] = {"data",
                                              "objective",
                                              "steps",
                                              "epochs",
                                              "batch_size",
                                              "grad_accumulation",
                                              "max_length",
                                              "validation_split",
                                              "validation",
                                              "eval_every",
                                              "mask_probability",
                                              "optimizer",
                                              "schedule",
                                              "early_stopping",
                                              "keep_best",
                                              "class_weights",
                                              "seed",
                                              "precision",
                                              "recompute"};
inline constexpr std::string_view kOptimizer[] = {"type", "lr",       "weight_decay", "betas",
                                                  "eps",  "momentum", "grad_clip"};
inline constexpr std::string_view kSchedule[] = {"type", "warmup_steps"};
inline constexpr std::string_view kEarlyStopping[] = {"metric", "patience"};
inline constexpr Choice<Objective> kObjectives[] = {{"mlm", Objective::kMaskedLm},
                                                    {"clm", Objective::kCausalLm},
                                                    {"classification", Objective::kClassification}};
inline constexpr Choice<OptimizerKind> kOptimizers[] = {{"adamw", OptimizerKind::kAdamW},
                                                        {"sgd", OptimizerKind::kSgd}};
inline constexpr Choice<ScheduleKind> kSchedules[] = {{"constant", ScheduleKind::kConstant},
                                                      {"linear", ScheduleKind::kLinear},
                                                      {"cosine", ScheduleKind::kCosine}};
inline constexpr Choice<Precision> kPrecisions[] = {{"fp32", Precision::kF32},
                                                    {"bf16", Precision::kBF16}};
// Every validation metric of any task (spec/metric_names.h says which a task records).
inline constexpr std::string_view kMetrics[] = {"val_loss",
                                                "val_accuracy",
                                                "val_f1",
                                                "val_micro_f1",
                                                "val_weighted_f1",
                                                "val_mcc",
                                                "val_ece",
                                                "val_auc",
                                                "val_rmse",
                                                "val_mae",
                                                "val_pearson",
                                                "val_spearman",
                                                "val_subset_accuracy",
                                                "val_precision",
                                                "val_recall"};

inline constexpr std::string_view kShare[] = {"models", "modules"};

// Tests and assertions: the keys the loader reads itself. The rest of each mapping is the
// body that assertions/ interprets and checks (assertions/behavioural_test.h).
inline constexpr std::string_view kTest[] = {"type", "capability", "models", "max_failure_rate"};
inline constexpr std::string_view kTestTypes[] = {"mft", "inv", "dir"};
inline constexpr std::string_view kAssertion[] = {"kind", "models"};
inline constexpr std::string_view kAssertionKinds[] = {
    "low_confidence", "parent_disagreement", "perturbation_flip", "allowed_outputs", "expression"};

}  // namespace scion::spec::keys
