// W1 — multi-tenant adaptation: many LoRA jobs on one frozen trunk (see BENCHMARKS.md).
//
// Trunk: pre-norm encoder L=4, d=256, h=4, f=1024, T=128, V=260 (the byte tokenizer's
// vocabulary: 256 bytes + 4 specials; BENCHMARKS.md says 256, the extra 4 embedding rows
// change no FLOP count), frozen. Each job: LoRA rank 8, alpha 16 on q and v of every layer
// plus a 2-class head (CLS pooling), its own synthetic labelled dataset (own seed), batch
// 8 sequences of 128 tokens, 20 AdamW steps at lr 1e-3 (weight decay 0.01).
//
// Configurations, interleaved within one run (a, b, c, a, b, c, ...), medians reported:
//   (a) scion co-batched: one FamilyTrainer group of all jobs;
//   (b) scion one job after another: one group of one per job;
//   (c) with --peer: the PyTorch eager peer (bench/peers/w1_torch.py, PEFT-style LoRA,
//       one job after another), a child process in --serve mode.
// Every repetition starts from the same initial values. The program checks that the
// adapters and heads from (a) equal those from (b) within float tolerance and exits 1
// when they do not.
//
// FLOPs per token (frozen trunk; backward only to the inputs, no weight gradients):
//   4 × (trunk linear weights: L × (4d² + 2df)) + 12 × L × T × d (attention: QKᵀ and PV
//   forward, and their four products backward); LoRA and heads are left out (< 1%).
//
// --scaling instead measures co-batched groups of 1, 2, 4, 8, 16 and 32 jobs (one run
// each, --steps steps): tokens/s and seconds per job-step.
//
// --rows-per-pass N sets FamilyTrainer's TrainerOptions::max_rows_per_pass (default: the
// trainer's own; a large N puts a whole group's step in one pass).
//
// Usage: w1_multitenant [--reps N] [--threads N] [--jobs N] [--steps N] [--rows-per-pass N]
//                       [--peer bench/peers/w1_torch.py] [--scaling]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/machine.h"
#include "bench/peer_process.h"
#include "runtime/backend.h"
#include "runtime/data/tokenized_dataset.h"
#include "runtime/parameter_binding.h"
#include "runtime/text/byte_tokenizer.h"
#include "runtime/training/family_trainer.h"

using namespace scion;
using namespace scion::runtime;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kLayers = 4, kWidth = 256, kHeads = 4, kFfn = 1024, kLength = 128;
constexpr int kRank = 8;
constexpr float kAlpha = 16.0f, kLr = 1e-3f, kWeightDecay = 0.01f;
// Co-batched products sum row blocks in another order than solo ones, so gradients differ
// by a few ulps; AdamW divides each gradient by its own running RMS, which turns an ulp
// difference in a near-zero gradient into a visible difference in that value's update
// (at most ~lr a step). 1e-3 of the values' scale is 1/20 of one full step at lr 1e-3 on
// the largest values: a real bug (a wrong row range, a missed gradient) moves whole
// tensors by many steps.
constexpr double kTolerance = 1e-3;

struct Options {
  int reps = 3;
  int threads = 2;
  int jobs = 8;
  int steps = 20;
  int batch = 8;  // rows per job a step; 1 with 32 jobs is BENCHMARKS.md's small-tenant case
  bool scaling = false;
  std::string peer;
  std::string precision = "fp32";
  std::string fp32_matmul = "openblas";
  std::string optimizer = "adamw";  // sgd: plain SGD (no momentum, no decay), update = -lr x gradient
  TrainerOptions trainer;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

spec::Workspace make_workspace(int jobs, int steps, int batch, const std::string& optimizer) {
  spec::Workspace ws;
  spec::Model trunk;
  trunk.name = "trunk";
  spec::Architecture a;  // pre-norm encoder, no dropout, V = the byte tokenizer's 260
  a.layers = kLayers;
  a.width = kWidth;
  a.heads = kHeads;
  a.ffn_width = kFfn;
  a.max_length = kLength;
  trunk.architecture = a;
  ws.models.push_back(trunk);
  for (int j = 0; j < jobs; ++j) {
    spec::Dataset data;
    data.name = "data-" + std::to_string(j);
    data.labels = {"neg", "pos"};
    ws.datasets.push_back(data);
    spec::Model m;
    m.name = "job-" + std::to_string(j);
    m.from = "trunk";
    spec::LoraSpec lora;  // targets q and v of every layer by default
    lora.rank = kRank;
    lora.alpha = kAlpha;
    m.adaptation.lora = lora;
    spec::HeadSpec head;  // CLS pooling
    head.labels = {"neg", "pos"};
    m.adaptation.head = head;
    spec::TrainingSpec t;
    t.dataset = data.name;
    t.steps = steps;
    t.batch_size = batch;
    t.seed = 100 + static_cast<std::uint64_t>(j);
    t.optimizer.lr = kLr;
    t.optimizer.weight_decay = kWeightDecay;
    if (optimizer == "sgd") {
      t.optimizer.kind = spec::OptimizerKind::kSgd;
      t.optimizer.momentum = 0;
      t.optimizer.weight_decay = 0;
    }
    m.training = t;
    ws.models.push_back(m);
  }
  return ws;
}

// One epoch of steps × batch rows that fill T exactly once framed ([CLS] ... [SEP]).
// The label says whether the row has more bytes below 128 than above, so it is learnable.
std::shared_ptr<const data::TokenizedDataset> make_dataset(std::uint64_t seed, int rows) {
  auto data = std::make_shared<data::TokenizedDataset>();
  data->specials = text::ByteTokenizer().special_tokens();
  data->vocab_size = spec::kByteTokenizerVocabSize;
  std::mt19937_64 gen(seed);
  const int content = data::content_capacity(false, kLength);
  for (int r = 0; r < rows; ++r) {
    std::vector<std::int32_t> row(content);
    int low = 0;
    for (auto& t : row) {
      t = static_cast<std::int32_t>(gen() % 256);
      low += t < 128;
    }
    data->rows.push_back(std::move(row));
    data->labels.push_back(2 * low > content ? 1 : 0);
  }
  return data;
}

struct RunResult {
  double seconds = 0;
  std::int64_t tokens = 0;
  std::map<std::string, std::vector<float>> trained;  // every trainable parameter by name
  std::map<std::string, std::vector<float>> gradients;  // of the last step, by name
};

// Trains every job from the same initial values, co-batched (one group) or one after
// another (groups of one). Times FamilyTrainer::run only.
RunResult train(const spec::Workspace& ws,
                const std::vector<std::shared_ptr<const data::TokenizedDataset>>& datasets,
                bool cobatched, const TrainerOptions& options, Backend& backend) {
  ParameterStore pool(backend);
  const spec::Model& trunk = *ws.find_model("trunk");
  const ParameterBinding trunk_params = pool.add_model(ws, trunk).value();
  initialize_new_parameters(backend, ws, trunk, trunk_params, 11);
  std::vector<std::unique_ptr<TrainingJob>> jobs;
  for (std::size_t j = 0; j < datasets.size(); ++j) {
    const spec::Model& m = *ws.find_model("job-" + std::to_string(j));
    const ParameterBinding binding = pool.add_model(ws, m).value();
    initialize_new_parameters(backend, ws, m, binding, m.training->seed);
    auto job = TrainingJob::create(ws, m, binding, datasets[j], backend);
    if (!job) {
      std::fprintf(stderr, "error: %s\n", job.status().message().c_str());
      std::exit(3);
    }
    jobs.push_back(std::move(*job));
  }
  std::vector<std::vector<TrainingJob*>> groups;
  if (cobatched) groups.emplace_back();
  for (auto& job : jobs) {
    if (!cobatched) groups.emplace_back();
    groups.back().push_back(job.get());
  }
  RunResult result;
  TrainerCallbacks callbacks;
  callbacks.on_step = [&](const StepReport& r) {
    result.tokens += r.tokens;
    return Status::ok();
  };
  const auto start = Clock::now();
  for (const auto& group : groups) {
    FamilyTrainer trainer(backend, options);
    const Status s = trainer.run(group, callbacks);
    if (!s.is_ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      std::exit(3);
    }
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& job : jobs)
    for (const ParameterSpec& p : job->table()) {
      if (!p.trainable) continue;
      const Tensor* v = job->parameters().find(p.name);
      result.trained[p.name] = copy_to_host(backend, *v);
      result.gradients[p.name] = copy_to_host(backend, *job->gradients().find(p.name));
    }
  return result;
}

Options parse(int argc, char** argv) {
  Options o;
  bench::BenchOptions(
      "usage: w1_multitenant [--reps N] [--threads N] [--jobs N] [--steps N] [--batch N]\n"
      "                      [--rows-per-pass N]\n"
      "                      [--peer bench/peers/w1_torch.py] [--scaling]\n"
      "                      [--precision fp32|bf16] [--fp32-matmul openblas|onednn]\n"
      "                      [--optimizer adamw|sgd]")
      .number("reps", o.reps)
      .number("threads", o.threads)
      .number("jobs", o.jobs)
      .number("steps", o.steps)
      .number("batch", o.batch)
      .number("rows-per-pass", o.trainer.max_rows_per_pass)
      .text("peer", o.peer)
      .text("precision", o.precision)
      .text("fp32-matmul", o.fp32_matmul)
      .text("optimizer", o.optimizer)
      .flag("scaling", o.scaling)
      .parse(argc, argv);
  if (o.optimizer != "adamw" && o.optimizer != "sgd") {
    std::fprintf(stderr, "error: --optimizer takes adamw or sgd, not '%s'\n", o.optimizer.c_str());
    std::exit(2);
  }
  return o;
}

double flops_per_token() {
  const double linear = kLayers * (4.0 * kWidth * kWidth + 2.0 * kWidth * kFfn);
  return 4.0 * linear + 12.0 * kLayers * kLength * kWidth;
}

std::vector<std::shared_ptr<const data::TokenizedDataset>> make_datasets(int jobs, int steps, int batch) {
  std::vector<std::shared_ptr<const data::TokenizedDataset>> out;
  for (int j = 0; j < jobs; ++j) out.push_back(make_dataset(1000 + j, steps * batch));
  return out;
}

int run_scaling(const Options& opt, Backend& backend) {
  std::printf("w1 scaling: co-batched groups, %d steps per job, batch %d x T %d, threads %d, "
              "rows per pass %lld\n",
              opt.steps, opt.batch, kLength, opt.threads,
              static_cast<long long>(opt.trainer.max_rows_per_pass));
  for (int jobs : {1, 2, 4, 8, 16, 32}) {
    const spec::Workspace ws = make_workspace(jobs, opt.steps, opt.batch, opt.optimizer);
    const RunResult r = train(ws, make_datasets(jobs, opt.steps, opt.batch), true, opt.trainer, backend);
    std::printf("w1 scaling jobs=%d seconds=%.2f tokens=%lld tokens_per_s=%.0f "
                "seconds_per_job_step=%.4f gflops=%.1f\n",
                jobs, r.seconds, static_cast<long long>(r.tokens), r.tokens / r.seconds,
                r.seconds / (static_cast<double>(jobs) * opt.steps),
                r.tokens * flops_per_token() / r.seconds / 1e9);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  auto backend = make_cpu_backend(bench::backend_options(opt.threads, opt.precision, opt.fp32_matmul));
  bench::print_machine("w1");
  std::printf("w1 precision=%s fp32_matmul=%s\n", opt.precision.c_str(), opt.fp32_matmul.c_str());
  if (opt.scaling) return run_scaling(opt, *backend);

  const spec::Workspace ws = make_workspace(opt.jobs, opt.steps, opt.batch, opt.optimizer);
  const auto datasets = make_datasets(opt.jobs, opt.steps, opt.batch);
  std::unique_ptr<scion::bench::PeerProcess> peer;
  if (!opt.peer.empty()) {
    peer = std::make_unique<scion::bench::PeerProcess>(
        opt.peer, std::vector<std::string>{"--threads", std::to_string(opt.threads), "--jobs", std::to_string(opt.jobs), "--steps", std::to_string(opt.steps), "--batch", std::to_string(opt.batch)});
    if (!peer->ready()) {
      std::printf("w1 torch peer unavailable (needs /usr/bin/python3 with torch)\n");
      peer.reset();
    }
  }
  std::vector<double> co_times, seq_times, peer_times;
  RunResult co, seq;
  for (int rep = 0; rep < opt.reps; ++rep) {
    co = train(ws, datasets, true, opt.trainer, *backend);
    co_times.push_back(co.seconds);
    seq = train(ws, datasets, false, opt.trainer, *backend);
    seq_times.push_back(seq.seconds);
    if (peer) peer_times.push_back(peer->request("run", "seconds"));
    std::printf("w1 rep %d: cobatched=%.2f s sequential=%.2f s%s\n", rep, co.seconds, seq.seconds,
                peer ? (" torch=" + std::to_string(peer_times.back()) + " s").c_str() : "");
    std::fflush(stdout);
  }

  // Same adapters: max |a - b| over every trained value, against the values' scale.
  double max_diff = 0, max_abs = 0;
  std::string worst;
  for (const auto& [name, values] : seq.trained) {
    const auto& other = co.trained.at(name);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double diff = std::fabs(values[i] - other[i]);
      if (diff > max_diff) max_diff = diff, worst = name;
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(values[i])));
    }
  }
  const bool same = max_diff <= kTolerance * std::max(max_abs, 1e-3);
  // The last step's gradients, tensor by tensor: max |a - b| / max |b|. After one step
  // both start from the same values, so this is co-batching's own difference.
  double worst_gradient = 0;
  std::string worst_gradient_name;
  for (const auto& [name, values] : seq.gradients) {
    const auto& other = co.gradients.at(name);
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::fabs(values[i] - other[i])));
      scale = std::max(scale, static_cast<double>(std::fabs(values[i])));
    }
    if (scale > 0 && diff / scale > worst_gradient) worst_gradient = diff / scale, worst_gradient_name = name;
  }
  std::printf("w1 check last_step_gradients: max_relative_diff=%.3g (in %s)\n", worst_gradient,
              worst_gradient_name.c_str());
  std::printf("w1 check cobatched_vs_sequential: max_abs_diff=%.3g (in %s) max_abs_value=%.3g "
              "tensors=%zu tolerance=%.0e x max_abs_value %s\n",
              max_diff, worst.c_str(), max_abs, seq.trained.size(), kTolerance, same ? "OK" : "FAILED");

  const double tokens = static_cast<double>(co.tokens);
  const double a = tokens / median(co_times), b = tokens / median(seq_times);
  std::printf("w1 config: jobs=%d steps=%d batch=%d T=%d threads=%d tokens=%.0f flops_per_token=%.4g\n",
              opt.jobs, opt.steps, opt.batch, kLength, opt.threads, tokens, flops_per_token());
  std::printf("w1 scion_cobatched: seconds=%.2f tokens_per_s=%.0f gflops=%.1f\n", median(co_times), a,
              a * flops_per_token() / 1e9);
  std::printf("w1 scion_sequential: seconds=%.2f tokens_per_s=%.0f\n", median(seq_times), b);
  std::printf("w1 ratio cobatched/sequential=%.3f\n", a / b);
  if (peer) {
    const double p = median(peer_times);
    if (p > 0) {
      std::printf("w1 torch_eager_sequential: seconds=%.2f tokens_per_s=%.0f\n", p, tokens / p);
      std::printf("w1 ratio cobatched/torch=%.3f\n", a / (tokens / p));
    } else {
      std::printf("w1 torch peer failed during the run\n");
    }
  }
  return same ? 0 : 1;
}
