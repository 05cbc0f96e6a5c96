// Training groups: which models train co-batched, and the memory estimate that bounds them.
//
// workbench::make_plan (workbench/plan.h) forms its waves and groups here; `scion plan`
// prints that plan and `scion train/adapt/run` execute it. Descendants whose trunk stays
// frozen train together through runtime::FamilyTrainer when they run on one trunk's
// tensors (those of their base, or of the nearest ancestor that trained some); a model
// that trains its trunk (a base, BitFit, full fine-tuning) trains alone. A group is split,
// in spec order, so that its estimated training memory stays within a budget:
//   the frozen base parameters once (4 bytes each; 2 for trunk linear weights in bf16), plus per job everything else its
//   TrainingMemory counts but activations: its other parameters (4 bytes each), gradients
//   and optimizer state of its trainable parameters (AdamW: 4 + 8, so 16 bytes a
//   trainable parameter with the value itself), plus the activations of one pass:
//   runtime::FamilyTrainer cuts a step into passes of at most
//   TrainerOptions::max_rows_per_pass token rows (or one job's rows, when more), so a
//   group holds the activations of the rows of one pass, not of every job at once.
// A job over the budget on its own still trains, in a group of one. Models that share
// modules (a training unit, spec::Workspace::training_unit) are never split: a unit over
// the budget still trains as one group. Pure functions of the spec; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "spec/workspace.h"

namespace scion::workbench {

// An estimate of one training step's memory for one model (docs/cli.md, "scion plan"):
//   parameters   4 bytes x every parameter (frozen ones are read in the forward pass), but
//                2 for a frozen trunk linear weight in bf16 (held in bf16)
//   gradients    4 bytes x trainable parameters
//   optimizer    AdamW 8 bytes (two moments), SGD with momentum 4, plain SGD 0, x trainable
//   activations  4 bytes x batch x length x (layers x (10 width + 2 ffn_width + heads x
//                length) + 10 width + 2 ffn_width): what each transformer block keeps for
//                backward (ln1, q, k, v, attention output, projection, residual, ln2, two
//                ffn tensors, ffn output, residual: 10 C + 2 F a token, and the attention
//                probabilities, H x T a token), plus what a pass holds once (gradient
//                scratch 8 C + 2 F, embeddings and final norm 2 C). With recompute, one
//                block's share plus each block's output (layers x width) instead of
//                layers x the block's.
//                bf16 adds the rounded operand copies of the widest product:
//                e x (batch x length x (F + max(F, V)) + max(F, V) x width), F = max(width,
//                ffn_width), e = 2 bytes with oneDNN's bf16 kernels, 4 without.
struct TrainingMemory {
  std::int64_t parameters = 0, gradients = 0, optimizer_state = 0, activations = 0;
  std::int64_t total() const { return parameters + gradients + optimizer_state + activations; }
};

// REQUIRES: model.training; total and trainable are its parameter counts.
TrainingMemory estimate_training_memory(const spec::Workspace& workspace, const spec::Model& model,
                                        std::int64_t total, std::int64_t trainable);

// Whether `model` trains any trunk parameter, which forces it into a group of its own.
bool trains_trunk(const spec::Workspace& workspace, const spec::Model& model);

// The default budget: half of the machine's physical memory (0 when it cannot be read,
// which means no limit).
std::int64_t default_memory_budget_bytes();

// Estimated memory of training `group` co-batched (see the header comment).
// REQUIRES: every model in `group` has training.
std::int64_t group_memory_bytes(const spec::Workspace& workspace,
                                const std::vector<const spec::Model*>& group);

// The co-batched groups of `models` (each with training), in spec order, each within
// `budget_bytes` where it holds more than one job; budget_bytes <= 0 means no limit.
std::vector<std::vector<const spec::Model*>> training_groups(
    const spec::Workspace& workspace, const std::vector<const spec::Model*>& models,
    std::int64_t budget_bytes);

// `models` (each with training) in waves, as `scion run` trains them: wave 0 holds the
// models none of whose share unit waits for a parent among `models`; a model waits for
// the latest wave of those parents. Spec order within a wave. The others are stored.
std::vector<std::vector<const spec::Model*>> training_waves(
    const spec::Workspace& workspace, const std::vector<const spec::Model*>& models);

// The optimizer steps of `model`'s recipe: `steps`, or `epochs` over its dataset's
// examples less the validation split, in micro-batches of batch_size grouped by
// grad_accumulation (a plain-text corpus counts its lines; its language-model windows
// may differ). `examples`: the dataset's example count.
// REQUIRES: model.training.
std::int64_t recipe_steps(const spec::Model& model, std::int64_t examples);

// Estimated FLOPs (2 per multiply-add) of one token of one training step of `model`,
// padded to its length: the forward pass reads every parameter once (2 x total), the
// backward pass carries the activation gradient back through them (2 x total) and forms
// the gradient of each trainable one (2 x trainable), and attention adds its scores and
// mixing (forward 4 x layers x length x width, backward twice that). So 6 x parameters
// for full training and about 4 x trunk parameters for a frozen trunk with adapters.
// REQUIRES: model.training.
double training_flops_per_token(const spec::Workspace& workspace, const spec::Model& model,
                                std::int64_t total, std::int64_t trainable);

}  // namespace scion::workbench
