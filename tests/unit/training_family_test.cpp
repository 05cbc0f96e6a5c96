// Co-batched training is the contract of FamilyTrainer: a group of jobs trained together
// must end with the parameters each job reaches when trained alone.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "runtime/backend.h"
#include "runtime/parameter_binding.h"
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
  descendant("lora", "base", [](spec::Adaptation& a) { a.lora = spec::LoraSpec{.rank = 2, .alpha = 4}; }, 1, 1e-2f, 4, 6);
  descendant("prefix", "base", [](spec::Adaptation& a) { a.prefix = spec::PrefixSpec{.virtual_tokens = 3}; }, 2, 5e-3f, 3, 4);
  descendant("bottleneck", "base", [](spec::Adaptation& a) { a.bottleneck = spec::BottleneckSpec{.reduction = 4}; }, 3, 1e-2f, 5, 7);
  descendant("prompt", "base", [](spec::Adaptation& a) { a.prompt = spec::PromptSpec{.virtual_tokens = 2}; }, 4, 1e-2f, 4, 5);
  descendant("head", "base", [](spec::Adaptation&) {}, 5, 2e-2f, 2, 3);
  descendant("lora-child", "lora", [](spec::Adaptation& a) { a.lora = spec::LoraSpec{.rank = 1, .alpha = 2}; }, 6, 1e-2f, 4, 4);
  return ws;
}


// Trains `names` as one group over a fresh copy of the family; returns every trained
// parameter by name.
std::map<std::string, std::vector<float>> train(const spec::Workspace& ws,
                                                const std::vector<std::string>& names,
                                                runtime::TrainerOptions options = {},
                                                runtime::Precision precision = runtime::Precision::kF32) {
  auto backend = runtime::make_cpu_backend(
      runtime::CpuBackendOptions{.threads = 1, .precision = precision});
  runtime::ParameterStore pool(*backend);
  // The trunk and the parent's adapter get the same values in every configuration.
  runtime::ParameterBinding base = pool.add_model(ws, *ws.find_model("base")).value();
  runtime::initialize_new_parameters(ws, *ws.find_model("base"), base, 11);
  runtime::ParameterBinding lora = pool.add_model(ws, *ws.find_model("lora")).value();
  runtime::initialize_new_parameters(ws, *ws.find_model("lora"), lora, 12);
  // A fresh LoRA B is zero; give the parent adapter non-zero B so the child sees it.
  for (const auto& [name, view] : lora.views())
    if (name.ends_with(".lora.lora.b"))
      for (std::int64_t i = 0; i < view.numel(); ++i) view.f32()[i] = 0.01f * static_cast<float>(i % 7);

  const auto data = test::synthetic_reviews();
  std::vector<std::unique_ptr<runtime::TrainingJob>> jobs;
  std::vector<runtime::TrainingJob*> raw;
  for (const std::string& name : names) {
    const spec::Model& m = *ws.find_model(name);
    runtime::ParameterBinding binding = pool.add_model(ws, m).value();
    if (name != "lora") runtime::initialize_new_parameters(ws, m, binding, m.training->seed);
    auto job = runtime::TrainingJob::create(ws, m, binding, data, *backend);
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

TEST_CASE("in bf16, co-batched training equals training each job alone") {
  const spec::Workspace ws = family();
  const std::vector<std::string> names = {"lora", "prefix", "bottleneck", "prompt", "head"};
  const auto together = train(ws, names, {}, runtime::Precision::kBF16);
  const auto fp32 = train(ws, names);
  float bf16_vs_fp32 = 0;
  for (const std::string& name : names) {
    const auto alone = train(ws, {name}, {}, runtime::Precision::kBF16);
    for (const auto& [param, values] : alone) {
      INFO(name << " " << param);
      REQUIRE(together.count(param));
      REQUIRE(together.at(param).size() == values.size());
      // The same tolerance as in fp32: each row's products round the same operands.
      CHECK(test::difference_to_scale(values, together.at(param)) <= 1e-4f);
      bf16_vs_fp32 = std::max(bf16_vs_fp32, test::difference_to_scale(fp32.at(param), values));
    }
  }
  // bf16 really rounds: its parameters differ from fp32's by more than the co-batching
  // tolerance (and still by little: the same training, a few steps long).
  CHECK(bf16_vs_fp32 > 1e-4f);
  CHECK(bf16_vs_fp32 < 0.1f);
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
  runtime::initialize_new_parameters(ws, *ws.find_model("base"), base, 11);
  const auto data = test::synthetic_reviews();
  std::vector<std::unique_ptr<runtime::TrainingJob>> jobs;
  std::vector<runtime::TrainingJob*> raw;
  for (const std::string name : {"prefix", "hot"}) {
    const spec::Model& m = *ws.find_model(name);
    runtime::ParameterBinding binding = pool.add_model(ws, m).value();
    runtime::initialize_new_parameters(ws, m, binding, m.training->seed);
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
