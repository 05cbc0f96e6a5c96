// W1 — multi-tenant adaptation: many LoRA jobs on one frozen trunk (see docs/benchmarks.md).
//
// Trunk: pre-norm encoder L=4, d=256, h=4, f=1024, T=128, V=260 (the byte tokenizer's
// vocabulary: 256 bytes + 4 specials; docs/benchmarks.md says 256, the extra 4 embedding rows
// change no FLOP count), frozen. Each job: LoRA rank 8, alpha 16 on q and v of every layer
// plus a 2-class head (CLS pooling), its own synthetic labelled dataset (own seed), batch
// 8 sequences of 128 tokens, 20 AdamW steps at lr 1e-3 (weight decay 0.01).
//
// Configurations, interleaved within one run (a, b, c, a, b, c, ...), medians reported:
//   (a) scion co-batched: one FamilyTrainer group of all jobs;
//   (b) scion one job after another: one group of one per job;
//   (c) with --peer: the PyTorch eager peer (bench/peers/w1_torch.py, PEFT-style LoRA,
//       one job after another), a child process in --serve mode.
// Every repetition starts from the same initial values. The program checks that (a)
// trains what (b) trains (below, before the tolerance's derivation) and exits 1 when it
// does not.
//
// Figures per configuration (docs/benchmarks.md, "Like with like"): tokens/s over the timed
// trainings (FamilyTrainer::run, setup left out), the steady state (the median rate of a
// step over every group's steps after its first, a step being every active job's one
// step), and once for the process, the time to the first step (process start to the end
// of the first training's first step). The peer reports the same: its timed steps, its
// median job step after each job's first, and its own time to its first step.
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
// --profile, after the timed reps, trains once more co-batched and once more one job after
// another on a backend that times every operation by class (runtime/profiling_backend.h;
// on a GPU each operation is waited for, so these runs are slower than the timed ones)
// and prints the classes and how many backend operations a job-step took: on a GPU, where
// small jobs are bound by launches, the count is what co-batching saves.
//
// --optimizer sgd trains with plain SGD (no momentum, no weight decay) instead of AdamW:
// an update proportional to the gradient, which shows what AdamW's normalisation adds.
//
// --device cuda runs every configuration on the GPU (bench/device.h; the PyTorch peer stays
// on the CPU, so --peer is refused there). Every timed run ends with a wait for the device.
// The bit-for-bit checks hold there too: a job's products have the same shapes (so the
// same cuBLASLt algorithms) in the configurations they compare, and no kernel uses atomics.
//
// Usage: w1_multitenant [--device cpu|cuda] [--reps N] [--threads N] [--jobs N] [--steps N]
//                       [--batch N] [--rows-per-pass N] [--peer bench/peers/w1_torch.py]
//                       [--peer-python PYTHON] [--scaling]
//                       [--precision fp32|bf16] [--fp32-matmul auto|openblas|onednn]
//                       [--optimizer adamw|sgd]

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
#include "bench/device.h"
#include "bench/machine.h"
#include "bench/peer_process.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/backend.h"
#include "runtime/data/tokenized_dataset.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/process_clock.h"
#include "runtime/profiling_backend.h"
#include "runtime/text/byte_tokenizer.h"
#include "runtime/training/family_trainer.h"

using namespace scion;
using namespace scion::runtime;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kLayers = 4, kWidth = 256, kHeads = 4, kFfn = 1024, kLength = 128;
constexpr int kRank = 8;
constexpr float kAlpha = 16.0f, kLr = 1e-3f, kWeightDecay = 0.01f;
// The check (bench/README.md, "Many small tenants": why these and not one tolerance on
// the trained values). A job's rows give other bits in a product of another height:
// OpenBLAS computes the last rows of a product (and of each thread's block) with an edge
// kernel that sums in another order, so a job alone (its own 128-row product at batch 1)
// and co-batched (inside a taller one) differ by rounding. AdamW divides each gradient by
// its own running RMS, so a gradient near zero that rounding moves, or flips, moves its
// value by up to 2 lr a step: after 20 steps a trained value may differ by tens of lr with
// no defect at all, and no tolerance on trained values is both sound and tight. So:
//   exact checks: (1) co-batched with passes of one job each (the products alone has)
//   equals one job after another bit for bit; (2) a job's trained values are the same
//   bits when every other job of its group trains on other rows (same layout, so the same
//   kernel paths);
//   gradients of the first step, co-batched against alone from the same values, tensor by
//   tensor, max |a - b| / max |b|: in fp32 within gamma_n = n u / (1 - n u), Higham's bound
//   on reordering a sum of n terms, for the longest sum in the model (n = f = 1024,
//   u = 2^-24: 6.1e-5); in bf16 within what bf16 itself moves the same gradients from
//   fp32 (a job alone in each): co-batching can only flip the rounding of some operands,
//   bf16 rounds all of them.
constexpr double kLongestSum = kFfn;  // the FFN's second product sums f = 1024 terms
const double kGammaF32 =
    kLongestSum * std::ldexp(1.0, -24) / (1 - kLongestSum * std::ldexp(1.0, -24));

struct Options {
  std::string device = "cpu";
  int reps = 3;
  int threads = 2;
  int jobs = 8;
  int steps = 20;
  int batch = 8;  // rows per job a step; 1 with 32 jobs is docs/benchmarks.md's small-tenant case
  bool scaling = false;
  bool profile = false;  // after the reps, one more training of each kind, timed by class
  std::string peer;
  std::string peer_python;
  std::string precision = "fp32";
  std::string fp32_matmul = "auto";
  // sgd: plain SGD (no momentum, no decay), an update of -lr x the gradient
  std::string optimizer = "adamw";
  TrainerOptions trainer;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
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
    m.adaptation.set(lora);
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
  std::vector<double> later_step_rates;  // tokens/s of every group's steps after its first
  std::map<std::string, std::vector<float>> trained;  // every trainable parameter by name
  std::map<std::string, std::vector<float>> gradients;  // of the last step, by name
};

// Seconds from the process's start to the end of its first training's first step.
double first_step_seconds = 0;

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
  const Tensor& any = trunk_params.views().begin()->second;
  bench::wait_for_device(backend, any);
  const auto start = Clock::now();
  for (const auto& group : groups) {
    FamilyTrainer trainer(backend, options);
    const Status s = trainer.run(group, callbacks);
    if (!s.is_ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      std::exit(3);
    }
    const std::vector<StepTiming>& steps = trainer.step_timings();
    for (std::size_t i = 1; i < steps.size(); ++i)
      result.later_step_rates.push_back(static_cast<double>(steps[i].tokens) / steps[i].seconds);
    if (first_step_seconds == 0) first_step_seconds = trainer.first_step_end().value_or(0);
  }
  bench::wait_for_device(backend, any);
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (const std::string error = backend.error(); !error.empty()) {
    std::fprintf(stderr, "error: the backend failed: %s\n", error.c_str());
    std::exit(3);
  }
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
      "usage: w1_multitenant [--device cpu|cuda] [--reps N] [--threads N] [--jobs N] [--steps N]\n"
      "                      [--batch N]\n"
      "                      [--rows-per-pass N]\n"
      "                      [--peer bench/peers/w1_torch.py] [--peer-python PYTHON] [--scaling]\n"
      "                      [--precision fp32|bf16] [--fp32-matmul auto|openblas|onednn]\n"
      "                      [--optimizer adamw|sgd] [--profile]")
      .text("device", o.device)
      .number("reps", o.reps)
      .number("threads", o.threads)
      .number("jobs", o.jobs)
      .number("steps", o.steps)
      .number("batch", o.batch)
      .number("rows-per-pass", o.trainer.max_rows_per_pass)
      .text("peer", o.peer)
      .text("peer-python", o.peer_python)
      .text("precision", o.precision)
      .text("fp32-matmul", o.fp32_matmul)
      .text("optimizer", o.optimizer)
      .flag("scaling", o.scaling)
      .flag("profile", o.profile)
      .parse(argc, argv);
  if (o.device == "cuda" && !o.peer.empty()) {
    std::fprintf(
        stderr,
        "error: --peer runs the PyTorch peer on the CPU; leave it out with --device cuda\n");
    std::exit(2);
  }
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

// The same rows with other bytes and the other label: every row still fills T, so a pass
// holds the same layout of rows.
std::shared_ptr<const data::TokenizedDataset> other_values(const data::TokenizedDataset& data) {
  auto other = std::make_shared<data::TokenizedDataset>(data);
  for (auto& row : other->rows)
    for (auto& t : row) t = (t + 1) % 256;
  for (auto& label : other->labels) label = 1 - label;
  return other;
}

// Tensor by tensor, max |a - b| / max |b| over `b`'s tensors; the worst and its name.
std::pair<double, std::string> worst_relative(const std::map<std::string, std::vector<float>>& a,
                                              const std::map<std::string, std::vector<float>>& b) {
  std::pair<double, std::string> worst{0, ""};
  for (const auto& [name, values] : b) {
    const auto& other = a.at(name);
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::fabs(values[i] - other[i])));
      scale = std::max(scale, static_cast<double>(std::fabs(values[i])));
    }
    if (scale > 0 && diff / scale > worst.first) worst = {diff / scale, name};
  }
  return worst;
}

// The checks of the header comment; prints one line each, true when all pass.
bool run_checks(const Options& opt, const spec::Workspace& ws,
                const std::vector<std::shared_ptr<const data::TokenizedDataset>>& datasets,
                const RunResult& co, const RunResult& seq, Backend& backend) {
  // Reported, not checked: how far AdamW carried the rounding, in steps of lr.
  double max_diff = 0;
  std::string worst;
  for (const auto& [name, values] : seq.trained)
    for (std::size_t i = 0; i < values.size(); ++i)
      if (const double d = std::fabs(values[i] - co.trained.at(name)[i]); d > max_diff)
        max_diff = d, worst = name;
  std::printf(
      "w1 trained values cobatched vs sequential: max_abs_diff=%.3g (%.2f lr, in %s), not a "
      "check (see the header comment)\n",
      max_diff, max_diff / kLr, worst.c_str());

  TrainerOptions one_job_passes = opt.trainer;
  one_job_passes.max_rows_per_pass = static_cast<std::int64_t>(opt.batch) * kLength;
  const bool passes_exact =
      train(ws, datasets, true, one_job_passes, backend).trained == seq.trained;
  std::printf("w1 check cobatched_in_one_job_passes == sequential, bit for bit: %s\n",
              passes_exact ? "OK" : "FAILED");

  auto others_changed = datasets;
  for (std::size_t j = 1; j < others_changed.size(); ++j)
    others_changed[j] = other_values(*datasets[j]);
  const RunResult changed = train(ws, others_changed, true, opt.trainer, backend);
  bool isolated = true;
  for (const auto& [name, values] : co.trained)
    if (name.find(".job-0.") != std::string::npos || name.starts_with("head.job-0."))
      isolated = isolated && changed.trained.at(name) == values;
  std::printf("w1 check job-0 unchanged when the other jobs train on other rows, bit for bit: %s\n",
              isolated ? "OK" : "FAILED");

  const spec::Workspace one_step = make_workspace(opt.jobs, 1, opt.batch, opt.optimizer);
  const RunResult co1 = train(one_step, datasets, true, opt.trainer, backend);
  const RunResult seq1 = train(one_step, datasets, false, opt.trainer, backend);
  const auto [gradient_diff, gradient_worst] = worst_relative(co1.gradients, seq1.gradients);
  double tolerance = kGammaF32;
  std::string why = "gamma_1024 in fp32";
  if (opt.precision == "bf16") {
    auto fp32 = bench::make_backend(opt.device, opt.threads, "fp32", opt.fp32_matmul);
    const RunResult fp32_seq1 = train(one_step, datasets, false, opt.trainer, *fp32);
    tolerance = worst_relative(fp32_seq1.gradients, seq1.gradients).first;
    why = "bf16 alone vs fp32 alone";
  }
  const bool gradients_close = gradient_diff <= tolerance;
  std::printf(
      "w1 check step-1 gradients cobatched vs sequential: max_relative_diff=%.3g (in %s) "
      "tolerance=%.3g (%s) %s\n",
      gradient_diff, gradient_worst.c_str(), tolerance, why.c_str(),
      gradients_close ? "OK" : "FAILED");
  return passes_exact && isolated && gradients_close;
}

}  // namespace

// --profile (see the header comment).
void print_profiles(const Options& opt, const spec::Workspace& ws,
                    const std::vector<std::shared_ptr<const data::TokenizedDataset>>& datasets) {
  for (const bool cobatched : {true, false}) {
    OpProfile profile;
    auto profiled = make_profiling_backend(
        bench::make_backend(opt.device, opt.threads, opt.precision, opt.fp32_matmul), profile);
    train(ws, datasets, cobatched, opt.trainer, *profiled);
    std::int64_t calls = 0;
    std::printf("w1 profile %s (seconds/calls, the whole training with its setup%s):",
                cobatched ? "cobatched" : "sequential",
                profile.waited_per_operation ? ", each operation waited for" : "");
    for (int c = 0; c < kOpClasses; ++c) {
      const OpProfile::Entry& e = profile.entry(static_cast<OpClass>(c));
      calls += e.calls;
      if (e.calls > 0) std::printf(" %s=%.3fs/%lld", op_class_name(static_cast<OpClass>(c)), e.seconds,
                                   static_cast<long long>(e.calls));
    }
    std::printf("; backend operations per job-step=%.0f\n",
                static_cast<double>(calls) / (static_cast<double>(opt.jobs) * opt.steps));
  }
}

int main(int argc, char** argv) {
  scion::bench::use_scions_openmp_wait(argv);
  const Options opt = parse(argc, argv);
  auto backend = bench::make_backend(opt.device, opt.threads, opt.precision, opt.fp32_matmul);
  bench::print_device("w1", opt.device);
  std::printf("w1 device=%s precision=%s fp32_matmul=%s\n", opt.device.c_str(),
              opt.precision.c_str(), opt.device == "cuda" ? "-" : opt.fp32_matmul.c_str());
  if (opt.scaling) return run_scaling(opt, *backend);

  const spec::Workspace ws = make_workspace(opt.jobs, opt.steps, opt.batch, opt.optimizer);
  const auto datasets = make_datasets(opt.jobs, opt.steps, opt.batch);
  std::unique_ptr<scion::bench::PeerProcess> peer;
  std::vector<double> co_times, seq_times, peer_times, co_rates, seq_rates, peer_steps;
  RunResult co, seq;
  for (int rep = 0; rep < opt.reps; ++rep) {
    co = train(ws, datasets, true, opt.trainer, *backend);
    co_times.push_back(co.seconds);
    co_rates.insert(co_rates.end(), co.later_step_rates.begin(), co.later_step_rates.end());
    seq = train(ws, datasets, false, opt.trainer, *backend);
    seq_times.push_back(seq.seconds);
    seq_rates.insert(seq_rates.end(), seq.later_step_rates.begin(), seq.later_step_rates.end());
    // The peer starts after scion's first training, so that scion's time to the first step
    // is its own.
    if (rep == 0 && !opt.peer.empty()) {
      const std::string python =
          opt.peer_python.empty() ? scion::bench::default_peer_python(opt.peer) : opt.peer_python;
      peer = std::make_unique<scion::bench::PeerProcess>(
          python, opt.peer,
          std::vector<std::string>{"--threads", std::to_string(opt.threads), "--jobs",
                                   std::to_string(opt.jobs), "--steps", std::to_string(opt.steps),
                                   "--batch", std::to_string(opt.batch), "--autocast",
                                   opt.precision == "bf16" ? "bf16" : "none"});
      if (!peer->ready()) {
        std::printf("w1 torch peer unavailable (needs %s with torch)\n", python.c_str());
        peer.reset();
      }
    }
    if (peer) {
      const std::string answer = peer->request_line("run");
      peer_times.push_back(scion::bench::PeerProcess::value_of(answer, "seconds"));
      peer_steps.push_back(scion::bench::PeerProcess::value_of(answer, "step_seconds"));
    }
    std::printf("w1 rep %d: cobatched=%.2f s sequential=%.2f s%s\n", rep, co.seconds, seq.seconds,
                peer ? (" torch=" + std::to_string(peer_times.back()) + " s").c_str() : "");
    std::fflush(stdout);
  }

  if (opt.profile) print_profiles(opt, ws, datasets);
  const bool same = run_checks(opt, ws, datasets, co, seq, *backend);
  const double tokens = static_cast<double>(co.tokens);
  const double a = tokens / median(co_times), b = tokens / median(seq_times);
  std::printf("w1 config: jobs=%d steps=%d batch=%d T=%d threads=%d tokens=%.0f flops_per_token=%.4g\n",
              opt.jobs, opt.steps, opt.batch, kLength, opt.threads, tokens, flops_per_token());
  std::printf("w1 scion_cobatched: seconds=%.2f tokens_per_s=%.0f steady_tokens_per_s=%.0f "
              "gflops=%.1f\n",
              median(co_times), a, median(co_rates), a * flops_per_token() / 1e9);
  std::printf("w1 scion_sequential: seconds=%.2f tokens_per_s=%.0f steady_tokens_per_s=%.0f\n",
              median(seq_times), b, median(seq_rates));
  std::printf("w1 scion first_step_seconds=%.2f (process start to the end of its first step)\n",
              first_step_seconds);
  std::printf("w1 ratio cobatched/sequential=%.3f (steady %.3f)\n", a / b,
              median(co_rates) / median(seq_rates));
  if (peer) {
    const double p = median(peer_times), step = median(peer_steps);
    const double job_step_tokens = static_cast<double>(opt.batch) * kLength;
    if (p > 0 && step > 0) {
      std::printf("w1 torch_%s_sequential: seconds=%.2f tokens_per_s=%.0f steady_tokens_per_s=%.0f "
                  "first_step_seconds=%.2f\n",
                  opt.precision == "bf16" ? "autocast_bf16" : "eager", p, tokens / p,
                  job_step_tokens / step, peer->ready_value("first_step_seconds"));
      std::printf("w1 ratio cobatched/torch=%.3f (steady %.3f)\n", a / (tokens / p),
                  median(co_rates) / (job_step_tokens / step));
    } else {
      std::printf("w1 torch peer failed during the run\n");
    }
  }
  return same ? 0 : 1;
}
