// Writes the inputs, parameters, outputs and gradients of small scion models to a
// folder, for tests/cli/test_torch_reference.py to recompute in PyTorch and compare.
//
// Usage: runtime_torch_dump OUT_DIR. Cases: a pre-norm and a post-norm encoder trained
// fully with masked LM (every layer of the stack), and a LoRA + classifier descendant.
// Tensors are raw little-endian float32 files; manifest.json describes each case.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/backend.h"
#include "runtime/model/model_weights.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/transformer.h"

using namespace scion;
using namespace scion::runtime;
namespace fs = std::filesystem;

namespace {

constexpr int kB = 2, kT = 6;

void write_tensor(const fs::path& file, const Tensor& t) {
  std::ofstream out(file, std::ios::binary);
  out.write(static_cast<const char*>(t.data), static_cast<std::streamsize>(t.bytes()));
}

nlohmann::json dump_case(const fs::path& dir, const std::string& name, spec::NormPlacement norm,
                         bool lora) {
  spec::Workspace ws;
  spec::Model base;
  base.name = "base";
  spec::Architecture a;
  a.layers = 2;
  a.width = 16;
  a.heads = 2;
  a.ffn_width = 32;
  a.vocab_size = 32;
  a.max_length = 8;
  a.norm = norm;
  base.architecture = a;
  ws.models.push_back(base);
  spec::Model child;
  child.name = "child";
  child.from = "base";
  child.adaptation.set(spec::LoraSpec{
      .rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q", "v", "ffn_in"}, .layers = {}});
  child.adaptation.head = spec::HeadSpec{.task = spec::HeadTask::kClassification, .labels = {"a", "b", "c"}, .pooling = spec::Pooling::kMean};
  ws.models.push_back(child);
  const spec::Model& model = lora ? ws.models[1] : ws.models[0];

  auto backend = make_cpu_backend();
  ParameterStore store(*backend);
  const ParameterBinding params = store.add_model(ws, model).value();
  std::mt19937_64 rng(17);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (const auto& [pname, view] : params.views()) {
    const bool norm_weight = pname.find("ln") != std::string::npos && pname.ends_with(".weight");
    for (std::int64_t i = 0; i < view.numel(); ++i) view.f32()[i] = (norm_weight ? 1.0f : 0.0f) + normal(rng);
  }
  const auto table = parameter_table(ws, model);
  GradientSet grads = GradientSet::create(table, *backend, model.name).value();
  const spec::Objective objective = lora ? spec::Objective::kClassification : spec::Objective::kMaskedLm;
  auto weights = resolve_model(ws, model, objective, params, &grads.binding());
  if (!weights.is_ok()) throw std::runtime_error(weights.status().message());

  std::vector<std::int32_t> tokens, lengths = {kT, kT - 2}, targets;
  for (int i = 0; i < kB * kT; ++i) tokens.push_back(static_cast<std::int32_t>(rng() % 32));
  if (lora) {
    targets = {2, 0};
  } else {
    for (int b = 0; b < kB; ++b)
      for (int t = 0; t < kT; ++t)
        targets.push_back(t < lengths[b] && t % 2 == 0 ? static_cast<std::int32_t>(rng() % 32) : -100);
  }
  SegmentedTransformer net(*backend);
  FamilyBatch batch{{{&*weights, kB, kT, tokens.data(), lengths.data(), targets.data(), 0}}, false};
  auto out = net.forward(batch);
  if (!out.is_ok()) throw std::runtime_error(out.status().message());
  if (!net.backward().is_ok()) throw std::runtime_error("backward failed");

  fs::create_directories(dir / name);
  nlohmann::json c;
  c["name"] = name;
  c["norm"] = norm == spec::NormPlacement::kPre ? "pre" : "post";
  c["layers"] = a.layers;
  c["width"] = a.width;
  c["heads"] = a.heads;
  c["ffn_width"] = a.ffn_width;
  c["vocab_size"] = a.vocab_size;
  c["objective"] = lora ? "classification" : "masked_lm";
  c["tokens"] = tokens;
  c["lengths"] = lengths;
  c["targets"] = targets;
  c["loss"] = out->at(0).loss;
  c["batch"] = kB;
  c["length"] = kT;
  if (lora) c["lora"] = {{"model", "child"}, {"rank", 2}, {"alpha", 4.0}, {"stems", {"attn_q", "attn_v", "ffn_in"}}};
  write_tensor(dir / name / "logits.bin", out->at(0).logits);
  c["logits_shape"] = out->at(0).logits.shape;
  for (const ParameterSpec& p : table) {
    write_tensor(dir / name / (p.name + ".bin"), *params.find(p.name));
    c["params"][p.name] = p.shape;
    if (p.trainable) {
      write_tensor(dir / name / (p.name + ".grad.bin"), *grads.binding().find(p.name));
      c["trainable"].push_back(p.name);
    }
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  nlohmann::json manifest;
  manifest["cases"].push_back(dump_case(dir, "pre_norm_mlm", spec::NormPlacement::kPre, false));
  manifest["cases"].push_back(dump_case(dir, "post_norm_mlm", spec::NormPlacement::kPost, false));
  manifest["cases"].push_back(dump_case(dir, "lora_classifier", spec::NormPlacement::kPre, true));
  std::ofstream(dir / "manifest.json") << manifest.dump(2);
  return 0;
}
