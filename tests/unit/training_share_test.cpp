// Modules shared by a `share` declaration: one buffer for every member, initialised by
// the first, trained with the gradients of all of them, and a share unit co-batched with
// other jobs trains exactly as the unit alone.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/backend.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/shared_modules.h"
#include "runtime/training/family_trainer.h"
#include "runtime/training/share_group.h"
#include "training_test_data.h"

using namespace scion;

namespace {

// A tiny encoder; a and b share their heads and their LoRA on q; c stands apart.
spec::Workspace family(int steps_of_b = 6) {
  spec::Workspace ws = test::tiny_base_workspace();

  auto descendant = [&](std::string name, std::uint64_t seed, float lr, int batch, int steps,
                        bool prefix) {
    spec::Model m;
    m.name = std::move(name);
    m.from = "base";
    if (prefix) {
      m.adaptation.prefix = spec::PrefixSpec{.virtual_tokens = 2};
    } else {
      m.adaptation.set(spec::LoraSpec{.rank = 2, .alpha = 4, .targets = {"q", "v"}});
    }
    m.adaptation.head = spec::HeadSpec{.labels = {"neg", "pos"}};
    m.training = test::reviews_recipe(seed, lr, batch, steps);
    ws.models.push_back(m);
  };
  descendant("a", 1, 1e-2f, 4, 6, false);
  descendant("b", 2, 5e-3f, 3, steps_of_b, false);
  descendant("c", 3, 1e-2f, 5, 5, true);
  spec::Share share;
  share.name = "ab";
  share.models = {"a", "b"};
  share.modules = {"head.$model.*", "blk.*.attn_q.lora.$model.*"};
  ws.shares.push_back(share);
  return ws;
}


// One training session's state, built as `scion adapt` builds a group.
struct Group {
  explicit Group(const spec::Workspace& ws, const std::vector<std::string>& names, bool with_shares = true)
      : backend(runtime::make_cpu_backend(1)), shares(with_shares ? runtime::SharedModules(ws) : runtime::SharedModules()),
        pool(*backend, shares) {
    runtime::ParameterBinding trunk = pool.add_model(ws, *ws.find_model("base")).value();
    runtime::initialize_new_parameters(*backend, ws, *ws.find_model("base"), trunk, 11);
    for (const std::string& name : names) {
      const spec::Model& m = *ws.find_model(name);
      bindings[name] = pool.add_model(ws, m).value();
      runtime::initialize_new_parameters(*backend, ws, m, bindings[name], m.training->seed, shares);
    }
    if (with_shares && bindings.count("a"))
      share = runtime::ShareGroup::create(ws.training_unit(*ws.find_model("a")), shares, bindings,
                                          *backend).value();
    for (const std::string& name : names) {
      const spec::Model& m = *ws.find_model(name);
      runtime::ShareGroup* group = name == "c" ? nullptr : share.get();
      auto job = runtime::TrainingJob::create(ws, m, bindings[name], data, *backend, group);
      REQUIRE(job.is_ok());
      jobs[name] = std::move(*job);
    }
  }

  std::vector<runtime::TrainingJob*> all() {
    std::vector<runtime::TrainingJob*> out;
    for (auto& [name, job] : jobs) out.push_back(job.get());
    return out;
  }

  // Every trainable parameter of `name`, by name.
  std::map<std::string, std::vector<float>> values(const std::string& name) {
    std::map<std::string, std::vector<float>> out;
    for (const auto& p : jobs.at(name)->table())
      if (p.trainable) {
        const runtime::Tensor* v = bindings.at(name).find(p.name);
        out[p.name] = std::vector<float>(v->f32(), v->f32() + v->numel());
      }
    return out;
  }

  std::shared_ptr<const data::TokenizedDataset> data = test::synthetic_reviews();
  std::unique_ptr<runtime::Backend> backend;
  runtime::SharedModules shares;
  runtime::ParameterStore pool;
  std::map<std::string, runtime::ParameterBinding> bindings;
  std::unique_ptr<runtime::ShareGroup> share;
  std::map<std::string, std::unique_ptr<runtime::TrainingJob>> jobs;
};

const float* data_of(const runtime::ParameterBinding& b, const std::string& name) {
  return b.find(name)->f32();
}

}  // namespace

TEST_CASE("shared modules are one buffer, initialised by the first member in spec order") {
  const spec::Workspace ws = family();
  Group in_order(ws, {"a", "b"});
  Group reversed(ws, {"b", "a"});
  for (Group* g : {&in_order, &reversed}) {
    CHECK(data_of(g->bindings["a"], "head.a.weight") == data_of(g->bindings["b"], "head.b.weight"));
    CHECK(data_of(g->bindings["a"], "blk.1.attn_q.lora.a.a") ==
          data_of(g->bindings["b"], "blk.1.attn_q.lora.b.a"));
    // Not shared: v's LoRA is each member's own.
    CHECK(data_of(g->bindings["a"], "blk.1.attn_v.lora.a.a") !=
          data_of(g->bindings["b"], "blk.1.attn_v.lora.b.a"));
  }
  // Whatever the order the members were added in, a's seed initialised the shared values.
  const auto first = in_order.values("a"), second = reversed.values("a");
  for (const auto& [name, v] : first) {
    INFO(name);
    CHECK(second.at(name) == v);
  }
}

TEST_CASE("a shared module's gradient is the sum of every member's") {
  const spec::Workspace ws = family();
  Group shared(ws, {"a", "b"});
  Group apart(ws, {"a", "b"}, /*with_shares=*/false);
  // Give the unshared models the shared values, so both configurations compute the same.
  for (const auto& [member, binding] : apart.bindings)
    for (const auto& [name, view] : binding.views()) {
      const runtime::Tensor* from = shared.bindings.at(member).find(name);
      std::copy(from->f32(), from->f32() + from->numel(), view.f32());
    }
  runtime::SegmentedTransformer net(*shared.backend);
  auto step = [&](Group& g) {
    std::vector<data::Batch> batches;
    runtime::FamilyBatch family{.training = true};
    for (const char* name : {"a", "b"}) batches.push_back(g.jobs.at(name)->next_batch());
    for (std::size_t i = 0; i < 2; ++i)
      family.segments.push_back(g.jobs.at(i == 0 ? "a" : "b")->segment_for(batches[i], 0));
    for (auto& [name, job] : g.jobs) job->zero_grad();
    if (g.share) g.share->zero_grad();
    REQUIRE(net.forward(family).is_ok());
    REQUIRE(net.backward().is_ok());
  };
  step(shared);
  step(apart);
  for (const std::string& key : {std::string("head.$.weight"), std::string("blk.0.attn_q.lora.$.b")}) {
    auto named = [&](const std::string& m) {
      std::string n = key;
      return n.replace(n.find('$'), 1, m);
    };
    const runtime::Tensor& sum = *shared.share->gradients_for("a").find(named("a"));
    REQUIRE(shared.share->gradients_for("b").find(named("b"))->data == sum.data);
    const runtime::Tensor* ga = apart.jobs.at("a")->gradients().find(named("a"));
    const runtime::Tensor* gb = apart.jobs.at("b")->gradients().find(named("b"));
    REQUIRE((ga && gb));
    double largest = 0;
    for (std::int64_t i = 0; i < sum.numel(); ++i) largest = std::max(largest, double(std::fabs(sum.f32()[i])));
    REQUIRE(largest > 0);  // both members' losses reach the module
    for (std::int64_t i = 0; i < sum.numel(); ++i) {
      INFO(key << " [" << i << "]");
      // One float addition apart: the co-batched pass adds b's term to a's in place.
      CHECK(sum.f32()[i] == Approx(ga->f32()[i] + gb->f32()[i]).margin(1e-6 * largest));
    }
  }
}

TEST_CASE("a share unit co-batched with another job trains as the unit alone") {
  const spec::Workspace ws = family();
  Group together(ws, {"a", "b", "c"});
  Group unit(ws, {"a", "b"});
  Group alone(ws, {"c"});
  runtime::FamilyTrainer trainer(*together.backend);
  REQUIRE(trainer.run(together.all(), {}).is_ok());
  REQUIRE(runtime::FamilyTrainer(*unit.backend).run(unit.all(), {}).is_ok());
  REQUIRE(runtime::FamilyTrainer(*alone.backend).run(alone.all(), {}).is_ok());
  for (const auto& [model, reference] : {std::pair{"a", &unit}, {"b", &unit}, {"c", &alone}}) {
    const auto trained_together = together.values(model);
    for (const auto& [name, values] : reference->values(model)) {
      INFO(model << " " << name);
      REQUIRE(trained_together.at(name).size() == values.size());
      CHECK(test::difference_to_scale(values, trained_together.at(name)) <= 1e-4f);
    }
  }
  // The shared head trained: it moved from its initial (zero) bias.
  const auto head = together.values("a").at("head.a.bias");
  CHECK((head[0] != 0.0f || head[1] != 0.0f));
}

TEST_CASE("members are reported finished together, after the last one's steps") {
  const spec::Workspace ws = family(/*steps_of_b=*/3);
  Group g(ws, {"a", "b"});
  std::vector<std::pair<std::string, std::int64_t>> finished;  // model, share steps then
  std::map<std::string, std::int64_t> steps;
  runtime::TrainerCallbacks callbacks;
  callbacks.on_step = [&](const runtime::StepReport& r) {
    steps[r.job->model().name] = r.step;
    return Status::ok();
  };
  callbacks.on_job_finished = [&](runtime::TrainingJob& job) {
    finished.emplace_back(job.model().name, g.share->steps_done());
    return Status::ok();
  };
  REQUIRE(runtime::FamilyTrainer(*g.backend).run(g.all(), callbacks).is_ok());
  CHECK(steps["a"] == 6);
  CHECK(steps["b"] == 3);  // b left the batch after its own steps
  REQUIRE(finished.size() == 2);
  for (const auto& [model, share_steps] : finished) {
    INFO(model);
    CHECK(share_steps == 6);  // reported once the shared modules had all their updates
  }
}
