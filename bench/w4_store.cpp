// W4 (docs/benchmarks.md): the lineage store at scale. Builds a store holding a synthetic
// ~100M-parameter trunk (random bytes laid out by runtime::parameter_table), 50 LoRA
// descendants, 10,000 runs with metrics and 1,000,000 test-case results; then reports
// the store's size against trunk + sum of adapters (dedup means a ratio near 1.0) and
// the warm latency of the queries behind `scion lineage tree`, `log` and `show`
// (median of 3 after one warm-up).
//
// Usage: w4_store [STORE_DIR]   (default /tmp/scion-w4; the directory is replaced)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "lineage/digest.h"
#include "lineage/store.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/model/parameter_table.h"

namespace {

using namespace scion;
using Clock = std::chrono::steady_clock;

constexpr int kDescendants = 50;
constexpr int kRuns = 10000;
constexpr int kStepsPerRun = 20;
constexpr int kTestResults = 1000000;

// A base of ~110M parameters (GPT-2-small widths, a 32k vocabulary) and 50 LoRA children.
spec::Workspace synthetic_family() {
  spec::Workspace ws;
  spec::Model trunk;
  trunk.name = "trunk";
  spec::Architecture a;
  a.layers = 12;
  a.width = 768;
  a.heads = 12;
  a.ffn_width = 3072;
  a.vocab_size = 32000;
  a.max_length = 512;
  trunk.architecture = a;
  trunk.recipe_hash = lineage::sha256_hex({});
  ws.models.push_back(trunk);
  for (int i = 0; i < kDescendants; ++i) {
    spec::Model child;
    child.name = "lora-" + std::to_string(i);
    child.from = "trunk";
    child.adaptation.set(spec::LoraSpec{});
    child.recipe_hash = std::string(63, '0') + std::to_string(i % 10);
    ws.models.push_back(child);
  }
  return ws;
}

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> bytes(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(bytes.data() + i, &v, 8);
  }
  return bytes;
}

void check(const Status& status, const char* what) {
  if (!status.is_ok()) {
    std::fprintf(stderr, "w4_store: %s: %s\n", what, status.message().c_str());
    std::exit(3);
  }
}

double median_ms(const std::function<void()>& query) {
  query();  // warm-up: page cache and SQLite cache
  std::vector<double> ms;
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    query();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[1];
}

std::uintmax_t directory_bytes(const std::filesystem::path& dir) {
  std::uintmax_t total = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : "/tmp/scion-w4";
  std::filesystem::remove_all(dir);
  auto opened = lineage::LineageStore::open(dir);
  check(opened.is_ok() ? Status::ok() : opened.status(), "opening the store");
  lineage::LineageStore& store = **opened;
  const spec::Workspace ws = synthetic_family();
  auto started = Clock::now();

  // Trunk: one buffer per tensor, kept for the descendants, which share them.
  const spec::Model& trunk = ws.models[0];
  std::vector<std::vector<std::byte>> trunk_bytes;
  std::vector<lineage::ParameterWrite> trunk_writes;
  std::int64_t trunk_params = 0;
  std::uint64_t seed = 1;
  for (const auto& p : runtime::parameter_table(ws, trunk)) {
    trunk_bytes.push_back(random_bytes(static_cast<std::size_t>(p.numel()) * 4, seed++));
    trunk_params += p.numel();
  }
  std::size_t i = 0;
  for (const auto& p : runtime::parameter_table(ws, trunk)) {
    trunk_writes.push_back(
        {p.name, lineage::DType::kF32, p.shape, trunk_bytes[i++], true, p.introduced_by, {}});
  }
  lineage::ModelRecord trunk_record{
      trunk.name, "", trunk.recipe_hash, nlohmann::json::object(), {{"layers", 12}}};
  auto run =
      store.start_run(trunk_record, {lineage::RunKind::kImport, trunk.recipe_hash, {}, 0, {}});
  check(run.is_ok() ? Status::ok() : run.status(), "starting the import run");
  check(store.commit_model(*run, trunk_record, trunk_writes), "committing the trunk");
  auto trunk_loaded = store.load_parameters("trunk");
  check(trunk_loaded.is_ok() ? Status::ok() : trunk_loaded.status(), "loading the trunk");
  std::printf("trunk: %lld parameters, %.1f MB, written in %.1f s\n",
              static_cast<long long>(trunk_params), trunk_params * 4 / 1e6, seconds_since(started));

  // Descendants: the trunk's tensors by digest (as the runtime passes frozen ones), plus adapters.
  started = Clock::now();
  std::int64_t adapter_bytes = 0;
  for (int d = 1; d <= kDescendants; ++d) {
    const spec::Model& child = ws.models[static_cast<std::size_t>(d)];
    std::vector<std::vector<std::byte>> own;
    std::vector<lineage::ParameterWrite> writes;
    for (const auto& p : runtime::parameter_table(ws, child)) {
      if (p.introduced_by == child.name) {
        own.push_back(random_bytes(static_cast<std::size_t>(p.numel()) * 4, seed++));
        adapter_bytes += p.numel() * 4;
      }
    }
    std::size_t k = 0;
    for (const auto& p : runtime::parameter_table(ws, child)) {
      if (p.introduced_by == child.name) {
        writes.push_back(
            {p.name, lineage::DType::kF32, p.shape, own[k++], true, p.introduced_by, {}});
      } else {
        const auto& t = trunk_loaded->at(p.name);
        writes.push_back({p.name, t.dtype, p.shape, t.bytes, false, p.introduced_by, t.digest});
      }
    }
    lineage::ModelRecord record{
        child.name, "trunk", child.recipe_hash, {{"lora", {{"rank", 8}}}}, {{"layers", 12}}};
    auto child_run = store.start_run(
        record, {lineage::RunKind::kAdapt, child.recipe_hash, {}, 0, {{"lr", 1e-3}}});
    check(child_run.is_ok() ? Status::ok() : child_run.status(), "starting an adapt run");
    check(store.commit_model(*child_run, record, writes), "committing a descendant");
  }
  std::printf("%d LoRA descendants, %.1f MB of adapters, written in %.1f s\n", kDescendants,
              adapter_bytes / 1e6, seconds_since(started));

  // Bulk history. Each API call is its own transaction; durability is not what W4
  // measures, so this connection skips fsync while loading.
  check(store.db().exec("PRAGMA synchronous = OFF"), "bulk-load pragma");
  started = Clock::now();
  for (int r = 0; r < kRuns; ++r) {
    const spec::Model& m = ws.models[static_cast<std::size_t>(r % (kDescendants + 1))];
    lineage::ModelRecord record{m.name, m.from, m.recipe_hash, {}, {}};
    if (m.is_base())
      record.adaptation = nlohmann::json::object();
    else
      record.adaptation = {{"lora", {{"rank", 8}}}};
    record.architecture = {{"layers", 12}};
    auto id = store.start_run(
        record, {lineage::RunKind::kAdapt, m.recipe_hash, {}, static_cast<std::uint64_t>(r), {}});
    check(id.is_ok() ? Status::ok() : id.status(), "starting a run");
    for (int s = 1; s <= kStepsPerRun; ++s) {
      check(store.append_metrics(*id, {s, 2.0 / s, 1e-3, {}}), "appending metrics");
    }
    check(store.finish_run(
              *id, r % 10 == 0 ? lineage::RunStatus::kFailed : lineage::RunStatus::kFinished),
          "finishing a run");
  }
  std::printf("%d runs x %d steps recorded in %.1f s\n", kRuns, kStepsPerRun,
              seconds_since(started));

  started = Clock::now();
  std::vector<lineage::TestCaseResult> batch;
  for (int t = 0; t < kTestResults; ++t) {
    const spec::Model& m = ws.models[static_cast<std::size_t>(t % (kDescendants + 1))];
    batch.push_back({m.name,
                     m.recipe_hash,
                     {},
                     "negation-" + std::to_string(t % 20),
                     t / 1000,
                     "this is not a good movie",
                     "negative",
                     t % 7 ? "negative" : "positive",
                     t % 7 != 0});
    if (batch.size() == 10000) {
      check(store.record_test_results(batch), "recording test results");
      batch.clear();
    }
  }
  std::printf("%d test-case results recorded in %.1f s\n", kTestResults, seconds_since(started));
  check(store.db().exec("PRAGMA wal_checkpoint(TRUNCATE)"), "checkpointing the WAL");

  const std::uintmax_t store_bytes = directory_bytes(dir);
  const double payload = static_cast<double>(trunk_params * 4 + adapter_bytes);
  std::printf("store size: %.1f MB; trunk + adapters: %.1f MB; ratio %.3f\n", store_bytes / 1e6,
              payload / 1e6, store_bytes / payload);
  // The tensors alone (object files + inline bytes) against the same payload: the dedup
  // figure. The rest of lineage.db is the history (runs, metrics, 1M test results).
  auto inline_bytes =
      store.db().query_int("SELECT coalesce(sum(length(inline_bytes)), 0) FROM objects");
  check(inline_bytes.is_ok() ? Status::ok() : inline_bytes.status(), "summing inline objects");
  const double tensor_bytes = static_cast<double>(directory_bytes(dir / "objects") + *inline_bytes);
  std::printf(
      "tensors stored: %.1f MB (files %.1f MB + inline %.1f MB); ratio to trunk + adapters %.3f\n",
      tensor_bytes / 1e6, directory_bytes(dir / "objects") / 1e6, *inline_bytes / 1e6,
      tensor_bytes / payload);
  std::printf("lineage.db: %.1f MB\n", std::filesystem::file_size(dir / "lineage.db") / 1e6);

  const double tree_ms = median_ms([&] {
    check(store.models().is_ok() ? Status::ok() : Status(StatusCode::kInternal, "tree"), "tree");
  });
  const double log_ms = median_ms([&] {
    check(store.runs("", 20).is_ok() ? Status::ok() : Status(StatusCode::kInternal, "log"), "log");
  });
  const double show_ms = median_ms([&] {
    // What `scion lineage show lora-7` reads: ancestry, datasets, every run with its
    // metrics, and the sharing.
    auto models = store.models();
    for (const char* name : {"lora-7", "trunk"}) {
      auto runs = store.runs(name, 0);
      for (const auto& r : *runs) (void)store.run_metrics(r.id);
      (void)store.datasets_of(name);
    }
    (void)store.sharing("lora-7");
  });
  std::printf("warm queries (median of 3): tree %.1f ms, log %.1f ms, show %.1f ms\n", tree_ms,
              log_ms, show_ms);
  return 0;
}
