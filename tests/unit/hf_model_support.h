// Test support: a Hugging Face folder (BERT, RoBERTa, GPT-2) loaded as scion loads it (config.json through
// spec::read_hf_model_folder, weights through lineage::read_hf_checkpoint and the name
// table, tokenizer.json through text::make_tokenizer), with a classification descendant,
// and the outputs the parity tests compare with transformers'.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "lineage/dtype.h"
#include "lineage/env.h"
#include "lineage/hf_checkpoint.h"
#include "lineage/safetensors.h"
#include "runtime/backend.h"
#include "runtime/model/model_weights.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/transformer.h"
#include "runtime/text/tokenizer.h"
#include "spec/hf_model_folder.h"

namespace scion::test {

class HfBert {
 public:
  // `labels` > 0 adds a descendant "classifier" with a head of that many labels (zero
  // until load_classifier()).
  explicit HfBert(const std::filesystem::path& folder, int labels = 0)
      : backend_(runtime::make_cpu_backend()), store_(*backend_) {
    auto read = spec::read_hf_model_folder(folder, folder.string());
    if (!read.is_ok()) throw std::runtime_error(read.status().message());
    spec::Model base;
    base.name = "base";
    base.architecture = read->architecture;
    base.import_path = folder.string();
    ws_.models.push_back(base);
    if (labels > 0) {
      spec::Model child;
      child.name = "classifier";
      child.from = "base";
      child.adaptation.head = spec::HeadSpec{};
      for (int k = 0; k < labels; ++k) child.adaptation.head->labels.push_back(std::to_string(k));
      ws_.models.push_back(child);
    }
    auto checkpoint = lineage::read_hf_checkpoint(lineage::default_env(), folder,
                                                  read->architecture.hf_model_type);
    if (!checkpoint.is_ok()) throw std::runtime_error(checkpoint.status().message());
    if (!checkpoint->problems.empty()) throw std::runtime_error(checkpoint->problems.front());
    notes_ = checkpoint->notes;
    base_ = store_.add_model(ws_, ws_.models[0]).value();
    const auto table = runtime::parameter_table(ws_, ws_.models[0]);
    std::map<std::string, const lineage::SafetensorsTensor*> by_name;
    for (const auto& t : checkpoint->contents.tensors) by_name[t.name] = &t;
    for (const auto& p : table) {
      auto it = by_name.find(p.name);
      if (it == by_name.end()) throw std::runtime_error("missing " + p.name);
      if (it->second->shape != p.shape) throw std::runtime_error("misshapen " + p.name);
      fill(*base_.find(p.name), *it->second);
      by_name.erase(it);
    }
    if (!by_name.empty()) throw std::runtime_error("extra " + by_name.begin()->first);
    if (labels > 0) classifier_ = store_.add_model(ws_, ws_.models[1]).value();
    auto tokenizer = text::make_tokenizer(read->architecture.tokenizer, "/");
    if (!tokenizer.is_ok()) throw std::runtime_error(tokenizer.status().message());
    tokenizer_ = std::move(tokenizer).value();
  }

  // classifier.weight / classifier.bias of a BertForSequenceClassification.
  void load_classifier(const std::filesystem::path& file) {
    auto read = lineage::read_safetensors(lineage::default_env(), file);
    if (!read.is_ok()) throw std::runtime_error(read.status().message());
    for (const auto& t : read->contents.tensors)
      fill(*classifier_.find(t.name == "classifier.weight" ? "head.classifier.weight"
                                                           : "head.classifier.bias"),
           t);
  }

  // RoBERTa's classification head (RobertaForSequenceClassification.classifier): its
  // dense + tanh is scion's pooler, its out_proj the head.
  void load_roberta_classifier(const std::filesystem::path& file) {
    auto read = lineage::read_safetensors(lineage::default_env(), file);
    if (!read.is_ok()) throw std::runtime_error(read.status().message());
    for (const auto& t : read->contents.tensors) {
      if (t.name == "classifier.out_proj.weight") fill(*classifier_.find("head.classifier.weight"), t);
      if (t.name == "classifier.out_proj.bias") fill(*classifier_.find("head.classifier.bias"), t);
      if (t.name == "classifier.dense.weight") pooler_weight_ = lineage::to_float32(t.dtype, t.bytes);
      if (t.name == "classifier.dense.bias") pooler_bias_ = lineage::to_float32(t.dtype, t.bytes);
    }
  }

  const text::Tokenizer& tokenizer() const { return *tokenizer_; }
  const spec::Architecture& architecture() const { return ws_.models[0].architecture.value(); }
  const std::vector<std::string>& notes() const { return notes_; }

  // [CLS] ids [SEP] of each text, as the batcher frames them.
  std::vector<std::vector<std::int32_t>> framed(const std::vector<std::string>& texts) const {
    std::vector<std::vector<std::int32_t>> out;
    for (const std::string& t : texts) {
      std::vector<std::int32_t> ids{tokenizer_->special_tokens().cls};
      for (std::int32_t id : tokenizer_->encode(t)) ids.push_back(id);
      ids.push_back(tokenizer_->special_tokens().sep);
      out.push_back(std::move(ids));
    }
    return out;
  }

  enum class Output { kTokenLogits, kClsHidden, kPoolerOutput, kClassifierLogits };

  // The outputs for every text, padded to the longest in one batch: (B, T, V) token
  // logits (hidden states times the word embeddings), or (B, C) / (B, K) rows.
  std::vector<float> run(const std::vector<std::vector<std::int32_t>>& rows, Output output) {
    const int B = static_cast<int>(rows.size());
    int T = 0;
    for (const auto& r : rows) T = std::max<int>(T, static_cast<int>(r.size()));
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(B) * T, tokenizer_->special_tokens().pad);
    std::vector<std::int32_t> lengths;
    for (int b = 0; b < B; ++b) {
      std::copy(rows[b].begin(), rows[b].end(), tokens.begin() + static_cast<std::ptrdiff_t>(b) * T);
      lengths.push_back(static_cast<std::int32_t>(rows[b].size()));
    }
    const bool lm = output == Output::kTokenLogits;
    const spec::Model& model = ws_.models[lm ? 0 : 1];
    const bool decoder = architecture().kind == spec::ArchitectureKind::kDecoder;
    const spec::Objective objective = !lm      ? spec::Objective::kClassification
                                      : decoder ? spec::Objective::kCausalLm
                                                : spec::Objective::kMaskedLm;
    auto resolved =
        runtime::resolve_model(ws_, model, objective, lm ? base_ : classifier_, nullptr);
    if (!resolved.is_ok()) throw std::runtime_error(resolved.status().message());
    runtime::ModelWeights w = std::move(resolved).value();
    // The hidden state itself: an identity head reads the pooled [CLS] row (after the
    // pooler for kPoolerOutput); x·I + 0 is exact in floating point.
    const int C = w.arch.width;
    std::vector<float> identity(static_cast<std::size_t>(C) * C, 0.0f), zeros(C, 0.0f);
    for (int c = 0; c < C; ++c) identity[static_cast<std::size_t>(c) * C + c] = 1.0f;
    if (output == Output::kClsHidden || output == Output::kPoolerOutput) {
      w.classifier.linear = runtime::LinearWeights{identity.data(), zeros.data(), nullptr,
                                                   nullptr, C, C};
      w.classifier.pooling = runtime::PoolMode::kCls;
      if (output == Output::kClsHidden) w.pooler = runtime::LinearWeights{};
    }
    if (output == Output::kClassifierLogits && !pooler_weight_.empty())
      w.pooler = runtime::LinearWeights{pooler_weight_.data(), pooler_bias_.data(), nullptr,
                                        nullptr, C, C};
    runtime::SegmentedTransformer net(*backend_);
    runtime::FamilyBatch batch{{{&w, B, T, tokens.data(), lengths.data(), nullptr, 0}}, false};
    auto out = net.forward(batch);
    if (!out.is_ok()) throw std::runtime_error(out.status().message());
    const runtime::Tensor& logits = out->at(0).logits;
    return std::vector<float>(logits.f32(), logits.f32() + logits.numel());
  }

 private:
  static void fill(const runtime::Tensor& view, const lineage::SafetensorsTensor& t) {
    const std::vector<float> values = lineage::to_float32(t.dtype, t.bytes);
    if (static_cast<std::int64_t>(values.size()) != view.numel())
      throw std::runtime_error("size mismatch for " + t.name);
    std::copy(values.begin(), values.end(), view.f32());
  }

  spec::Workspace ws_;
  std::unique_ptr<runtime::Backend> backend_;
  runtime::ParameterStore store_;
  runtime::ParameterBinding base_, classifier_;
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::vector<std::string> notes_;
  std::vector<float> pooler_weight_, pooler_bias_;  // load_roberta_classifier()
};

}  // namespace scion::test
