#include "runtime/model/parameter_binding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/normal_sampler.h"
#include "base/seeded_rng.h"
#include "base/stable_hash.h"
#include "runtime/backend.h"
#include "runtime/model/adaptation_method.h"
#include "runtime/model/model_weights.h"

namespace scion::runtime {

void ParameterBinding::bind_all(const Arena& arena) {
  for (const std::string& name : arena.names()) bind(name, arena.view(name));
}

const Tensor* ParameterBinding::find(const std::string& name) const {
  auto it = views_.find(name);
  return it == views_.end() ? nullptr : &it->second;
}

Result<ParameterBinding> ParameterStore::add_model(const spec::Workspace& workspace,
                                                   const spec::Model& model) {
  return add(workspace, model, nullptr);
}

Result<ParameterBinding> ParameterStore::add_stored_model(
    const spec::Workspace& workspace, const spec::Model& model,
    const std::map<std::string, std::string>& digests) {
  return add(workspace, model, &digests);
}

bool ParameterStore::is_new(const Tensor& view) const {
  if (!last_arena_) return false;
  for (const std::string& name : last_arena_->names())
    if (last_arena_->view(name).data == view.data) return true;
  return false;
}

DType ParameterStore::dtype_of(const ParameterSpec& p) const {
  return !p.trainable && is_trunk_linear_weight(p.name) ? frozen_linear_dtype_ : DType::kF32;
}

std::int64_t ParameterStore::bytes_held() const {
  std::int64_t bytes = 0;
  for (const auto& arena : arenas_)
    for (const std::string& name : arena->names()) bytes += arena->view(name).bytes();
  return bytes;
}

Result<ParameterBinding> ParameterStore::add(const spec::Workspace& workspace,
                                             const spec::Model& model,
                                             const std::map<std::string, std::string>* digests) {
  const std::vector<ParameterSpec> table = parameter_table(workspace, model);
  last_arena_ = nullptr;
  // A value some earlier tensor already holds (same digest) binds that buffer.
  auto digest_of = [&](const ParameterSpec& p) -> const std::string* {
    if (!digests) return nullptr;
    auto it = digests->find(p.name);
    return it == digests->end() || it->second.empty() ? nullptr : &it->second;
  };
  auto key_of = [&](const ParameterSpec& p) { return shares_.canonical({p.introduced_by, p.name}); };
  for (const ParameterSpec& p : table) {
    if (by_author_and_name_.count(key_of(p))) continue;
    const std::string* digest = digest_of(p);
    if (!digest) continue;
    auto held = by_digest_.find(*digest);
    if (held != by_digest_.end() && held->second.dtype == dtype_of(p) &&
        held->second.numel() == Tensor{nullptr, p.shape, DType::kF32, Device::kCpu}.numel())
      by_author_and_name_[key_of(p)] = held->second;
  }
  std::vector<ViewSpec> missing;
  for (const ParameterSpec& p : table)
    if (!by_author_and_name_.count(key_of(p))) missing.push_back({p.name, p.shape, dtype_of(p)});
  if (!missing.empty()) {
    auto arena = Arena::create(missing, *backend_, "the parameters of '" + model.name + "'");
    if (!arena) return arena.status();
    arenas_.push_back(std::make_unique<Arena>(std::move(*arena)));
    // An inherited parameter the model retrains (BitFit, full, unfreeze) starts from the
    // parent's value, found under the parent's author for that name.
    std::map<std::string, std::string> parent_author;
    if (!model.is_base())
      for (const ParameterSpec& p : parameter_table(workspace, *workspace.find_model(model.from)))
        parent_author[p.name] = p.introduced_by;
    for (const ParameterSpec& p : table) {
      if (!arenas_.back()->contains(p.name) || by_author_and_name_.count(key_of(p))) continue;
      const Tensor& view = arenas_.back()->view(p.name);
      auto parent = parent_author.find(p.name);
      if (parent != parent_author.end()) {
        auto inherited = by_author_and_name_.find(shares_.canonical({parent->second, p.name}));
        const bool found = inherited != by_author_and_name_.end();
        if (found && inherited->second.dtype == DType::kF32 && view.dtype == DType::kF32) {
          backend_->copy(view.f32(), inherited->second.f32(), view.numel());
        } else if (found) {  // a bf16-held parent value: converted on the host
          std::vector<std::byte> parent_value = copy_bytes_to_host(*backend_, inherited->second);
          copy_to_device_as(*backend_, view,
                            Tensor{parent_value.data(), view.shape, inherited->second.dtype,
                                   Device::kCpu});
        }
      }
      by_author_and_name_[key_of(p)] = view;
      if (const std::string* digest = digest_of(p)) by_digest_.emplace(*digest, view);
    }
    last_arena_ = arenas_.back().get();
  }
  ParameterBinding binding;
  for (const ParameterSpec& p : table) binding.bind(p.name, by_author_and_name_.at(key_of(p)));
  return binding;
}

namespace {
std::vector<ViewSpec> own_trainable_views(const std::vector<ParameterSpec>& table,
                                          const ParameterBinding& shared) {
  std::vector<ViewSpec> views;
  for (const ParameterSpec& p : table)
    if (p.trainable && !shared.find(p.name)) views.push_back({p.name, p.shape, DType::kF32});
  return views;
}
}  // namespace

Result<GradientSet> GradientSet::create(const std::vector<ParameterSpec>& table, Backend& backend,
                                        const std::string& model, const ParameterBinding& shared) {
  auto arena = Arena::create(own_trainable_views(table, shared), backend,
                             "the gradients of '" + model + "'");
  if (!arena) return arena.status();
  GradientSet set;
  set.arena_ = std::move(*arena);
  set.binding_.bind_all(set.arena_);
  for (const auto& [name, view] : shared.views()) set.binding_.bind(name, view);
  return set;
}

bool is_new_parameter(const std::string& name, const spec::Model& model) {
  if (model.is_base()) return true;
  const std::string m = "." + model.name + ".";
  if (name.find(".prefix" + m) != std::string::npos) return true;
  if (const AdaptationMethod* method = method_of_parameter(name))
    return method->parameter_model(name) == model.name;
  return name.starts_with("prompt" + m) || name.starts_with("head" + m);
}

namespace {

InitRule rule_for(const std::string& name) {
  auto ends = [&](const char* s) { return name.ends_with(s); };
  // The registered methods first: their names carry their model's, which may read like
  // another rule's (a model named "up").
  if (const AdaptationMethod* method = method_of_parameter(name)) return method->init_rule(name);
  if (ends(".bias")) return InitRule::kZeros;
  const bool norm = name.find("ln1.") != std::string::npos || name.find("ln2.") != std::string::npos ||
                    name.starts_with("ln_f.") || name.starts_with("emb_ln.");
  if (norm) return InitRule::kOnes;
  return InitRule::kNormal;
}

}  // namespace

namespace {

// Elements per block of a parallel draw; blocks start at even elements, so a block never
// splits one Box-Muller pair.
constexpr std::int64_t kDrawBlock = std::int64_t{1} << 16;

// x[i] for i in [0, n), as drawing the stream in order would give them: each element
// takes exactly one output of `rng` (a normal pair takes two for two elements), so the
// block from element b draws from rng.skipped(b). Blocks run on the OpenMP team.
template <class Draw>
void draw_in_blocks(float* x, std::int64_t n, base::SeededRng rng, Draw draw) {
  const std::int64_t blocks = (n + kDrawBlock - 1) / kDrawBlock;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t begin = b * kDrawBlock, end = std::min(n, begin + kDrawBlock);
    draw(x + begin, end - begin, rng.skipped(static_cast<std::uint64_t>(begin)));
  }
}

// "blk.N.<linear>.weight" of a method's parameter "blk.N.<linear>.<key>.<model>...", the
// linear weight it adapts; empty for any other name.
std::string adapted_weight(const std::string& name) {
  const std::size_t block_end = name.find('.', 4);
  if (!name.starts_with("blk.") || block_end == std::string::npos) return {};
  for (const char* linear : kLinearStems)
    if (name.compare(block_end + 1, std::strlen(linear) + 1, std::string(linear) + ".") == 0)
      return name.substr(0, block_end + 1) + linear + ".weight";
  return {};
}

// A parameter that starts as the row norms of the weight it adapts (InitRule::
// kWeightRowNorms): W read to the host in whatever dtype it is held, the norms summed in
// double.
void weight_row_norms(Backend& backend, const ParameterBinding& params,
                      const std::string& parameter, float* out, std::int64_t rows) {
  const Tensor* w = params.find(adapted_weight(parameter));
  if (!w) return;  // the table always holds it: resolve_model reports it unbound
  std::vector<std::byte> bytes = copy_bytes_to_host(backend, *w);
  std::vector<float> values(static_cast<std::size_t>(w->numel()));
  convert(Tensor{bytes.data(), w->shape, w->dtype, Device::kCpu},
          Tensor{values.data(), w->shape, DType::kF32, Device::kCpu});
  const std::int64_t cols = w->numel() / rows;
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (std::int64_t c = 0; c < cols; ++c)
      sum += static_cast<double>(values[r * cols + c]) * values[r * cols + c];
    out[r] = static_cast<float>(std::sqrt(sum));
  }
}

}  // namespace

void initialize_new_parameters(Backend& backend, const spec::Workspace& workspace,
                               const spec::Model& model, const ParameterBinding& params,
                               std::uint64_t seed, const SharedModules& shares) {
  std::vector<float> values;  // host staging, reused: one allocation for every tensor
  for (const ParameterSpec& p : parameter_table(workspace, model)) {
    if (p.introduced_by != model.name || !is_new_parameter(p.name, model)) continue;
    if (shares.canonical({p.introduced_by, p.name}).first != model.name) continue;
    const Tensor* view = params.find(p.name);
    if (!view) continue;
    // Drawn on the host, then copied into the backend's memory (as the view's dtype).
    const std::int64_t n = view->numel();
    if (values.size() < static_cast<std::size_t>(n)) values.resize(static_cast<std::size_t>(n));
    float* x = values.data();
    const base::SeededRng rng(seed, base::RngPurpose::kParameterInit, base::stable_hash(p.name));
    switch (rule_for(p.name)) {
      case InitRule::kZeros: std::fill(x, x + n, 0.0f); break;
      case InitRule::kOnes: std::fill(x, x + n, 1.0f); break;
      case InitRule::kWeightRowNorms:
        weight_row_norms(backend, params, p.name, x, n);
        break;
      case InitRule::kNormal:
        draw_in_blocks(x, n, rng, [](float* out, std::int64_t count, base::SeededRng from) {
          base::NormalSampler normal(from);
          for (std::int64_t i = 0; i < count; ++i)
            out[i] = static_cast<float>(0.02 * normal.next());
        });
        break;
      case InitRule::kKaimingUniform: {
        const double bound = 1.0 / std::sqrt(static_cast<double>(p.shape.back()));
        draw_in_blocks(x, n, rng, [bound](float* out, std::int64_t count, base::SeededRng from) {
          for (std::int64_t i = 0; i < count; ++i)
            out[i] = static_cast<float>((2.0 * from.uniform01() - 1.0) * bound);
        });
        break;
      }
    }
    copy_to_device_as(backend, *view, Tensor{x, view->shape, DType::kF32, Device::kCpu});
  }
}

void init_prompt_from_tokens(Backend& backend, const Tensor& prompt, const Tensor& tok_emb,
                            const std::vector<std::int32_t>& ids) {
  const std::int64_t P = prompt.shape[0], C = prompt.shape[1];
  for (std::int64_t p = 0; p < P; ++p) {
    const std::int32_t id = ids[static_cast<std::size_t>(p) % ids.size()];
    backend.copy(prompt.f32() + p * C, tok_emb.f32() + static_cast<std::int64_t>(id) * C, C);
  }
}

}  // namespace scion::runtime
