// The `train` recipe of a model: data, objective, length, optimizer, schedule.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "spec/keys.h"
#include "spec/loader_parts.h"

namespace scion::spec::detail {
namespace {

constexpr int kMaxCount = 1 << 30;

void load_optimizer(SpecReader& r, const YamlNode& node, const std::string& path,
                    OptimizerSpec& o) {
  if (!r.expect_map(node, path)) return;
  r.check_keys(node, path, keys::kOptimizer);
  r.read_choice<OptimizerKind>(find(node, "type"), join_path(path, "type"), keys::kOptimizers,
                               o.kind, "optimizer");
  r.read_float(find(node, "lr"), join_path(path, "lr"), o.lr, 0, true, 10, false,
               "a learning rate greater than 0 and at most 10");
  r.read_float(find(node, "weight_decay"), join_path(path, "weight_decay"), o.weight_decay, 0,
               false, 10, false, "a number from 0 to 10");
  if (const YamlNode* betas = find(node, "betas")) {
    const std::string bpath = join_path(path, "betas");
    if (!betas->is_sequence() || betas->items.size() != 2) {
      r.error(
          *betas, bpath,
          fmt::format("expected a list of two numbers [beta1, beta2], got {}", describe(*betas)));
    } else {
      const std::string expected = "a number from 0 to below 1";
      r.read_float(betas->items[0].get(), index_path(bpath, 0), o.beta1, 0, false, 1, true,
                   expected);
      r.read_float(betas->items[1].get(), index_path(bpath, 1), o.beta2, 0, false, 1, true,
                   expected);
    }
  }
  r.read_float(find(node, "eps"), join_path(path, "eps"), o.eps, 0, true, 1, false,
               "a number greater than 0 and at most 1");
  r.read_float(find(node, "momentum"), join_path(path, "momentum"), o.momentum, 0, false, 1, true,
               "a number from 0 to below 1");
  r.read_float(find(node, "grad_clip"), join_path(path, "grad_clip"), o.grad_clip, 0, false, 1e6,
               false, "a number of at least 0 (0: no clipping)");
  const char* sgd_only = "momentum";
  const YamlNode* misplaced = o.kind == OptimizerKind::kAdamW ? find(node, sgd_only) : nullptr;
  if (misplaced)
    r.error(*misplaced, join_path(path, sgd_only), "'momentum' applies only to type: sgd");
  for (std::string_view adam_only : {"betas", "eps"})
    if (const YamlNode* n = o.kind == OptimizerKind::kSgd ? find(node, adam_only) : nullptr)
      r.error(*n, join_path(path, adam_only),
              fmt::format("'{}' applies only to type: adamw", adam_only));
}

void load_schedule(SpecReader& r, const YamlNode& node, const std::string& path, ScheduleSpec& s) {
  if (!r.expect_map(node, path)) return;
  r.check_keys(node, path, keys::kSchedule);
  r.read_choice<ScheduleKind>(find(node, "type"), join_path(path, "type"), keys::kSchedules, s.kind,
                              "schedule");
  r.read_int(find(node, "warmup_steps"), join_path(path, "warmup_steps"), s.warmup_steps, 0,
             kMaxCount, "an integer of at least 0");
}

// A validation metric's name; whether the model's task records it is checked once the
// task is known (load_models.cpp).
void read_metric(SpecReader& r, const YamlNode* node, const std::string& path, std::string& out) {
  std::string word;
  if (!node || !r.read_string(node, path, word)) return;
  for (std::string_view known : keys::kMetrics)
    if (word == known) {
      out = word;
      return;
    }
  r.report_unknown(*node, path, word, keys::kMetrics, "metric");
}

// `class_weights: balanced` or a list of positive numbers, one per label.
void load_class_weights(SpecReader& r, const YamlNode& node, const std::string& path,
                        ClassWeightsSpec& w) {
  if (node.is_scalar() && node.value == "balanced") {
    w.kind = ClassWeightsSpec::Kind::kBalanced;
    return;
  }
  if (!node.is_sequence() || node.items.empty()) {
    r.error(node, path,
            fmt::format("expected 'balanced' or a list of positive numbers (one per label), got {}",
                        describe(node)));
    return;
  }
  w.kind = ClassWeightsSpec::Kind::kExplicit;
  for (std::size_t i = 0; i < node.items.size(); ++i) {
    float value = 1.0f;
    if (r.read_float(node.items[i].get(), index_path(path, i), value, 0, true, 1e6, false,
                     "a weight above 0 and at most 1000000"))
      w.values.push_back(value);
  }
}

// The dev set `validation` names must be read as the training data is: the same kind of
// labels with the same names, and a second text when the training rows have one.
void check_validation_data(SpecReader& r, const YamlNode& node, const std::string& path,
                           const TrainingSpec& t, const TrainingContext& c) {
  const Dataset* train = nullptr;
  const Dataset* dev = nullptr;
  for (const Dataset& d : *c.datasets) {
    if (d.name == t.dataset) train = &d;
    if (d.name == t.validation) dev = &d;
  }
  if (!train || !dev) return;
  std::string why;
  if (dev->label_type != train->label_type)
    why = fmt::format("its label_type is {}, the training data's {}",
                      label_type_name(dev->label_type), label_type_name(train->label_type));
  else if (dev->labels != train->labels)
    why = fmt::format("its labels [{}] differ from the training data's [{}]",
                      fmt::join(dev->labels, ", "), fmt::join(train->labels, ", "));
  else if (dev->text_pair_field.empty() != train->text_pair_field.empty())
    why = dev->text_pair_field.empty() ? "it has no text_pair_field and the training data has"
                                       : "it has a text_pair_field and the training data has none";
  if (!why.empty())
    r.error(node, join_path(path, "validation"),
            fmt::format("dataset '{}' cannot validate a model trained on '{}': {}", dev->name,
                        train->name, why),
            "; give the dev set the training data's label_type, labels and fields");
}

void load_early_stopping(SpecReader& r, const YamlNode& node, const std::string& path,
                         EarlyStoppingSpec& e) {
  if (!r.expect_map(node, path)) return;
  r.check_keys(node, path, keys::kEarlyStopping);
  read_metric(r, find(node, "metric"), join_path(path, "metric"), e.metric);
  r.read_int(find(node, "patience"), join_path(path, "patience"), e.patience, 0, kMaxCount,
             "an integer of at least 0 (0: no early stopping)");
}

// Checks that need several keys at once.
void check_recipe(SpecReader& r, const YamlNode& node, const std::string& path,
                  const TrainingSpec& t, const TrainingContext& c) {
  const YamlNode* steps = find(node, "steps");
  const YamlNode* epochs = find(node, "epochs");
  if ((steps != nullptr) == (epochs != nullptr))
    r.error(steps && epochs ? *epochs : node, steps && epochs ? join_path(path, "epochs") : path,
            "expected exactly one of 'steps' or 'epochs'");
  if (steps && t.schedule.warmup_steps > t.steps)
    if (const YamlNode* sched = find(node, "schedule"))
      r.error(
          *sched, join_path(path, "schedule.warmup_steps"),
          fmt::format("warmup_steps ({}) exceeds steps ({})", t.schedule.warmup_steps, t.steps));
  if (const YamlNode* mask = find(node, "mask_probability");
      mask && t.objective != Objective::kMaskedLm)
    r.error(*mask, join_path(path, "mask_probability"),
            "mask_probability applies only to objective: mlm");
  const bool held_out = t.validation_split > 0.0f || !t.validation.empty();
  if (t.early_stopping.patience > 0 && !held_out)
    r.error(*find(node, "early_stopping"), join_path(path, "early_stopping"),
            "early stopping needs held-out data; set validation_split above 0 or name a dev "
            "set with validation: DATASET");
  if (const YamlNode* keep = find(node, "keep_best"); keep && !held_out)
    r.error(*keep, join_path(path, "keep_best"),
            "keep_best needs held-out data; set validation_split above 0 or name a dev set "
            "with validation: DATASET");
  const YamlNode* split = find(node, "validation_split");
  if (const YamlNode* dev = find(node, "validation")) {
    if (split && t.validation_split > 0.0f)
      r.error(*dev, join_path(path, "validation"),
              "both validation and validation_split are set; keep one");
    else
      check_validation_data(r, *dev, path, t, c);
  }

  const YamlNode* objective = find(node, "objective");
  const YamlNode& at = objective ? *objective : node;
  const std::string opath = objective ? join_path(path, "objective") : path;
  if (c.arch && t.objective == Objective::kMaskedLm && c.arch->kind != ArchitectureKind::kEncoder)
    r.error(at, opath, "objective mlm needs an encoder; a decoder trains with clm");
  if (c.arch && t.objective == Objective::kCausalLm && c.arch->kind != ArchitectureKind::kDecoder)
    r.error(at, opath, "objective clm needs a decoder; an encoder trains with mlm");
}

}  // namespace

std::optional<TrainingSpec> load_training(SpecReader& r, const YamlNode& node,
                                          const std::string& path, const TrainingContext& c) {
  if (!r.expect_map(node, path, "a mapping with the training recipe")) return std::nullopt;
  r.check_keys(node, path, keys::kTrain);
  TrainingSpec t;
  if (c.has_head)
    t.objective = Objective::kClassification;
  else
    t.objective = c.arch && c.arch->kind == ArchitectureKind::kDecoder ? Objective::kCausalLm
                                                                       : Objective::kMaskedLm;
  std::vector<std::string> dataset_names;
  for (const Dataset& d : *c.datasets) dataset_names.push_back(d.name);
  if (const YamlNode* data = r.require(node, path, "data", "the name of a dataset")) {
    if (r.read_string(data, join_path(path, "data"), t.dataset))
      check_reference(r, *data, join_path(path, "data"), t.dataset, dataset_names, "dataset");
  }
  r.read_choice<Objective>(find(node, "objective"), join_path(path, "objective"), keys::kObjectives,
                           t.objective, "objective");
  r.read_int(find(node, "steps"), join_path(path, "steps"), t.steps, 1, kMaxCount,
             "a positive integer");
  r.read_int(find(node, "epochs"), join_path(path, "epochs"), t.epochs, 1, 100000,
             "an integer from 1 to 100000");
  r.read_int(find(node, "batch_size"), join_path(path, "batch_size"), t.batch_size, 1, 1 << 16,
             "an integer from 1 to 65536");
  r.read_int(find(node, "grad_accumulation"), join_path(path, "grad_accumulation"),
             t.grad_accumulation, 1, 1 << 16, "an integer from 1 to 65536");
  const int max_length = c.arch ? c.arch->max_length : kMaxCount;
  r.read_int(find(node, "max_length"), join_path(path, "max_length"), t.max_length, 1, max_length,
             c.arch ? fmt::format("an integer from 1 to {} (the base's max_length)", max_length)
                    : std::string("a positive integer"));
  r.read_float(find(node, "validation_split"), join_path(path, "validation_split"),
               t.validation_split, 0, false, 1, true, "a fraction from 0 to below 1");
  if (const YamlNode* dev = find(node, "validation")) {
    if (r.read_string(dev, join_path(path, "validation"), t.validation))
      if (!check_reference(r, *dev, join_path(path, "validation"), t.validation, dataset_names,
                           "dataset"))
        t.validation.clear();
  }
  r.read_int(find(node, "eval_every"), join_path(path, "eval_every"), t.eval_every, 0, kMaxCount,
             "an integer of at least 0 (0: once per epoch)");
  r.read_float(find(node, "mask_probability"), join_path(path, "mask_probability"),
               t.mask_probability, 0, true, 1, true, "a probability above 0 and below 1");
  if (const YamlNode* n = find(node, "optimizer"))
    load_optimizer(r, *n, join_path(path, "optimizer"), t.optimizer);
  if (const YamlNode* n = find(node, "schedule"))
    load_schedule(r, *n, join_path(path, "schedule"), t.schedule);
  if (const YamlNode* n = find(node, "early_stopping"))
    load_early_stopping(r, *n, join_path(path, "early_stopping"), t.early_stopping);
  read_metric(r, find(node, "keep_best"), join_path(path, "keep_best"), t.keep_best);
  if (const YamlNode* n = find(node, "class_weights"))
    load_class_weights(r, *n, join_path(path, "class_weights"), t.class_weights);
  r.read_uint64(find(node, "seed"), join_path(path, "seed"), t.seed);
  r.read_choice<Precision>(find(node, "precision"), join_path(path, "precision"), keys::kPrecisions,
                           t.precision, "precision");
  r.read_bool(find(node, "recompute"), join_path(path, "recompute"), t.recompute);
  check_recipe(r, node, path, t, c);
  return t;
}

}  // namespace scion::spec::detail
