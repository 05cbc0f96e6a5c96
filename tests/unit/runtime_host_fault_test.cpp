// The backend seam: model code never dereferences backend memory on the host.
//
// HostFaultBackend (host_fault_backend.h) hands out memory the host cannot read or write,
// while its operations compute exactly what the CPU backend computes. Everything a
// command does with parameters, gradients, optimizer state, inputs and outputs runs on it
// here: co-batched training of a family with every adaptation method (LoRA, prefix with
// and without its MLP, prompt, bottleneck, BitFit, head, full, a grandchild, a share
// unit, gradient accumulation, dropout), interrupted and resumed from checkpoints, the
// commits and the loading of stored parents, then evaluation of the stored family with
// layer dedup. A host dereference anywhere on that path crashes the test (SIGSEGV); host
// memory passed to an operation aborts it. The stored parameters and the evaluated
// probabilities must equal the CPU backend's bit for bit: the same kernels run on the
// same values, only where the bytes live differs. The same again over a stand-in for two
// data-parallel ranks, and with bf16-held frozen weights.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "host_fault_backend.h"
#include "lineage/store.h"
#include "lineage_test_support.h"
#include "runtime/evaluation/family_evaluator.h"
#include "spec_test_workspace.h"
#include "workbench/stored_family.h"
#include "workbench/training.h"

using namespace scion;

namespace {

// Every method, a grandchild (its parent's adapters come from the store) and a share
// unit (prefix and bottleneck hold one head). grad_accumulation 2 everywhere a share
// allows it; dropout on in the trunk and in LoRA.
constexpr const char* kFamily =
    "datasets:\n"
    "  reviews:\n"
    "    path: reviews.jsonl\n"
    "    labels: [negative, positive]\n"
    "models:\n"
    "  base:\n"
    "    architecture: {layers: 2, width: 16, heads: 2, max_length: 24, dropout: 0.1}\n"
    "    train: {data: reviews, objective: classification, steps: 3, batch_size: 4, seed: 1}\n"
    "  lora:\n"
    "    from: base\n"
    "    adapt: {lora: {rank: 2, targets: [q, v], dropout: 0.1}, head: {pooling: mean}}\n"
    "    train: {data: reviews, steps: 4, batch_size: 4, grad_accumulation: 2, seed: 2}\n"
    "  prefix:\n"
    "    from: base\n"
    "    adapt: {prefix: {virtual_tokens: 2}, head: {}}\n"
    "    train: {data: reviews, steps: 4, batch_size: 4, grad_accumulation: 2, seed: 3}\n"
    "  prefix-mlp:\n"
    "    from: base\n"
    "    adapt: {prefix: {virtual_tokens: 2, reparam_hidden: 8}, head: {}}\n"
    "    train: {data: reviews, steps: 4, batch_size: 4, seed: 4}\n"
    "  prompt:\n"
    "    from: base\n"
    "    adapt: {prompt: {virtual_tokens: 2}, head: {}}\n"
    "    train: {data: reviews, steps: 4, batch_size: 4, max_length: 20, seed: 5}\n"
    "  bottleneck:\n"
    "    from: base\n"
    "    adapt: {bottleneck: {reduction: 4, placement: both}, head: {}}\n"
    "    train: {data: reviews, steps: 4, batch_size: 4, grad_accumulation: 2, seed: 6}\n"
    "  probe:\n"
    "    from: base\n"
    "    adapt: {head: {}}\n"
    "    train: {data: reviews, steps: 4, batch_size: 4, seed: 7}\n"
    "  fit:\n"
    "    from: base\n"
    "    adapt: {bitfit: true}\n"
    "    train: {data: reviews, steps: 3, batch_size: 4, grad_accumulation: 2, seed: 8}\n"
    "  tune:\n"
    "    from: base\n"
    "    adapt: {full: true}\n"
    "    train: {data: reviews, steps: 3, batch_size: 4, seed: 9}\n"
    "  grand:\n"
    "    from: lora\n"
    "    adapt: {lora: {rank: 2, targets: [v]}}\n"
    "    train: {data: reviews, steps: 3, batch_size: 4, seed: 10}\n"
    "share:\n"
    "  heads:\n"
    "    models: [prefix, bottleneck]\n"
    "    modules: ['head.$model.*']\n";

const std::vector<std::string> kModels = {"base",       "lora",  "prefix", "prefix-mlp", "prompt",
                                          "bottleneck", "probe", "fit",    "tune",       "grand"};

std::string reviews() {
  const char* words[] = {"good", "bad", "fine film", "awful plot", "great", "dull", "nice", "poor"};
  std::string jsonl;
  for (int i = 0; i < 24; ++i)
    jsonl += std::string("{\"text\": \"") + words[i % 8] + " " + std::to_string(i) +
             "\", \"label\": \"" + (i % 2 == 0 ? "positive" : "negative") + "\"}\n";
  return jsonl;
}

// Interrupts training when a co-batched group reports its step `at_step` (0: never), so
// that its jobs leave checkpoints mid-way.
class InterruptingObserver final : public workbench::TrainingObserver {
 public:
  InterruptingObserver(std::atomic<bool>& interrupted, int at_step)
      : interrupted_(interrupted), at_step_(at_step) {}
  void note(const std::string&) override {}
  void warning(const std::string&) override {}
  void group_started(const std::vector<std::string>&) override {}
  void resuming(const std::string&, std::int64_t) override { ++resumed; }
  void step(const runtime::StepReport& report, std::size_t group_size) override {
    if (group_size > 1 && report.step == at_step_) interrupted_ = true;
  }
  int resumed = 0;

 private:
  std::atomic<bool>& interrupted_;
  int at_step_;
};

// Rank 0 of two whose peer contributes zeros: each step trains half of every batch and
// the sums come back unchanged, so the data-parallel path (gradients all-reduced through
// host copies) runs in one process, the same way on every backend. It reads every value,
// as MPI does, so gradients handed over in backend memory fault here too.
class FirstOfTwoRanks final : public runtime::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Status all_reduce_sum(std::span<float> values) override {
    for (const float v : values) checksum += static_cast<double>(v);
    reduced += values.size();
    return Status::ok();
  }
  Status all_reduce_sum(std::span<double>) override { return Status::ok(); }
  Status agree(const Status& local) override { return local; }
  // The imaginary second rank has no results to send: these tests' family has one trunk
  // (data-parallel waves only) and evaluates without sharding, so gather is not reached.
  Result<std::vector<std::string>> gather(std::string_view) override {
    return Status(StatusCode::kInternal, "FirstOfTwoRanks cannot gather");
  }
  // Reached once per training run, when the ranks choose how gradients are summed
  // (runtime/comm/nccl_reducer.h): the imaginary peer answers as this rank does, so on
  // these backends both take the host path.
  Result<std::vector<std::string>> all_gather(std::string_view local) override {
    return std::vector<std::string>{std::string(local), std::string(local)};
  }
  std::size_t reduced = 0;  // floats summed
  double checksum = 0;      // their sum: the same on every backend
};

struct FamilyRun {
  std::map<std::string, std::string> digests;  // "model/parameter" -> digest
  std::map<std::string, double> final_losses;
  std::vector<std::vector<float>> probabilities;  // per model, texts in order
  int resumed = 0;
};

using BackendMaker = std::function<std::unique_ptr<runtime::Backend>(runtime::Precision)>;

// Trains the family (interrupted when a co-batched group reaches step `interrupt_at`, then
// resumed), reads back what the store holds, and evaluates the stored classifiers on
// `texts`.
FamilyRun run_family(const BackendMaker& make_backend, const std::string& precision,
                     int interrupt_at, const std::vector<std::string>& texts,
                     runtime::Communicator* comm = nullptr) {
  spec::testing::TempWorkspace dir;
  dir.write("reviews.jsonl", reviews());
  // Every recipe in `precision` (so the stored models are those of the spec's recipes).
  std::string spec_text = kFamily;
  for (std::size_t at = spec_text.find("seed:"); at != std::string::npos;
       at = spec_text.find("seed:", at + precision.size() + 20))
    spec_text.insert(at, "precision: " + precision + ", ");
  spec::LoadResult loaded = dir.load(spec_text);
  INFO((loaded.errors.empty() ? "" : loaded.errors.front().to_string()));
  REQUIRE(loaded.workspace.has_value());
  const spec::Workspace& ws = *loaded.workspace;
  lineage::testing::TempDir store_dir;
  auto store = lineage::LineageStore::open(store_dir.path());
  REQUIRE(store.is_ok());

  // Each command its own context, so its own backends, as each `scion` process has.
  runtime::SingleProcessCommunicator alone;
  const auto context = [&] {
    return std::make_unique<workbench::Context>(
        comm ? *comm : alone, store->get(),
        workbench::ContextOptions{.make_backend = make_backend});
  };
  workbench::TrainRequest request;
  request.quiet = true;
  request.ignore_memory_limit = true;
  std::atomic<bool> interrupted{false};
  InterruptingObserver observer(interrupted, interrupt_at);
  auto first = workbench::train(ws, *context(), request, observer, &interrupted);
  REQUIRE(first.is_ok());
  REQUIRE(first->status.code() == StatusCode::kCancelled);
  REQUIRE(!first->checkpointed.empty());

  interrupted = false;
  request.resume = true;
  InterruptingObserver resumed_observer(interrupted, 0);
  auto second = workbench::train(ws, *context(), request, resumed_observer, &interrupted);
  REQUIRE(second.is_ok());
  INFO(second->status.message());
  REQUIRE(second->status.is_ok());
  REQUIRE(second->diverged.empty());

  FamilyRun run;
  run.resumed = resumed_observer.resumed;
  for (const workbench::ModelOutcome& m : second->models)
    if (m.status == workbench::OutcomeStatus::kTrained) run.final_losses[m.name] = m.final_loss;
  for (const std::string& model : kModels) {
    auto params = (*store)->load_parameters(model);
    REQUIRE(params.is_ok());
    REQUIRE(!params->empty());
    for (const auto& [name, value] : *params) run.digests[model + "/" + name] = value.digest;
  }

  // The stored family, evaluated with layer dedup on a backend of the same kind.
  std::unique_ptr<runtime::Backend> backend = make_backend(runtime::Precision::kF32);
  workbench::StoredFamily family(ws, **store, *backend);
  const std::vector<std::string> classifiers(kModels.begin() + 1, kModels.end());
  REQUIRE(family.load(classifiers).is_ok());
  std::vector<runtime::EvaluatedModel> models;
  for (const std::string& name : classifiers) {
    const runtime::EvaluatedModel* m = family.classifier(name);
    REQUIRE(m != nullptr);
    models.push_back(*m);
  }
  runtime::FamilyEvaluator evaluator(*backend);
  auto outputs = evaluator.classify(models, texts, {.share_identical = true});
  REQUIRE(outputs.is_ok());
  for (const auto& per_model : *outputs) {
    std::vector<float>& probabilities = run.probabilities.emplace_back();
    for (const runtime::HeadOutput& c : per_model)
      probabilities.insert(probabilities.end(), c.probabilities.begin(), c.probabilities.end());
  }
  return run;
}

BackendMaker cpu_backends() {
  return [](runtime::Precision precision) {
    return runtime::make_cpu_backend(
        runtime::CpuBackendOptions{.threads = 1, .precision = precision});
  };
}

BackendMaker host_fault_backends() {
  return [](runtime::Precision precision) -> std::unique_ptr<runtime::Backend> {
    return std::make_unique<test::HostFaultBackend>(
        runtime::CpuBackendOptions{.threads = 1, .precision = precision});
  };
}

void check_same(const FamilyRun& fault, const FamilyRun& cpu) {
  CHECK(fault.resumed > 0);  // the checkpoints were read back
  CHECK(fault.resumed == cpu.resumed);
  REQUIRE(fault.digests.size() == cpu.digests.size());
  for (const auto& [name, digest] : cpu.digests) {
    INFO(name);
    CHECK(fault.digests.at(name) == digest);
  }
  CHECK(fault.final_losses == cpu.final_losses);
  REQUIRE(fault.probabilities.size() == cpu.probabilities.size());
  for (std::size_t m = 0; m < cpu.probabilities.size(); ++m) {
    INFO("model " << kModels[m + 1]);
    REQUIRE(fault.probabilities[m].size() == cpu.probabilities[m].size());
    CHECK(std::memcmp(fault.probabilities[m].data(), cpu.probabilities[m].data(),
                      cpu.probabilities[m].size() * sizeof(float)) == 0);
  }
}

const std::vector<std::string> kTexts = {"good 1", "awful plot", "a nice film", "dull", "good 1"};

}  // namespace

TEST_CASE("the backend's memory is never dereferenced on the host", "[runtime][backend]") {
  SECTION("the test backend faults on a host read of its memory") {
    // What makes the rest of this test able to fail: a host read of a device pointer
    // kills the process (here a forked child) with SIGSEGV, while the operations still
    // compute through the shadow mapping.
    test::HostFaultBackend backend(runtime::CpuBackendOptions{.threads = 1});
    auto* x = static_cast<float*>(backend.allocate(4 * sizeof(float)));
    REQUIRE(x != nullptr);
    const float values[4] = {1, 2, 3, 4};
    backend.copy_to_device(x, values, sizeof(values));
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      std::signal(SIGSEGV, SIG_DFL);  // not Catch's handler: die of the fault itself
      const volatile float* device = x;
      _exit(device[0] == 1.0f ? 0 : 1);  // never reached: the read faults
    }
    int wait_status = 0;
    REQUIRE(waitpid(child, &wait_status, 0) == child);
    CHECK(WIFSIGNALED(wait_status));
    CHECK((WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGSEGV));
    CHECK(backend.squared_norm(x, 4) == 30.0);
    float back[4] = {};
    backend.copy_to_host(back, x, sizeof(back));
    CHECK(std::memcmp(back, values, sizeof(values)) == 0);
    backend.deallocate(x);
    CHECK(backend.live_allocations() == 0);
  }
  SECTION("fp32: training, checkpoints, commits and evaluation equal the CPU backend's") {
    const FamilyRun cpu = run_family(cpu_backends(), "fp32", 2, kTexts);
    const FamilyRun fault = run_family(host_fault_backends(), "fp32", 2, kTexts);
    check_same(fault, cpu);
  }
  SECTION("data parallel: gradients cross to the host for the all-reduce and back") {
    FirstOfTwoRanks cpu_comm, fault_comm;
    const FamilyRun cpu = run_family(cpu_backends(), "fp32", 2, kTexts, &cpu_comm);
    const FamilyRun fault = run_family(host_fault_backends(), "fp32", 2, kTexts, &fault_comm);
    CHECK(fault_comm.reduced > 0);
    CHECK(fault_comm.reduced == cpu_comm.reduced);
    CHECK(fault_comm.checksum == cpu_comm.checksum);
    check_same(fault, cpu);
  }
  SECTION("bf16: frozen trunk weights held in bf16 are converted on the way in") {
    const FamilyRun cpu = run_family(cpu_backends(), "bf16", 2, kTexts);
    const FamilyRun fault = run_family(host_fault_backends(), "bf16", 2, kTexts);
    check_same(fault, cpu);
  }
}
