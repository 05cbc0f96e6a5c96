// The typed, validated form of a scion.yaml: datasets, models (bases and descendants),
// share declarations, behavioural tests and model assertions.
//
// A Workspace is produced only by spec/loader.h after every check has passed, so code
// that receives one may rely on the invariants stated here (names resolve, no cycles,
// values in range). It is an immutable value once loaded; share freely across threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "spec/adaptation_method.h"

namespace scion::spec {

// Where a value came from in its YAML file; line and column are 1-based.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

// ---- Architecture of a base model ------------------------------------------------------

enum class ArchitectureKind { kEncoder, kDecoder };   // bidirectional+padding mask | causal
enum class NormPlacement { kPre, kPost };             // GPT-2 style | BERT style
enum class TokenizerKind { kByte, kWordPiece, kBpe };  // BPE: byte-level, tokenizer.json
// GPT-2's approximation | BERT's exact | Llama's gated silu(gate_proj(x)) · up_proj(x)
enum class Activation { kGeluTanh, kGeluErf, kSwiGlu };
enum class NormKind { kLayerNorm, kRmsNorm };   // mean and variance, bias | Llama's RMSNorm
enum class PositionKind { kLearned, kRotary };  // position embeddings | RoPE on q and k

struct TokenizerSpec {
  TokenizerKind kind = TokenizerKind::kByte;
  // WordPiece/BPE vocabularies, relative to the spec's directory (or absolute): vocab.txt,
  // or a Hugging Face tokenizer.json; empty for bytes.
  std::string vocab_file;
};

// The byte tokenizer's vocabulary: 256 byte values and 4 special tokens (pad, cls/bos,
// sep/eos, mask); runtime/text/byte_tokenizer.h holds the same number.
inline constexpr int kByteTokenizerVocabSize = 260;

struct Architecture {
  ArchitectureKind kind = ArchitectureKind::kEncoder;
  int layers = 0;      // L
  int width = 0;       // d (C in kernel signatures)
  int heads = 0;       // h; divides width
  int ffn_width = 0;   // f; default 4*width
  int vocab_size = kByteTokenizerVocabSize;  // V
  int max_length = 0;  // T_max: learned position embeddings
  NormPlacement norm = NormPlacement::kPre;
  float dropout = 0.0f;
  bool tie_embeddings = true;  // LM head reuses the token embedding
  TokenizerSpec tokenizer;
  // Set from a Hugging Face config.json (spec/hf_model_folder.h); native specs keep the
  // defaults, which are what scion's own models always used.
  float norm_eps = 1e-5f;                       // layer_norm_eps
  Activation activation = Activation::kGeluTanh;  // hidden_act
  int type_vocab_size = 0;  // >0: BERT's token-type embeddings; type 0 is added everywhere
  bool pooler = false;      // BERT's pooler tanh(dense(h)) between pooling and the head
  std::string hf_model_type;  // config.json's model_type ("bert", "llama", ...); "" for native
  // The Llama family (model_type llama): RMSNorm, rotary positions, the SwiGLU FFN
  // (activation kSwiGlu adds the ffn_gate linear), grouped-query attention and linear
  // layers without biases.
  NormKind norm_kind = NormKind::kLayerNorm;
  PositionKind positions = PositionKind::kLearned;
  int kv_heads = 0;            // key/value heads (num_key_value_heads); 0: one per head
  float rope_theta = 10000.0f;  // RoPE base
  float rope_scale = 1.0f;      // rope_scaling {type: linear, factor}: positions / factor
  bool linear_bias = true;      // the linear layers (q, k, v, o, FFN) have biases
  bool qkv_bias = false;        // Qwen2: q, k and v have biases where the others have none
  // Mistral's sliding window: the query at position i sees only the keys at positions
  // i - sliding_window ... i (transformers 4.40's mask), 0: every earlier key.
  int sliding_window = 0;

  int key_value_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  int head_dim() const { return heads > 0 ? width / heads : 0; }
  int kv_width() const { return key_value_heads() * head_dim(); }  // keys' and values' width
  bool gated_ffn() const { return activation == Activation::kSwiGlu; }
};

// ---- Adaptation methods ------------------------------------------------------------------

// Linear layers an adapter can attach to, by their parameter-name stem.
// q,k,v,o -> blk.N.attn_{q,k,v,o}; ffn_in, ffn_out -> blk.N.ffn_{in,out}; ffn_gate ->
// blk.N.ffn_gate, which only gated FFNs (Activation::kSwiGlu: Llama's gate_proj) have.
inline constexpr const char* kLinearTargets[] = {"q",      "k",       "v",       "o",
                                                 "ffn_in", "ffn_out", "ffn_gate"};

struct PrefixSpec {
  int virtual_tokens = 0;
  std::vector<int> layers;   // empty: every layer
  int reparam_hidden = 0;    // >0: train through an MLP of this width, store its output
};

enum class PromptInit { kRandom, kText, kVocab };
struct PromptSpec {
  int virtual_tokens = 0;
  PromptInit init = PromptInit::kRandom;
  std::string init_text;  // with init: text
};

enum class Pooling { kCls, kMean, kLast };

// What a head predicts, and so its loss:
//   classification        one of K classes per text (softmax, cross-entropy)
//   regression            K numbers per text (identity, mean squared error)
//   multi_label           any subset of K labels per text (sigmoid per label, binary
//                         cross-entropy; a label is predicted at probability >= threshold)
//   token_classification  one of K tags per word: every position's hidden state through
//                         the head, the loss on each word's first sub-word (cross-entropy)
enum class HeadTask { kClassification, kRegression, kMultiLabel, kTokenClassification };
const char* head_task_name(HeadTask task);  // "classification", "regression", ...

struct HeadSpec {
  HeadTask task = HeadTask::kClassification;
  // Output names, in output order: class names, label names (multi-label), tag names
  // (token classification) or the regression targets' names.
  std::vector<std::string> labels;
  Pooling pooling = Pooling::kCls;  // sequence heads; token classification reads every position
  std::optional<float> threshold;   // multi-label only; unset: 0.5

  float decision_threshold() const { return threshold.value_or(0.5f); }
};

struct BitfitSpec {};
struct FullSpec {};

// A descendant's adaptation: any combination of the methods (a low-rank update and a prefix
// together are allowed). Absent built-in methods are std::nullopt; the registered methods'
// settings (runtime/adapters/registry.cpp) are in `methods`.
struct Adaptation {
  std::optional<PrefixSpec> prefix;
  std::optional<PromptSpec> prompt;
  std::optional<HeadSpec> head;
  std::optional<BitfitSpec> bitfit;
  std::optional<FullSpec> full;
  // The registered methods' settings (spec/adaptation_method.h), by their blocks' keys.
  std::map<std::string, std::shared_ptr<const MethodSettings>, std::less<>> methods;

  // The settings of the method `Settings` names (Settings::kKey), or null when the model
  // does not use it: `adaptation.find<Ia3Spec>()`. `Settings` derives MethodSettings or is
  // an aggregate stored as MethodSettingsOf<Settings>.
  template <class Settings>
  const Settings* find() const {
    const auto it = methods.find(Settings::kKey);
    if (it == methods.end()) return nullptr;
    if constexpr (std::is_base_of_v<MethodSettings, Settings>) {
      return dynamic_cast<const Settings*>(it->second.get());
    } else {
      const auto* held = dynamic_cast<const MethodSettingsOf<Settings>*>(it->second.get());
      return held ? &held->value : nullptr;
    }
  }
  // Sets the method's settings (a model built in code rather than read from YAML). To change
  // one setting, copy the settings, change the copy and set it: settings are shared between
  // copies of an Adaptation, so they are never changed in place.
  template <class Settings>
  void set(Settings settings) {
    std::shared_ptr<const MethodSettings> held;
    if constexpr (std::is_base_of_v<MethodSettings, Settings>)
      held = std::make_shared<const Settings>(std::move(settings));
    else
      held = std::make_shared<const MethodSettingsOf<Settings>>(std::move(settings));
    methods[std::string(Settings::kKey)] = std::move(held);
  }
};

// ---- Training recipe ---------------------------------------------------------------------

enum class Objective { kMaskedLm, kCausalLm, kClassification };
enum class OptimizerKind { kAdamW, kSgd };
enum class ScheduleKind { kConstant, kLinear, kCosine };
// The precision of the matrix products while training: fp32, or bf16 operands with fp32
// accumulation (fp32 master weights; norms, softmax, losses and optimizer in fp32).
enum class Precision { kF32, kBF16 };
const char* precision_name(Precision precision);  // "fp32", "bf16"

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kAdamW;
  float lr = 1e-3f;
  float weight_decay = 0.0f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // AdamW
  float momentum = 0.9f;                             // SGD
  float grad_clip = 0.0f;                            // 0: no clipping (global norm)
};

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::kConstant;
  int warmup_steps = 0;
};

struct EarlyStoppingSpec {
  std::string metric = "val_loss";  // a validation metric of the task (spec/metric_names.h)
  int patience = 0;                 // evaluations without improvement; 0 disables
};

// Per-class weights of a classification or token-classification loss: each example's (or
// tag's) loss is scaled by its true class's weight and the mean divides by the sum of the
// weights, as torch.nn.CrossEntropyLoss(weight=...) does. kBalanced: n / (K · n_c) from
// the training rows' class counts n_c (scikit-learn's "balanced"), computed when training
// starts.
struct ClassWeightsSpec {
  enum class Kind { kNone, kExplicit, kBalanced };
  Kind kind = Kind::kNone;
  std::vector<float> values;  // kExplicit: one per head label, in label order
};

struct TrainingSpec {
  std::string dataset;  // name in Workspace::datasets
  Objective objective = Objective::kClassification;
  int steps = 0;        // exactly one of steps / epochs is > 0
  int epochs = 0;
  int batch_size = 8;
  int grad_accumulation = 1;
  int max_length = 0;   // 0: the architecture's max_length
  float validation_split = 0.0f;  // fraction held out for per-epoch validation
  // A named dev set (Workspace::datasets) validated on instead of a split; empty: none.
  std::string validation;
  int eval_every = 0;   // steps between validations; 0: once per epoch
  float mask_probability = 0.15f;  // masked-LM only
  OptimizerSpec optimizer;
  ScheduleSpec schedule;
  EarlyStoppingSpec early_stopping;
  // A validation metric (spec/metric_names.h): training stores the parameters of the
  // validation where it was best, not the last step's. Empty: the last step's.
  std::string keep_best;
  ClassWeightsSpec class_weights;
  std::uint64_t seed = 0;
  Precision precision = Precision::kF32;
  // Activation recomputation: keep only each block's input in the forward pass and run
  // the block again in the backward (runtime/model/transformer.h). Less memory, one more
  // forward pass of the blocks; the same values, so not part of the recipe hash.
  bool recompute = false;
};

// ---- Models ------------------------------------------------------------------------------

struct Model {
  std::string name;
  SourceLocation location;

  // A base has an architecture (and either training or import_path); a descendant has
  // `from` and an adaptation. Exactly one of the two shapes holds.
  std::optional<Architecture> architecture;
  // An imported base's safetensors checkpoint or Hugging Face model folder (absolute).
  std::string import_path;
  // SHA-256 of the checkpoint's bytes, or of a folder's file list with each file's
  // SHA-256 (spec/hf_model_folder.h); set by the loader.
  std::string import_digest;
  std::string from;

  Adaptation adaptation;
  std::vector<std::string> freeze;    // parameter-name globs made frozen
  std::vector<std::string> unfreeze;  // parameter-name globs made trainable
  std::optional<TrainingSpec> training;

  std::string recipe_hash;  // lowercase hex SHA-256, set by the loader

  bool is_base() const { return from.empty(); }
};

// ---- Data --------------------------------------------------------------------------------

enum class DatasetFormat { kJsonl, kCsv, kTsv, kText };
const char* dataset_format_name(DatasetFormat format);  // "jsonl", "csv", "tsv", "text"

// What a row's label field holds:
//   single  one label name (classification)
//   multi   a list of label names, possibly empty (multi-label); in CSV/TSV one cell with
//           the names separated by '|'
//   number  a number, or a list of numbers of one length (regression targets)
//   tags    a list of tag names, one per word of the text field, which is then a list of
//           words (token classification; JSONL only)
enum class LabelType { kSingle, kMulti, kNumber, kTags };
const char* label_type_name(LabelType type);  // "single", "multi", "number", "tags"

struct Dataset {
  std::string name;
  SourceLocation location;
  std::filesystem::path path;  // absolute, resolved against the spec's directory
  DatasetFormat format = DatasetFormat::kJsonl;
  std::string text_field = "text";   // ignored for kText
  std::string text_pair_field;       // the second text of a sentence pair; empty: single texts
  std::string label_field = "label"; // empty: unlabelled
  std::vector<std::string> labels;   // label names, mapped to indices in this order
  LabelType label_type = LabelType::kSingle;
  // A prompt/completion dataset (both set, or neither): each row's prompt and completion
  // in these fields, for causal-LM training with the loss on the completion alone; the
  // text and label fields are not read.
  std::string prompt_field;
  std::string completion_field;
  std::string digest;                // SHA-256 of the file's bytes, set by the loader

  // Whether rows carry labels: numbers need only label_field, names need `labels`.
  bool labelled() const {
    return !label_field.empty() && (label_type == LabelType::kNumber || !labels.empty());
  }

  bool has_completions() const { return !completion_field.empty(); }
};

// ---- Sharing -----------------------------------------------------------------------------

// In a share's module globs, this word stands for each sharing model's own name, since
// adapter parameters carry the name of the model that introduced them
// ("head.$model.*" matches head.review.weight in review, head.tweets.weight in tweets).
inline constexpr const char* kShareModelPlaceholder = "$model";

// Named modules (parameter-name globs) of several models are one set of parameters.
struct Share {
  std::string name;
  SourceLocation location;
  std::vector<std::string> models;
  std::vector<std::string> modules;
};

// ---- Behavioural tests and assertions (structure only; meaning in assertions/) ------------

// Where each key and list item of a test's or assertion's body is, by key path
// ("tests.negation.expect.label", "tests.negation.templates[1]"), for errors found when
// the body is compiled.
using BodyLocations = std::map<std::string, SourceLocation>;

struct TestSpec {
  std::string name;
  SourceLocation location;
  std::string type;        // mft | inv | dir
  std::string capability;  // Vocabulary, Negation, Robustness, ...
  std::vector<std::string> models;  // empty: every model with a compatible head
  float max_failure_rate = 0.0f;
  nlohmann::json body;     // the remaining keys, checked for structure by the loader
  BodyLocations body_locations;
};

struct AssertionSpec {
  std::string name;
  SourceLocation location;
  std::string kind;  // low_confidence | parent_disagreement | perturbation_flip | allowed_outputs | expression
  std::vector<std::string> models;
  nlohmann::json body;
  BodyLocations body_locations;
};

// ---- The workspace -----------------------------------------------------------------------

struct Workspace {
  std::filesystem::path spec_path;  // absolute path of the YAML file
  std::filesystem::path root_dir;   // its directory; relative paths resolve here

  std::vector<Dataset> datasets;
  std::vector<Model> models;  // parents before children
  std::vector<Share> shares;
  std::vector<TestSpec> tests;
  std::vector<AssertionSpec> assertions;
  std::map<std::string, std::vector<std::string>> lexicons;

  const Model* find_model(std::string_view name) const;
  const Dataset* find_dataset(std::string_view name) const;
  // The chain from `model` up to its base: [model, parent, ..., base].
  std::vector<const Model*> ancestry(const Model& model) const;
  // The base's architecture, for a base or any descendant.
  const Architecture& architecture_of(const Model& model) const;
  // The models joined to `model` by shares, directly or through other shares, with
  // `model` itself, in spec order: they train as one unit (one co-batched group, stored
  // together), since each one's shared modules depend on every other one's training.
  std::vector<const Model*> training_unit(const Model& model) const;
  // The head `model` predicts with: its own, else its nearest ancestor's; null when none
  // has one (a language model, or a base trained for classification, whose head the
  // dataset's labels define: an implicit classification head).
  const HeadSpec* head_of(const Model& model) const;
  // The task of that head; classification for a base trained for classification.
  HeadTask head_task_of(const Model& model) const;
  // The objective the model was trained with: its own recipe's, else its nearest
  // ancestor's. An imported base has none: its architecture's language-model objective
  // (masked LM for an encoder, causal LM for a decoder).
  Objective objective_of(const Model& model) const;
};

}  // namespace scion::spec
