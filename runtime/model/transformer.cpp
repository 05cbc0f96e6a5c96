#include "runtime/model/transformer.h"

#include "runtime/model/batch_plan.h"
#include "runtime/model/batch_validation.h"
#include "runtime/model/transformer_pass.h"

namespace scion::runtime {

SegmentedTransformer::SegmentedTransformer(Backend& backend)
    : backend_(backend), plan_(std::make_unique<detail::BatchPlan>()) {}

SegmentedTransformer::~SegmentedTransformer() = default;

Result<std::vector<SegmentResult>> SegmentedTransformer::forward(const FamilyBatch& batch) {
  ready_for_backward_ = false;
  SCION_RETURN_IF_ERROR(detail::validate_batch(batch));
  const std::string signature = detail::batch_signature(batch);
  if (signature != plan_->signature) {
    plan_->signature.clear();  // a plan that failed half-way must not be reused
    SCION_RETURN_IF_ERROR(detail::plan_batch(*plan_, batch, backend_));
    plan_->signature = signature;
  }
  batch_ = batch;
  detail::Pass(backend_, *plan_, batch_).forward(results_);
  ready_for_backward_ = true;
  for (const Segment& s : batch.segments)
    ready_for_backward_ &= s.targets != nullptr || s.values != nullptr;
  return results_;
}

Status SegmentedTransformer::backward() {
  if (!ready_for_backward_)
    return invalid_argument(
        "backward() needs a successful forward() with targets on every segment");
  detail::Pass(backend_, *plan_, batch_).backward();
  ready_for_backward_ = false;
  return Status::ok();
}

}  // namespace scion::runtime
