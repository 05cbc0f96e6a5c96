// Co-batched training is the contract of FamilyTrainer: a group of jobs trained together
// must end with the parameters each job reaches when trained alone.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/adapters/ia3/ia3_spec.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/backend.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/training/family_trainer.h"
#include "training_test_data.h"

using namespace scion;

namespace {

// A tiny encoder and descendants of every method that can share its frozen trunk.
spec::Workspace family() {
  spec::Workspace ws = test::tiny_base_workspace();

  auto descendant = [&](std::string name, std::string from, auto configure, std::uint64_t seed,
                        float lr, int batch, int steps) {
    spec::Model m;
    m.name = std::move(name);
    m.from = std::move(from);
    configure(m.adaptation);
    m.adaptation.head = spec::HeadSpec{.labels = {"neg", "pos"}};
    m.training = test::reviews_recipe(seed, lr, batch, steps);
    m.training->validation_split = 0.25f;
    ws.models.push_back(m);
  };
  descendant(
      "lora", "base", [](spec::Adaptation& a) { a.set(spec::LoraSpec{.rank = 2, .alpha = 4}); }, 1,
      1e-2f, 4, 6);
  descendant("prefix", "base", [](spec::Adaptation& a) { a.prefix = spec::PrefixSpec{.virtual_tokens = 3}; }, 2, 5e-3f, 3, 4);
  descendant("bottleneck", "base", [](spec::Adaptation& a) { a.set(spec::BottleneckSpec{.reduction = 4}); }, 3, 1e-2f, 5, 7);
  descendant("prompt", "base", [](spec::Adaptation& a) { a.prompt = spec::PromptSpec{.virtual_tokens = 2}; }, 4, 1e-2f, 4, 5);
  descendant("head", "base", [](spec::Adaptation&) {}, 5, 2e-2f, 2, 3);
  descendant(
      "lora-child", "lora",
      [](spec::Adaptation& a) { a.set(spec::LoraSpec{.rank = 1, .alpha = 2}); }, 6, 1e-2f, 4, 4);
  descendant(
      "rslora", "base",
      [](spec::Adaptation& a) {
        a.set(
            spec::LoraSpec{.rank = 4, .alpha = 4, .targets = {"k", "ffn_in"}, .use_rslora = true});
      },
      7, 1e-2f, 3, 5);
  descendant(
      "dora", "base",
      [](spec::Adaptation& a) {
        a.set(spec::LoraSpec{.rank = 2,
                             .alpha = 4,
                             .dropout = 0.1f,
                             .targets = {"q", "v", "ffn_out"},
                             .use_dora = true});
      },
      8, 1e-2f, 4, 6);
  // (IA)³ on k and v outputs and on the FFN down-projection's input, and on q's input too:
  // both kinds of site, on a linear the co-batched LoRA adapts as well.
  descendant(
      "ia3", "base",
      [](spec::Adaptation& a) {
        spec::Ia3Spec ia3;
        ia3.targets = {"k", "v"};
        ia3.feedforward = {"ffn_out", "q"};
        a.set(std::move(ia3));
      },
      9, 2e-2f, 3, 5);
  return ws;
}


// Trains `names` as one group over a fresh copy of the family; returns every trained
// parameter by name. The pool the jobs train from holds the trunk linear weights they run
// frozen in `frozen_linear` (bf16: as a bf16 training group does); `recompute` sets
// recompute in every recipe.
std::map<std::string, std::vector<float>> train(
    const spec::Workspace& family_ws, const std::vector<std::string>& names,
    runtime::TrainerOptions options = {}, runtime::Precision precision = runtime::Precision::kF32,
    runtime::DType frozen_linear = runtime::DType::kF32, bool recompute = false,
    const std::map<std::string, std::shared_ptr<const data::TokenizedDataset>>& data_of = {}) {
  spec::Workspace ws = family_ws;
  for (spec::Model& m : ws.models)
    if (m.training) m.training->recompute = recompute;
  auto backend = runtime::make_cpu_backend(
      runtime::CpuBackendOptions{.threads = 1, .precision = precision});
  // The trunk and the parent's adapter get the same values in every configuration.
  runtime::ParameterStore initial(*backend);
  runtime::ParameterBinding base = initial.add_model(ws, *ws.find_model("base")).value();
  runtime::initialize_new_parameters(*backend, ws, *ws.find_model("base"), base, 11);
  runtime::ParameterBinding lora = initial.add_model(ws, *ws.find_model("lora")).value();
  runtime::initialize_new_parameters(*backend, ws, *ws.find_model("lora"), lora, 12);
  // A fresh LoRA B is zero; give the parent adapter non-zero B so the child sees it.
  for (const auto& [name, view] : lora.views())
    if (name.ends_with(".lora.lora.b"))
      for (std::int64_t i = 0; i < view.numel(); ++i) view.f32()[i] = 0.01f * static_cast<float>(i % 7);

  runtime::ParameterStore pool(*backend, {}, frozen_linear);
  const auto data = test::synthetic_reviews();
  std::vector<std::unique_ptr<runtime::TrainingJob>> jobs;
  std::vector<runtime::TrainingJob*> raw;
  for (const std::string& name : names) {
    const spec::Model& m = *ws.find_model(name);
    runtime::ParameterBinding binding = pool.add_model(ws, m).value();
    // Inherited values (and lora's own initial ones) come from `initial`, converted to the
    // dtype the pool holds them in; every other new parameter is initialised.
    for (const auto& [param, view] : binding.views())
      if (const runtime::Tensor* value = lora.find(param); value && pool.is_new(view))
        runtime::convert(*value, view);
    if (name != "lora") runtime::initialize_new_parameters(*backend, ws, m, binding, m.training->seed);
    REQUIRE(binding.find("blk.1.ffn_out.weight")->dtype == frozen_linear);
    const auto own_data = data_of.find(name);
    auto job = runtime::TrainingJob::create(
        ws, m, binding, own_data == data_of.end() ? data : own_data->second, *backend);
    REQUIRE(job.is_ok());
    raw.push_back(job->get());
    jobs.push_back(std::move(*job));
  }
  runtime::FamilyTrainer trainer(*backend, options);
  REQUIRE(trainer.run(raw, {}).is_ok());
  std::map<std::string, std::vector<float>> out;
  for (auto& job : jobs) {
    CHECK(job->finished());
    for (const auto& p : job->table()) {
      if (!p.trainable) continue;
      const runtime::Tensor* v = job->parameters().find(p.name);
      out[p.name] = std::vector<float>(v->f32(), v->f32() + v->numel());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("co-batched training equals training each job alone, for every method") {
  const spec::Workspace ws = family();
  const std::vector<std::string> names = {"lora", "prefix", "bottleneck", "prompt", "head"};
  const auto together = train(ws, names);
  for (const std::string& name : names) {
    const auto alone = train(ws, {name});
    for (const auto& [param, values] : alone) {
      INFO(name << " " << param);
      REQUIRE(together.count(param));
      REQUIRE(together.at(param).size() == values.size());
      CHECK(test::difference_to_scale(values, together.at(param)) <= 1e-4f);
    }
  }
}

TEST_CASE("rsLoRA and DoRA co-batched with the other methods equal each trained alone") {
  const spec::Workspace ws = family();
  const std::vector<std::string> names = {"rslora", "dora", "lora", "prefix", "bottleneck"};
  const auto together = train(ws, names);
  for (const std::string name : {"rslora", "dora"}) {
    const auto alone = train(ws, {name});
    int magnitudes = 0;
    for (const auto& [param, values] : alone) {
      INFO(name << " " << param);
      REQUIRE(together.count(param));
      REQUIRE(together.at(param).size() == values.size());
      CHECK(test::difference_to_scale(values, together.at(param)) <= 1e-4f);
      magnitudes += param.ends_with(".m");
    }
    CHECK(magnitudes == (name == "dora" ? 2 * 3 : 0));  // trained: 2 layers x 3 targets
  }
}

TEST_CASE("(IA)³ co-batched with LoRA, DoRA and prefix tuning equals each trained alone") {
  const spec::Workspace ws = family();
  const auto together = train(ws, {"ia3", "lora", "dora", "prefix"});
  const auto alone = train(ws, {"ia3"});
  int vectors = 0;
  for (const auto& [param, values] : alone) {
    INFO(param);
    REQUIRE(together.count(param));
    CHECK(test::difference_to_scale(values, together.at(param)) <= 1e-4f);
    if (param.find(".ia3.ia3.") == std::string::npos) continue;
    ++vectors;
    // Trained: no longer the ones it started at.
    CHECK(std::any_of(values.begin(), values.end(), [](float v) { return v != 1.0f; }));
  }
  CHECK(vectors == 2 * 4);  // 2 layers x (k, v, ffn_out, q)
}

TEST_CASE("(IA)³ over a trunk held in bf16 co-batches as it trains alone") {
  // The frozen products' bf16 path takes the scaled inputs and hands back their gradient.
  const spec::Workspace ws = family();
  const auto together =
      train(ws, {"ia3", "lora"}, {}, runtime::Precision::kBF16, runtime::DType::kBF16);
  const auto alone = train(ws, {"ia3"}, {}, runtime::Precision::kBF16, runtime::DType::kBF16);
  for (const auto& [param, values] : alone) {
    INFO(param);
    CHECK(test::difference_to_scale(values, together.at(param)) <= 1e-4f);
  }
}

// The same rows with other tokens and the other label: every row keeps its length, so a
// batch drawn from it has the same shape, and a pass the same layout of rows.
std::shared_ptr<const data::TokenizedDataset> other_values(const data::TokenizedDataset& data) {
  auto other = std::make_shared<data::TokenizedDataset>(data);
  for (auto& row : other->rows)
    for (auto& t : row) t = (t + 1) % 256;
  for (auto& label : other->labels) label = 1 - label;
  return other;
}

TEST_CASE("a co-batched job's parameters do not depend on the other jobs' rows, bit for bit") {
  // With the same layout of rows in every pass, each product computes a job's rows by the
  // same kernel path whatever the other rows hold, so nothing may change a job's values
  // but a leak: another job's rows in its gradient, a shared optimizer state, a loss
  // normalised over the pass. This holds exactly in both precisions and at any thread
  // count, unlike co-batched against alone, where a job's rows sit elsewhere in a product
  // of another height and BLAS computes them in another order (bench/README.md, "Many
  // small tenants").
  const spec::Workspace ws = family();
  const std::vector<std::string> names = {"lora", "prefix", "bottleneck", "prompt", "head"};
  const auto other = other_values(*test::synthetic_reviews());
  const std::map<std::string, std::shared_ptr<const data::TokenizedDataset>> others_changed = {
      {"prefix", other}, {"bottleneck", other}, {"prompt", other}, {"head", other}};
  for (const runtime::Precision precision : {runtime::Precision::kF32, runtime::Precision::kBF16}) {
    INFO(runtime::precision_name(precision));
    const auto reference = train(ws, names, {}, precision);
    const auto changed =
        train(ws, names, {}, precision, runtime::DType::kF32, false, others_changed);
    std::size_t moved = 0;
    for (const auto& [param, values] : reference) {
      INFO(param);
      // The job "lora"'s own parameters: its adapters (`*.lora.lora.*`) and head.
      if (param.find(".lora.lora.") != std::string::npos || param.starts_with("head.lora."))
        CHECK(changed.at(param) == values);
      else
        moved += changed.at(param) != values;
    }
    CHECK(moved > 0);  // the other jobs did see other rows
  }
}

TEST_CASE("in bf16, co-batched training equals training each job alone") {
  const spec::Workspace ws = family();
  const std::vector<std::string> names = {"lora", "prefix", "bottleneck", "prompt", "head"};
  const auto together = train(ws, names, {}, runtime::Precision::kBF16);
  const auto fp32 = train(ws, names);
  float bf16_vs_fp32 = 0;
  for (const std::string& name : names) {
    const auto alone = train(ws, {name}, {}, runtime::Precision::kBF16);
    const spec::TrainingSpec& recipe = *ws.find_model(name)->training;
    // How far apart AdamW can carry one value in two trainings of `steps` steps: each step
    // moves it by lr · |m̂| / (√v̂ + eps) + lr · decay · |w|, and |m̂| / √v̂ stays below
    // 1.03 over the first few steps (Cauchy-Schwarz on the bias-corrected averages), so
    // a value whose gradient is near zero, which bf16 rounding may flip in sign, can end
    // 2 · 1.03 · lr · steps apart with no fault (bench/README.md, "Many small tenants").
    const float adamw_reach = 2.0f * 1.05f * recipe.optimizer.lr * static_cast<float>(recipe.steps);
    for (const auto& [param, values] : alone) {
      INFO(name << " " << param);
      REQUIRE(together.count(param));
      REQUIRE(together.at(param).size() == values.size());
      // The same tolerance as in fp32: each row's products round the same operands.
      CHECK(test::difference_to_scale(values, together.at(param)) <= 1e-4f);
      bf16_vs_fp32 = std::max(bf16_vs_fp32, test::difference_to_scale(fp32.at(param), values));
      float farthest = 0;
      for (std::size_t i = 0; i < values.size(); ++i)
        farthest = std::max(farthest, std::fabs(values[i] - fp32.at(param)[i]));
      CHECK(farthest <= adamw_reach);
    }
  }
  // bf16 really rounds: its parameters differ from fp32's by more than the co-batching
  // tolerance; and no value ends farther from fp32's than AdamW's steps can carry it.
  CHECK(bf16_vs_fp32 > 1e-4f);
}

TEST_CASE("in bf16, frozen trunk weights held in bf16 train exactly as rounded per product") {
  const spec::Workspace ws = family();
  const std::vector<std::string> names = {"lora", "prefix", "bottleneck", "prompt", "head",
                                          "lora-child"};
  // The bf16 products round an fp32-held weight to the bf16 value a bf16 pool holds, so
  // holding it in bf16 (2 bytes a parameter) changes no value at all.
  const auto rounded_per_product = train(ws, names, {}, runtime::Precision::kBF16);
  const auto held_in_bf16 =
      train(ws, names, {}, runtime::Precision::kBF16, runtime::DType::kBF16);
  REQUIRE(held_in_bf16.size() == rounded_per_product.size());
  for (const auto& [param, values] : rounded_per_product) {
    INFO(param);
    CHECK(held_in_bf16.at(param) == values);
  }
  // And co-batching keeps its contract with bf16-held weights.
  for (const std::string name : {"lora", "bottleneck"}) {
    const auto alone = train(ws, {name}, {}, runtime::Precision::kBF16, runtime::DType::kBF16);
    for (const auto& [param, values] : alone) {
      INFO(name << " " << param);
      CHECK(test::difference_to_scale(values, held_in_bf16.at(param)) <= 1e-4f);
    }
  }
}

TEST_CASE("a bf16 pool holds the trunk weights a descendant runs frozen in 2 bytes each") {
  const spec::Workspace ws = family();
  auto backend = runtime::make_cpu_backend(
      runtime::CpuBackendOptions{.threads = 1, .precision = runtime::Precision::kBF16});
  std::int64_t frozen_linear = 0, other = 0;
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, *ws.find_model("lora")))
    (runtime::is_trunk_linear_weight(p.name) && !p.trainable ? frozen_linear : other) += p.numel();
  REQUIRE(frozen_linear > 0);
  runtime::ParameterStore fp32(*backend), bf16(*backend, {}, runtime::DType::kBF16);
  REQUIRE(fp32.add_model(ws, *ws.find_model("lora")).is_ok());
  REQUIRE(bf16.add_model(ws, *ws.find_model("lora")).is_ok());
  CHECK(fp32.bytes_held() == 4 * (frozen_linear + other));
  CHECK(bf16.bytes_held() == 2 * frozen_linear + 4 * other);
  // A second model on the same trunk adds only its own parameters: the bf16 copy is shared.
  const std::int64_t before = bf16.bytes_held();
  runtime::ParameterBinding head = bf16.add_model(ws, *ws.find_model("head")).value();
  std::int64_t head_own = 0;
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, *ws.find_model("head")))
    if (p.introduced_by == "head") head_own += p.numel();
  CHECK(bf16.bytes_held() == before + 4 * head_own);
  // A base trains its trunk: nothing of it is held in bf16.
  runtime::ParameterStore base_pool(*backend, {}, runtime::DType::kBF16);
  runtime::ParameterBinding base = base_pool.add_model(ws, *ws.find_model("base")).value();
  CHECK(base.find("blk.0.attn_q.weight")->dtype == runtime::DType::kF32);
}

TEST_CASE("recomputing activations gives the gradients of keeping them, bit for bit") {
  spec::Workspace ws = family();
  // Dropout everywhere, so the recomputed blocks must draw the same masks again.
  ws.models.front().architecture->dropout = 0.1f;
  for (spec::Model& m : ws.models)
    if (m.name == "lora") {
      spec::LoraSpec with_dropout = *m.adaptation.find<spec::LoraSpec>();
      with_dropout.dropout = 0.2f;
      m.adaptation.set(with_dropout);
    }
  const std::vector<std::string> names = {"lora", "prefix", "bottleneck", "prompt", "head",
                                          "lora-child"};
  for (const runtime::Precision precision : {runtime::Precision::kF32, runtime::Precision::kBF16}) {
    INFO(runtime::precision_name(precision));
    const auto kept = train(ws, names, {}, precision);
    const auto recomputed = train(ws, names, {}, precision, runtime::DType::kF32, true);
    REQUIRE(recomputed.size() == kept.size());
    for (const auto& [param, values] : kept) {
      INFO(param);
      CHECK(recomputed.at(param) == values);
    }
  }
}

TEST_CASE("a step cut into passes of few rows gives the parameters of one pass") {
  const spec::Workspace ws = family();
  const std::vector<std::string> names = {"lora", "prefix", "bottleneck", "prompt", "head"};
  const auto one_pass = train(ws, names);
  // A micro-batch here holds 2 to 5 rows of up to 16 tokens: a cap of 1 gives every job a
  // pass of its own, 100 puts one to three jobs in a pass.
  for (const std::int64_t cap : {1, 100}) {
    const auto passes = train(ws, names, runtime::TrainerOptions{.max_rows_per_pass = cap});
    REQUIRE(passes.size() == one_pass.size());
    for (const auto& [param, values] : one_pass) {
      INFO("cap " << cap << " " << param);
      // The same rows summed in other blocks: equal to a few ulps, not bit for bit (the
      // sanitizer build, whose buffers are aligned differently, differs by ~1e-6): the
      // contract of co-batched against solo training.
      REQUIRE(passes.at(param).size() == values.size());
      CHECK(test::difference_to_scale(values, passes.at(param)) <= 1e-4f);
    }
  }
}

TEST_CASE("a descendant of a descendant co-batches with its parent's siblings") {
  const spec::Workspace ws = family();
  const auto together = train(ws, {"lora-child", "prefix"});
  const auto alone = train(ws, {"lora-child"});
  for (const auto& [param, values] : alone) {
    INFO(param);
    const auto& co = together.at(param);
    for (std::size_t i = 0; i < values.size(); ++i) CHECK(co[i] == Approx(values[i]).margin(1e-6));
  }
}

TEST_CASE("jobs stop at their own step counts and training moves their parameters") {
  const spec::Workspace ws = family();
  const auto trained = train(ws, {"head", "bottleneck"});
  const auto& bias = trained.at("head.head.bias");
  CHECK((bias[0] != 0.0f || bias[1] != 0.0f));
}

TEST_CASE("a job that diverges leaves its group, unstored, and the others train on") {
  spec::Workspace ws = family();
  spec::Model hot = *ws.find_model("head");
  hot.name = "hot";
  // Each SGD step multiplies the parameters by about 1 - lr x weight_decay = -9: past
  // float range within 60 steps.
  hot.training->optimizer.kind = spec::OptimizerKind::kSgd;
  hot.training->optimizer.lr = 10.0f;
  hot.training->optimizer.weight_decay = 1.0f;
  hot.training->steps = 60;
  ws.models.push_back(hot);
  const auto alone = train(ws, {"prefix"});

  auto backend = runtime::make_cpu_backend(1);
  runtime::ParameterStore pool(*backend);
  runtime::ParameterBinding base = pool.add_model(ws, *ws.find_model("base")).value();
  runtime::initialize_new_parameters(*backend, ws, *ws.find_model("base"), base, 11);
  const auto data = test::synthetic_reviews();
  std::vector<std::unique_ptr<runtime::TrainingJob>> jobs;
  std::vector<runtime::TrainingJob*> raw;
  for (const std::string name : {"prefix", "hot"}) {
    const spec::Model& m = *ws.find_model(name);
    runtime::ParameterBinding binding = pool.add_model(ws, m).value();
    runtime::initialize_new_parameters(*backend, ws, m, binding, m.training->seed);
    auto job = runtime::TrainingJob::create(ws, m, binding, data, *backend);
    REQUIRE(job.is_ok());
    raw.push_back(job->get());
    jobs.push_back(std::move(*job));
  }
  std::vector<std::string> finished, diverged;
  std::map<std::string, int> steps_reported;
  runtime::TrainerCallbacks callbacks;
  callbacks.on_step = [&](const runtime::StepReport& r) {
    CHECK(std::isfinite(r.loss));
    ++steps_reported[r.job->model().name];
    return Status::ok();
  };
  callbacks.on_job_finished = [&](runtime::TrainingJob& job) {
    finished.push_back(job.model().name);
    return Status::ok();
  };
  callbacks.on_job_diverged = [&](runtime::TrainingJob& job) {
    diverged.push_back(job.model().name);
    return Status::ok();
  };
  runtime::FamilyTrainer trainer(*backend);
  REQUIRE(trainer.run(raw, callbacks).is_ok());

  CHECK(finished == std::vector<std::string>{"prefix"});
  REQUIRE(diverged == std::vector<std::string>{"hot"});
  const runtime::TrainingJob& hot_job = *jobs[1];
  REQUIRE(hot_job.divergence());
  CHECK(hot_job.divergence()->step < 60);
  CHECK(steps_reported["hot"] == hot_job.divergence()->step - 1);  // no report of the bad step
  CHECK_THAT(hot_job.divergence()->what,
             Catch::Contains("loss is") || Catch::Contains("is not finite after the update"));
  if (hot_job.divergence()->what.starts_with("loss is"))
    CHECK_FALSE(hot_job.first_non_finite_parameter());  // a non-finite loss takes no update
  // The sibling reaches the parameters it reaches alone.
  for (const auto& [param, values] : alone) {
    const runtime::Tensor* v = jobs[0]->parameters().find(param);
    REQUIRE(v);
    for (std::size_t i = 0; i < values.size(); ++i) CHECK(v->f32()[i] == Approx(values[i]).margin(1e-6));
  }
}

namespace {

// synthetic_reviews' rows with the labels of other tasks: a regression value and two
// multi-label bits per row, or a tag on every other token (each row's "words").
std::shared_ptr<const data::TokenizedDataset> as_task(spec::LabelType type) {
  auto data = std::make_shared<data::TokenizedDataset>(*test::synthetic_reviews());
  data->label_type = type;
  data->has_labels = true;
  for (std::size_t r = 0; r < data->rows.size(); ++r) {
    const float label = static_cast<float>(data->labels[r]);
    if (type == spec::LabelType::kNumber) data->targets.push_back({2 * label - 1 + 0.1f * (r % 3)});
    if (type == spec::LabelType::kMulti) data->targets.push_back({label, r % 2 ? 1.0f : 0.0f});
    if (type == spec::LabelType::kTags) {
      std::vector<std::int32_t> starts, tags;
      for (std::size_t t = 0; t < data->rows[r].size(); t += 2) {
        starts.push_back(static_cast<std::int32_t>(t));
        tags.push_back(static_cast<std::int32_t>((data->rows[r][t] + r) % 3));
      }
      data->word_starts.push_back(starts);
      data->tags.push_back(tags);
    }
  }
  data->labels.clear();
  return data;
}

// The family with a regression, a multi-label and a token-classification LoRA model
// beside a classifier, all on one trunk.
spec::Workspace task_family() {
  spec::Workspace ws = family();
  auto add = [&](const char* name, spec::HeadSpec head, std::uint64_t seed) {
    spec::Model m;
    m.name = name;
    m.from = "base";
    m.adaptation.set(spec::LoraSpec{.rank = 2, .alpha = 4});
    m.adaptation.head = std::move(head);
    m.training = test::reviews_recipe(seed, 1e-2f, 4, 6);
    m.training->validation_split = 0.25f;
    ws.models.push_back(m);
  };
  add("regress", spec::HeadSpec{.task = spec::HeadTask::kRegression, .labels = {"score"}}, 21);
  add("multi", spec::HeadSpec{.task = spec::HeadTask::kMultiLabel, .labels = {"a", "b"}}, 22);
  add("tags",
      spec::HeadSpec{.task = spec::HeadTask::kTokenClassification, .labels = {"O", "X", "Y"}}, 23);
  return ws;
}

}  // namespace

TEST_CASE("task heads co-batched with a classifier train as each alone") {
  const spec::Workspace ws = task_family();
  const std::map<std::string, std::shared_ptr<const data::TokenizedDataset>> data_of = {
      {"regress", as_task(spec::LabelType::kNumber)},
      {"multi", as_task(spec::LabelType::kMulti)},
      {"tags", as_task(spec::LabelType::kTags)}};
  const std::vector<std::string> names = {"regress", "multi", "tags", "head"};
  const auto together =
      train(ws, names, {}, runtime::Precision::kF32, runtime::DType::kF32, false, data_of);
  for (const std::string& name : names) {
    const auto alone =
        train(ws, {name}, {}, runtime::Precision::kF32, runtime::DType::kF32, false, data_of);
    for (const auto& [param, values] : alone) {
      INFO(name << " " << param);
      REQUIRE(together.count(param));
      CHECK(test::difference_to_scale(values, together.at(param)) <= 1e-4f);
    }
  }
}

TEST_CASE("keep_best stores the parameters of the best validation, those of that step") {
  spec::Workspace ws = task_family();
  spec::Model& m = *std::find_if(ws.models.begin(), ws.models.end(),
                                 [](const spec::Model& x) { return x.name == "regress"; });
  m.training->steps = 12;
  m.training->eval_every = 1;
  m.training->optimizer.lr = 0.3f;  // large: the validation loss goes up and down
  m.training->keep_best = "val_loss";
  auto backend = runtime::make_cpu_backend(1);
  const auto data = as_task(spec::LabelType::kNumber);
  // Trains `model` as `recipe` says from the same initial values; its trainable values.
  const auto train_with = [&](const spec::TrainingSpec& recipe,
                              std::optional<runtime::KeptValidation>* kept,
                              std::vector<double>* losses) {
    spec::Workspace copy = ws;
    spec::Model& model = *std::find_if(copy.models.begin(), copy.models.end(),
                                       [](const spec::Model& x) { return x.name == "regress"; });
    model.training = recipe;
    runtime::ParameterStore pool(*backend);
    runtime::ParameterBinding base = pool.add_model(copy, *copy.find_model("base")).value();
    runtime::initialize_new_parameters(*backend, copy, *copy.find_model("base"), base, 11);
    runtime::ParameterBinding binding = pool.add_model(copy, model).value();
    runtime::initialize_new_parameters(*backend, copy, model, binding, recipe.seed);
    auto job = runtime::TrainingJob::create(copy, model, binding, data, *backend);
    REQUIRE(job.is_ok());
    runtime::TrainerCallbacks callbacks;
    callbacks.on_step = [&](const runtime::StepReport& r) {
      if (losses && r.validation) losses->push_back(r.validation->loss);
      return Status::ok();
    };
    REQUIRE(runtime::FamilyTrainer(*backend).run({job->get()}, callbacks).is_ok());
    if (kept) *kept = (*job)->kept();
    std::vector<float> values;
    for (const auto& p : (*job)->table())
      if (p.trainable) {
        const runtime::Tensor* v = (*job)->parameters().find(p.name);
        values.insert(values.end(), v->f32(), v->f32() + v->numel());
      }
    return values;
  };
  std::optional<runtime::KeptValidation> kept;
  std::vector<double> losses;
  const std::vector<float> best = train_with(*m.training, &kept, &losses);
  REQUIRE(kept.has_value());
  REQUIRE(losses.size() == 12);
  const auto lowest = std::min_element(losses.begin(), losses.end());
  CHECK(kept->step == (lowest - losses.begin()) + 1);
  CHECK(kept->value == *lowest);
  CHECK(kept->last_step == 12);
  CHECK(kept->last_value == losses.back());
  INFO("validation losses: " << losses.front() << " ... kept step " << kept->step);
  CHECK(kept->step < 12);  // the lr makes the last step not the best; else the test shows nothing
  // Validation changes no parameter, and the data order does not depend on the step
  // count: the kept parameters are those of training for `kept->step` steps, bit for bit.
  spec::TrainingSpec shorter = *m.training;
  shorter.steps = static_cast<int>(kept->step);
  shorter.keep_best.clear();
  CHECK(train_with(shorter, nullptr, nullptr) == best);
}
