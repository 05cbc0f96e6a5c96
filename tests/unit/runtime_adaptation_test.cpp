// Gradient checks of the whole transformer for every adaptation method, and the
// properties adapters promise: a fresh adapter is a no-op, merged LoRA equals unmerged.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/model/optimizer.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/prefix_reparam.h"
#include "runtime/model/text_positions.h"
#include "runtime/model/transformer.h"
#include "runtime_family.h"
#include "runtime_gradcheck.h"
#include "runtime_model_gradcheck.h"

using namespace scion;
using namespace scion::runtime;
using scion::test::Family;
using scion::test::TinyBatch;

namespace {

constexpr int kB = 3, kT = 5;

// Checks d loss / d θ for every trainable tensor of `model_name` (a sample of entries
// per tensor) against central differences of the full forward pass. The net is fp32
// end to end, so the loss carries ~1e-6 relative round-off and h = 1e-2 keeps the
// difference quotient's round-off near 1e-4 while its O(h²) truncation stays below
// 1e-3 for these O(1)-scaled random weights; see runtime_gradcheck.h for the tolerance.
void check_model_gradients(Family& family, const std::string& model_name,
                           spec::Objective objective, bool training = false, float h = 1e-2f) {
  const int checked = test::check_parameter_gradients(
      family, model_name, [](const ParameterSpec& p) { return p.trainable; },
      {.objective = objective, .training = training, .max_checks = 24, .h = h});
  CHECK(checked > 0);
}

spec::Adaptation lora_everywhere(float dropout = 0.0f) {
  spec::Adaptation ad;
  ad.set(spec::LoraSpec{.rank = 2,
                        .alpha = 4.0f,
                        .dropout = dropout,
                        .targets = {"q", "k", "v", "o", "ffn_in", "ffn_out"},
                        .layers = {}});
  ad.head = test::two_labels();
  return ad;
}

}  // namespace

TEST_CASE("full training of a base: gradients match finite differences") {
  for (auto norm : {spec::NormPlacement::kPre, spec::NormPlacement::kPost}) {
    SECTION(norm == spec::NormPlacement::kPre ? "pre-norm encoder, masked LM" : "post-norm encoder, masked LM") {
      Family f(test::tiny_architecture(spec::ArchitectureKind::kEncoder, norm));
      f.materialise();
      check_model_gradients(f, "base", spec::Objective::kMaskedLm);
    }
  }
  SECTION("pre-norm decoder, untied LM head, causal LM") {
    auto arch = test::tiny_architecture(spec::ArchitectureKind::kDecoder);
    arch.tie_embeddings = false;
    Family f(arch);
    f.materialise();
    check_model_gradients(f, "base", spec::Objective::kCausalLm);
  }
  SECTION("full fine-tuning descendant with a classifier, trunk dropout on") {
    auto arch = test::tiny_architecture();
    arch.dropout = 0.1f;
    Family f(arch);
    spec::Adaptation ad;
    ad.full = spec::FullSpec{};
    ad.head = test::two_labels(spec::Pooling::kMean);
    f.add("full", "base", ad);
    f.materialise();
    check_model_gradients(f, "full", spec::Objective::kClassification, /*training=*/true);
  }
}

// BERT as imported from Hugging Face: token-type embeddings, exact GELU, BERT's epsilon
// and the pooler between pooling and the head (runtime/model/transformer.h).
spec::Architecture bert_architecture() {
  spec::Architecture a = test::tiny_architecture(spec::ArchitectureKind::kEncoder,
                                                 spec::NormPlacement::kPost);
  a.type_vocab_size = 2;
  a.pooler = true;
  a.activation = spec::Activation::kGeluErf;
  a.norm_eps = 1e-12f;
  a.hf_model_type = "bert";
  return a;
}

TEST_CASE("BERT architecture: gradients match finite differences") {
  SECTION("full fine-tuning with a classifier: token types, pooler, exact GELU") {
    Family f(bert_architecture());
    spec::Adaptation ad;
    ad.full = spec::FullSpec{};
    ad.head = test::two_labels();
    f.add("full", "base", ad);
    f.materialise();
    check_model_gradients(f, "full", spec::Objective::kClassification);
  }
  SECTION("LoRA through the frozen pooler, prefix and prompt") {
    Family f(bert_architecture());
    spec::Adaptation ad = lora_everywhere();
    ad.prefix = spec::PrefixSpec{.virtual_tokens = 2, .layers = {}, .reparam_hidden = 0};
    f.add("lora", "base", ad);
    f.materialise();
    check_model_gradients(f, "lora", spec::Objective::kClassification);
  }
  SECTION("a prefix shifts the text's positions: pos_emb's gradient lands on shifted rows") {
    Family f(bert_architecture());
    spec::Adaptation ad;
    ad.prefix = spec::PrefixSpec{.virtual_tokens = 3, .layers = {}, .reparam_hidden = 0};
    ad.head = test::two_labels();
    spec::Model& m = f.add("shifted", "base", ad);
    m.unfreeze = {"pos_emb.*"};
    f.materialise();
    CHECK(position_shift(f.weights("shifted")) == 3);
    check_model_gradients(f, "shifted", spec::Objective::kClassification);
    // Rows before the shift take no gradient; the text's first row does.
    const Tensor& dpos = *f.grads("shifted").binding().find("pos_emb.weight");
    const int C = f.weights("shifted").arch.width;
    for (int i = 0; i < 3 * C; ++i) CHECK(dpos.f32()[i] == 0.0f);
    double first = 0;
    for (int i = 3 * C; i < 4 * C; ++i) first += std::fabs(dpos.f32()[i]);
    CHECK(first > 0);
  }
  SECTION("masked LM of the base") {
    Family f(bert_architecture());
    f.materialise();
    check_model_gradients(f, "base", spec::Objective::kMaskedLm);
  }
}

// The Llama family as imported from Hugging Face: RMSNorm, rotary positions (with
// linear scaling), the SwiGLU FFN, grouped-query attention (2 heads share 1 key/value
// head) and no biases.
spec::Architecture llama_architecture() {
  spec::Architecture a = test::tiny_llama_architecture();
  a.norm_eps = 1e-6f;
  a.rope_theta = 100.0f;
  a.rope_scale = 2.0f;
  return a;
}

// With every Llama feature at once (RMSNorm of width 8, two query heads sharing one
// rotated key head, the gate's product), the loss curves faster in the first block's
// value weights than h = 1e-2's truncation error allows for: two of 24 sampled entries
// of blk.0.attn_v.weight erred by ~1e-2 with it. Since the gate's LoRA acts (it did not
// while its parameters were misnamed), one prompt entry with a gradient near -69 also
// erred by 9% at h = 3e-3; at h = 1e-3 every entry agrees (the analytic value is the
// limit). The smaller step keeps round-off near 1e-3 (runtime_gradcheck.h), still
// inside tolerance.
constexpr float kLlamaStep = 1e-3f;

TEST_CASE("a LoRA on the gate is the gate's: named after it, its shape, and it acts") {
  // linear_stem once turned "ffn_gate" into "attn_ffn_gate": parameters of the wrong shape
  // that no pass read, so the adapter changed nothing and its gradients were zero.
  Family f(llama_architecture());
  spec::Adaptation ad;
  ad.set(spec::LoraSpec{.rank = 2, .alpha = 4.0f, .targets = {"ffn_gate"}});
  ad.head = test::two_labels(spec::Pooling::kLast);
  f.add("gate", "base", ad);
  f.materialise();
  const Tensor* b = f.params("gate").find("blk.1.ffn_gate.lora.gate.b");
  REQUIRE(b);
  CHECK(b->shape == std::vector<std::int64_t>{16, 2});  // (F, r)
  ModelWeights w = f.weights("gate");
  CHECK(w.blocks[1].adaptations[kFfnGate].size() == 1);
}

TEST_CASE("Llama architecture: gradients match finite differences") {
  SECTION("full training of the base, causal LM") {
    Family f(llama_architecture());
    f.materialise();
    check_model_gradients(f, "base", spec::Objective::kCausalLm, false, kLlamaStep);
  }
  SECTION("LoRA on every linear (the gate too), prefix and prompt, with a classifier") {
    Family f(llama_architecture());
    spec::Adaptation ad = lora_everywhere();
    spec::LoraSpec with_gate = *ad.find<spec::LoraSpec>();
    with_gate.targets.push_back("ffn_gate");
    ad.set(with_gate);
    ad.prefix = spec::PrefixSpec{.virtual_tokens = 2, .layers = {}, .reparam_hidden = 0};
    ad.prompt = spec::PromptSpec{.virtual_tokens = 2, .init = spec::PromptInit::kRandom, .init_text = ""};
    ad.head = test::two_labels(spec::Pooling::kLast);
    f.add("lora", "base", ad);
    f.materialise();
    check_model_gradients(f, "lora", spec::Objective::kClassification, false, kLlamaStep);
  }
  SECTION("LoRA on q and v of a causal LM, one trained layer") {
    Family f(llama_architecture());
    spec::Adaptation ad;
    ad.set(spec::LoraSpec{
        .rank = 2, .alpha = 4.0f, .dropout = 0.0f, .targets = {"q", "v"}, .layers = {1}});
    f.add("lora", "base", ad);
    f.materialise();
    check_model_gradients(f, "lora", spec::Objective::kCausalLm);
  }
}

TEST_CASE("LoRA on every linear: gradients match finite differences") {
  SECTION("pre-norm, with LoRA dropout") {
    Family f(test::tiny_architecture());
    f.add("lora", "base", lora_everywhere(0.2f));
    f.materialise();
    check_model_gradients(f, "lora", spec::Objective::kClassification, true);
  }
  SECTION("post-norm decoder, chosen layer") {
    Family f(test::tiny_architecture(spec::ArchitectureKind::kDecoder, spec::NormPlacement::kPost));
    spec::Adaptation ad = lora_everywhere();
    spec::LoraSpec one_layer = *ad.find<spec::LoraSpec>();
    one_layer.layers = {1};
    ad.set(one_layer);
    ad.head = test::two_labels(spec::Pooling::kLast);
    f.add("lora", "base", ad);
    f.materialise();
    check_model_gradients(f, "lora", spec::Objective::kClassification);
  }
}

TEST_CASE("prefix, prompt, bottleneck, head and BitFit: gradients match finite differences") {
  Family f(test::tiny_architecture(spec::ArchitectureKind::kEncoder, spec::NormPlacement::kPost));
  spec::Adaptation prefix;
  prefix.prefix = spec::PrefixSpec{.virtual_tokens = 3, .layers = {}, .reparam_hidden = 0};
  prefix.head = test::two_labels();
  f.add("prefix", "base", prefix);
  spec::Adaptation prompt;
  prompt.prompt = spec::PromptSpec{.virtual_tokens = 2, .init = spec::PromptInit::kRandom, .init_text = {}};
  prompt.head = test::two_labels(spec::Pooling::kMean);
  f.add("prompt", "base", prompt);
  spec::Adaptation bottleneck;
  bottleneck.set(spec::BottleneckSpec{.reduction = 4, .placement = spec::BottleneckPlacement::kBoth, .layers = {}});
  bottleneck.head = test::two_labels();
  f.add("bottleneck", "base", bottleneck);
  spec::Adaptation head;
  head.head = test::two_labels(spec::Pooling::kLast);
  f.add("head", "base", head);
  spec::Adaptation bitfit;
  bitfit.bitfit = spec::BitfitSpec{};
  bitfit.head = test::two_labels();
  f.add("bitfit", "base", bitfit);
  f.materialise();
  for (const char* name : {"prefix", "prompt", "bottleneck", "head", "bitfit"}) {
    SECTION(name) { check_model_gradients(f, name, spec::Objective::kClassification); }
  }
}

TEST_CASE("LoRA and prefix on one model, and a descendant of a descendant") {
  Family f(test::tiny_architecture());
  spec::Adaptation both = lora_everywhere();
  both.prefix = spec::PrefixSpec{.virtual_tokens = 2, .layers = {1}, .reparam_hidden = 0};
  f.add("both", "base", both);
  spec::Adaptation child;
  child.prefix = spec::PrefixSpec{.virtual_tokens = 2, .layers = {}, .reparam_hidden = 0};
  child.set(
      spec::LoraSpec{.rank = 1, .alpha = 1.0f, .dropout = 0.0f, .targets = {"q"}, .layers = {0}});
  child.prompt = spec::PromptSpec{.virtual_tokens = 1, .init = spec::PromptInit::kRandom, .init_text = {}};
  child.set(spec::BottleneckSpec{.reduction = 2, .placement = spec::BottleneckPlacement::kAfterAttention, .layers = {}});
  f.add("grandchild", "both", child);
  f.materialise();
  SECTION("LoRA + prefix") { check_model_gradients(f, "both", spec::Objective::kClassification); }
  SECTION("grandchild runs its parent's adapters frozen and trains its own") {
    check_model_gradients(f, "grandchild", spec::Objective::kClassification);
    ModelWeights w = f.weights("grandchild");
    CHECK(w.blocks[0].adaptations[kAttnQ].size() == 2);  // parent's + own
    CHECK(!w.blocks[0].adaptations[kAttnQ][0]->trained());
    CHECK(w.blocks[0].adaptations[kAttnQ][1]->trained());
    CHECK(w.prefix_tokens(1) == 4);
    CHECK(w.prefix_tokens(0) == 2);
    CHECK(!w.trunk_trainable);
  }
}

TEST_CASE("fresh LoRA and bottleneck adapters reproduce their parent's outputs exactly") {
  Family f(test::tiny_architecture());
  spec::Adaptation parent;
  parent.head = test::two_labels();
  f.add("parent", "base", parent);
  spec::Adaptation lora = lora_everywhere(0.0f);
  lora.head.reset();
  f.add("lora", "parent", lora);
  spec::Adaptation bottleneck;
  bottleneck.set(spec::BottleneckSpec{.reduction = 2, .placement = spec::BottleneckPlacement::kBoth, .layers = {}});
  f.add("bottleneck", "parent", bottleneck);
  f.materialise(7);
  ModelWeights wp = f.weights("parent"), wl = f.weights("lora"), wb = f.weights("bottleneck");
  const TinyBatch data(kB, kT, 16, 2, 3);
  SegmentedTransformer net(f.backend());
  auto logits = [&](const ModelWeights& w) {
    auto out = net.forward({{data.segment(&w, kB, kT, 0)}, false});
    REQUIRE(out.is_ok());
    const Tensor& t = out->at(0).logits;
    return std::vector<float>(t.f32(), t.f32() + t.numel());
  };
  const auto reference = logits(wp);
  CHECK(logits(wl) == reference);
  CHECK(logits(wb) == reference);
}

TEST_CASE("merged LoRA equals unmerged") {
  Family f(test::tiny_architecture());
  spec::Adaptation parent;
  parent.head = test::two_labels();
  f.add("parent", "base", parent);
  spec::Adaptation lora = lora_everywhere(0.0f);
  lora.head.reset();
  f.add("lora", "parent", lora);
  f.materialise(3);
  f.randomise(17);
  ModelWeights wl = f.weights("lora");
  const TinyBatch data(kB, kT, 16, 2, 3);
  SegmentedTransformer net(f.backend());
  auto out = net.forward({{data.segment(&wl, kB, kT, 0)}, false});
  REQUIRE(out.is_ok());
  const Tensor& t = out->at(0).logits;
  const std::vector<float> unmerged(t.f32(), t.f32() + t.numel());

  // Merge into copies of the trunk linears, bound under the parent's names.
  Family::ParameterCopies copies = f.copy_parameters("parent");
  ParameterBinding& merged = copies.binding;
  REQUIRE(merge_adaptations(f.backend(), f.workspace(), f.model("lora"), f.params("lora"), merged)
              .is_ok());
  auto wm = resolve_model(f.workspace(), f.model("parent"), spec::Objective::kClassification,
                          merged, nullptr);
  REQUIRE(wm.is_ok());
  auto out2 = net.forward({{data.segment(&*wm, kB, kT, 0)}, false});
  REQUIRE(out2.is_ok());
  const Tensor& t2 = out2->at(0).logits;
  REQUIRE(t2.numel() == static_cast<std::int64_t>(unmerged.size()));
  // Merging reassociates (x·Aᵀ)·Bᵀ into x·(B·A)ᵀ: equal up to fp32 rounding of O(1) sums.
  for (std::size_t i = 0; i < unmerged.size(); ++i) CHECK(t2.f32()[i] == Approx(unmerged[i]).margin(1e-4));
  // And the merge changed something: a fresh B would be a no-op, this one is random.
  CHECK(std::memcmp(merged.find("blk.0.attn_q.weight")->data,
                    f.params("parent").find("blk.0.attn_q.weight")->data,
                    merged.find("blk.0.attn_q.weight")->bytes()) != 0);
}

TEST_CASE("resolve_model reports unbound parameters and missing classifiers") {
  Family f(test::tiny_architecture());
  f.materialise();
  auto missing = resolve_model(f.workspace(), f.model("base"), spec::Objective::kMaskedLm,
                               ParameterBinding{}, nullptr);
  REQUIRE(!missing.is_ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find("tok_emb.weight") != std::string::npos);
  auto no_head = resolve_model(f.workspace(), f.model("base"), spec::Objective::kClassification,
                               f.params("base"), &f.grads("base").binding());
  REQUIRE(!no_head.is_ok());
  CHECK(no_head.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("prefix reparametrisation: MLP gradients match finite differences") {
  Family f(test::tiny_architecture());
  spec::Adaptation ad;
  ad.prefix = spec::PrefixSpec{.virtual_tokens = 2, .layers = {0, 1}, .reparam_hidden = 5};
  ad.head = test::two_labels();
  f.add("reparam", "base", ad);
  f.materialise(2);
  f.randomise(3);
  auto created = PrefixReparametrisation::create(f.backend(), f.workspace(), f.model("reparam"), 4);
  REQUIRE(created.is_ok());
  PrefixReparametrisation& reparam = **created;
  for (const TrainableTensor& t : reparam.trainable_tensors())  // larger than the 0.02 init
    for (std::int64_t i = 0; i < t.param.numel(); ++i) t.param.f32()[i] = 0.3f * std::sin(1.7f * i + 0.3f);
  ModelWeights w = f.weights("reparam");
  const TinyBatch data(kB, kT, 16, 2, 9);
  SegmentedTransformer net(f.backend());
  auto loss = [&]() -> double {
    reparam.materialise(f.params("reparam"));
    auto out = net.forward({{data.segment(&w, kB, kT, 0)}, false});
    REQUIRE(out.is_ok());
    return out->at(0).loss;
  };
  loss();
  f.grads("reparam").zero();
  REQUIRE(net.backward().is_ok());
  reparam.zero_grad();
  reparam.backward(f.grads("reparam").binding());
  CHECK(reparam.produces("blk.1.prefix.reparam.values"));
  CHECK(!reparam.produces("head.reparam.weight"));
  for (const TrainableTensor& t : reparam.trainable_tensors()) {
    std::vector<float> analytic(t.grad.f32(), t.grad.f32() + t.grad.numel());
    scion::test::check_gradient(t.name, loss, t.param.f32(), static_cast<std::size_t>(t.param.numel()),
                                analytic.data(), {}, 24);
  }
}

TEST_CASE("unfreeze and freeze globs choose trained trunk parameters: gradients match") {
  Family f(test::tiny_architecture());
  spec::Model& m = f.add("unfrozen", "base", lora_everywhere());
  m.unfreeze = {"blk.1.ln2.*", "ln_f.*", "blk.0.attn_*"};
  m.freeze = {"blk.0.attn_q.*", "blk.0.attn_k.*"};  // freeze applies after unfreeze
  f.materialise();
  ModelWeights w = f.weights("unfrozen");
  CHECK(w.trunk_trainable);
  CHECK(w.blocks[0].linear[kAttnQ].dweight == nullptr);
  CHECK(w.blocks[0].linear[kAttnV].dweight != nullptr);
  CHECK(w.blocks[0].linear[kAttnO].dbias != nullptr);
  CHECK(w.blocks[1].linear[kAttnV].dweight == nullptr);
  check_model_gradients(f, "unfrozen", spec::Objective::kClassification);
}
