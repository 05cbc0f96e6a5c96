// The heads of a family batch (transformer_pass.h): each segment's own head and loss over
// the final hidden states y, and their backward into dy.
//
// A language model's head maps every position to the vocabulary (cross-entropy on the
// shifted or masked targets), or only each sequence's last real position with
// Segment::last_position_logits (generation: no loss). A task head (ClassifierWeights) by its task:
//   classification        pool (+ BERT's pooler) -> (B, K) -> softmax cross-entropy,
//                         class-weighted when the job gives weights
//   regression            pool (+ pooler) -> (B, K) -> squared error: the predictions
//                         minus the targets are kept (in `probs`) for the backward, whose
//                         gradient is 2·(prediction − target) / denominator
//   multi_label           pool (+ pooler) -> (B, K) -> binary cross-entropy with logits
//   token_classification  every position -> (B·S, K) -> cross-entropy on the tagged
//                         positions (prompt positions take none), class-weighted too
// The loss is the sum over targets divided by Segment::loss_denominator, or by the
// segment's own: its counted targets (their class weights' sum under class weights), or
// its B·K values for regression and multi-label, as torch's mean reductions divide.
#include "runtime/model/transformer_pass.h"
#include "runtime/op_types.h"

namespace scion::runtime::detail {
namespace {

bool by_values(const ModelWeights& m) {
  return m.objective == spec::Objective::kClassification &&
         (m.classifier.task == spec::HeadTask::kRegression ||
          m.classifier.task == spec::HeadTask::kMultiLabel);
}

}  // namespace

const float* Pass::head_features(std::size_t s, const float* ys) {
  const ModelWeights& m = *seg(s).model;
  Plan::SegmentActs& sa = plan_.segments[s];
  be_.pool_forward(sa.pooled, ys, sa.lengths, sa.B, sa.S, sa.P, C_, m.classifier.pooling);
  if (!m.pooler.weight) return sa.pooled;
  be_.matmul_forward(sa.pooler_pre, sa.pooled, m.pooler.weight, m.pooler.bias, sa.B, C_, C_);
  be_.tanh_forward(sa.pooler_out, sa.pooler_pre, static_cast<std::int64_t>(sa.B) * C_);
  return sa.pooler_out;
}

double Pass::head_loss(std::size_t s, std::int64_t& counted, double& denominator) {
  const ModelWeights& m = *seg(s).model;
  Plan::SegmentActs& sa = plan_.segments[s];
  const bool head = m.objective == spec::Objective::kClassification;
  const int width = head ? m.classifier.linear.out : a_.vocab_size;
  if (by_values(m)) {
    const std::int64_t n = static_cast<std::int64_t>(sa.B) * width;
    counted = n;
    denominator = static_cast<double>(n);
    if (m.classifier.task == spec::HeadTask::kRegression) {
      be_.copy(sa.probs, sa.logits, n);
      be_.add_inplace(sa.probs, sa.values, -1.0f, n);
      return be_.squared_norm(sa.probs, n);
    }
    be_.bce_with_logits_forward(sa.losses, sa.probs, sa.logits, sa.values, sa.B, width);
    sa.host_losses.resize(static_cast<std::size_t>(sa.B));
  } else {
    const std::int64_t rows = head && !m.classifier.per_token() ? sa.B : sa.rows;
    counted = be_.cross_entropy_forward(sa.losses, sa.probs, sa.logits, sa.targets, rows, width);
    denominator = static_cast<double>(counted);
    sa.host_losses.resize(static_cast<std::size_t>(rows));
  }
  be_.copy_to_host(sa.host_losses.data(), sa.losses, sa.host_losses.size() * sizeof(float));
  const std::vector<float>& weights = m.classifier.host_class_weights;
  if (!head || weights.empty() || by_values(m)) {
    double sum = 0.0;  // fixed order: the loss must not depend on threads
    for (const float loss : sa.host_losses) sum += loss;
    return sum;
  }
  // Class weights: each target's loss times its class's weight, over the weights' sum.
  const std::int32_t* targets =
      m.classifier.per_token() ? sa.host_lm_targets.data() : seg(s).targets;
  double sum = 0.0;
  denominator = 0.0;
  for (std::size_t i = 0; i < sa.host_losses.size(); ++i) {
    if (targets[i] == kIgnoreIndex) continue;
    const double w = weights[static_cast<std::size_t>(targets[i])];
    sum += w * sa.host_losses[i];
    denominator += w;
  }
  return sum;
}

void Pass::heads_forward(const float* y, std::vector<SegmentResult>& results) {
  results.assign(segment_count(), SegmentResult{});
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const ModelWeights& m = *seg(s).model;
    Plan::SegmentActs& sa = plan_.segments[s];
    const float* ys = y + plan_.stages.back()[plan_.final_unit[s]].row0 * C_;
    SegmentResult& r = results[s];
    if (m.objective != spec::Objective::kClassification && seg(s).last_position_logits) {
      // Each sequence's last real position, gathered, through the LM head; inference:
      // nothing to score against.
      for (int b = 0; b < sa.B; ++b) {
        const int last = sa.P + (seg(s).lengths ? seg(s).lengths[b] : sa.T) - 1;
        be_.copy(sa.last_hidden + static_cast<std::int64_t>(b) * C_,
                 ys + (static_cast<std::int64_t>(b) * sa.S + last) * C_, C_);
      }
      be_.matmul_forward(sa.logits, sa.last_hidden, m.lm_head, nullptr, sa.B, C_, a_.vocab_size);
      r.logits = Tensor{sa.logits, {sa.B, 1, a_.vocab_size}, DType::kF32, be_.device()};
      continue;
    }
    if (m.objective != spec::Objective::kClassification) {
      be_.matmul_forward(sa.logits, ys, m.lm_head, nullptr, sa.rows, C_, a_.vocab_size);
      r.logits = Tensor{sa.logits, {sa.B, sa.S, a_.vocab_size}, DType::kF32, be_.device()};
    } else if (m.classifier.per_token()) {
      const LinearWeights& head = m.classifier.linear;
      be_.matmul_forward(sa.logits, ys, head.weight, head.bias, sa.rows, C_, head.out);
      r.logits = Tensor{sa.logits, {sa.B, sa.S, head.out}, DType::kF32, be_.device()};
    } else {
      const LinearWeights& head = m.classifier.linear;
      be_.matmul_forward(sa.logits, head_features(s, ys), head.weight, head.bias, sa.B, C_,
                         head.out);
      r.logits = Tensor{sa.logits, {sa.B, head.out}, DType::kF32, be_.device()};
    }
    if (!sa.targets && !sa.values) continue;
    double own_denominator = 0;
    const double sum = head_loss(s, r.counted, own_denominator);
    sa.denominator = seg(s).loss_denominator > 0 ? seg(s).loss_denominator : own_denominator;
    r.denominator = sa.denominator;
    r.loss = sa.denominator > 0 ? static_cast<float>(sum / sa.denominator) : 0.0f;
  }
}

void Pass::head_loss_backward(std::size_t s) {
  const ModelWeights& m = *seg(s).model;
  Plan::SegmentActs& sa = plan_.segments[s];
  const float scale = sa.denominator > 0 ? static_cast<float>(1.0 / sa.denominator) : 0.0f;
  const bool head = m.objective == spec::Objective::kClassification;
  const int width = head ? m.classifier.linear.out : a_.vocab_size;
  if (by_values(m)) {
    const std::int64_t n = static_cast<std::int64_t>(sa.B) * width;
    if (m.classifier.task == spec::HeadTask::kMultiLabel) {
      be_.bce_with_logits_backward(sa.dlogits, sa.probs, sa.values, scale, sa.B, width);
    } else {
      be_.copy(sa.dlogits, sa.probs, n);
      be_.scale_inplace(sa.dlogits, 2.0f * scale, n);
    }
    return;
  }
  const std::int64_t rows = head && !m.classifier.per_token() ? sa.B : sa.rows;
  if (head && m.classifier.class_weights)
    be_.cross_entropy_backward_weighted(sa.dlogits, sa.probs, sa.targets,
                                        m.classifier.class_weights, scale, rows, width);
  else
    be_.cross_entropy_backward(sa.dlogits, sa.probs, sa.targets, scale, rows, width);
}

// dy (N, C) = gradient of Σ_s mean loss_s w.r.t. the final hidden states y.
void Pass::heads_backward(const float* y, float* dy) {
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const ModelWeights& m = *seg(s).model;
    Plan::SegmentActs& sa = plan_.segments[s];
    const float* ys = y + sa.row0 * C_;
    float* dys = dy + sa.row0 * C_;
    head_loss_backward(s);
    if (m.objective != spec::Objective::kClassification) {
      be_.matmul_backward(dys, m.dlm_head, nullptr, sa.dlogits, ys, m.lm_head, 1.0f, sa.rows, C_,
                          a_.vocab_size, GradMode::kAssign);
      continue;
    }
    const LinearWeights& head = m.classifier.linear;
    if (m.classifier.per_token()) {
      be_.matmul_backward(dys, head.dweight, head.dbias, sa.dlogits, ys, head.weight, 1.0f, sa.rows,
                          C_, head.out, GradMode::kAssign);
      continue;
    }
    if (m.pooler.weight) {
      const std::int64_t n = static_cast<std::int64_t>(sa.B) * C_;
      be_.matmul_backward(sa.dpooler, head.dweight, head.dbias, sa.dlogits, sa.pooler_out,
                          head.weight, 1.0f, sa.B, C_, head.out, GradMode::kAssign);
      be_.tanh_backward(sa.dpooler, sa.pooler_out, sa.dpooler, n);
      be_.matmul_backward(sa.dpooled, m.pooler.dweight, m.pooler.dbias, sa.dpooler, sa.pooled,
                          m.pooler.weight, 1.0f, sa.B, C_, C_, GradMode::kAssign);
    } else {
      be_.matmul_backward(sa.dpooled, head.dweight, head.dbias, sa.dlogits, sa.pooled, head.weight,
                          1.0f, sa.B, C_, head.out, GradMode::kAssign);
    }
    be_.pool_backward(dys, sa.dpooled, sa.lengths, sa.B, sa.S, sa.P, C_, m.classifier.pooling);
  }
}

}  // namespace scion::runtime::detail
