#include "workbench/sharded_evaluation.h"

#include <nlohmann/json.hpp>

namespace scion::workbench {

std::string encode_outputs(const FamilyOutputs& outputs) {
  nlohmann::json doc = {{"outputs", nlohmann::json::object()}};
  for (const auto& [model, by_input] : outputs.by_model()) {
    nlohmann::json& of_model = doc["outputs"][model];
    of_model = nlohmann::json::array();
    for (const auto& [input, o] : by_input)
      of_model.push_back({{"input", input},
                          {"task", static_cast<int>(o.task)},
                          {"labels", o.labels},
                          {"probabilities", o.probabilities},
                          {"values", o.values},
                          {"threshold", o.threshold},
                          {"words", o.words},
                          {"word_probabilities", o.word_probabilities},
                          {"logprobs", o.continuation_logprobs},
                          {"tokens", o.continuation_tokens}});
  }
  // CBOR keeps every float and double exactly (NaN too, which JSON text would not).
  const std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(doc);
  return std::string(bytes.begin(), bytes.end());
}

Result<FamilyOutputs> decode_outputs(const std::string& bytes) {
  const nlohmann::json doc = nlohmann::json::from_cbor(bytes, /*strict=*/true,
                                                       /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("outputs"))
    return corruption("a rank sent evaluation results that cannot be read (" +
                      std::to_string(bytes.size()) + " bytes); are all ranks the same scion?");
  try {
    FamilyOutputs outputs;
    for (const auto& [model, entries] : doc.at("outputs").items()) {
      std::map<std::string, assertions::ModelOutput>& of_model = outputs.of(model);
      for (const nlohmann::json& e : entries)
        of_model[e.at("input").get<std::string>()] = {
            .labels = e.at("labels").get<std::vector<std::string>>(),
            .probabilities = e.at("probabilities").get<std::vector<float>>(),
            .continuation_logprobs = e.at("logprobs").get<std::map<std::string, double>>(),
            .continuation_tokens = e.at("tokens").get<std::map<std::string, std::size_t>>(),
            .task = static_cast<spec::HeadTask>(e.at("task").get<int>()),
            .values = e.at("values").get<std::vector<float>>(),
            .threshold = e.at("threshold").get<float>(),
            .words = e.at("words").get<std::vector<std::string>>(),
            .word_probabilities = e.at("word_probabilities").get<std::vector<std::vector<float>>>()};
    }
    return outputs;
  } catch (const nlohmann::json::exception& e) {
    return corruption(std::string("a rank sent evaluation results of another form: ") + e.what());
  }
}

Result<FamilyOutputs> evaluate_models_sharded(const StoredFamily& family,
                                              runtime::Backend& backend,
                                              const std::vector<std::string>& models,
                                              const EvaluationPlan& plan, int chunk_size,
                                              runtime::Communicator& comm, const Status& ready) {
  if (comm.size() == 1) {
    if (!ready.is_ok()) return ready;
    return evaluate_models(family, backend, models, plan, chunk_size);
  }
  Result<FamilyOutputs> local = FamilyOutputs();
  if (ready.is_ok())
    local = evaluate_models(family, backend, models, plan.shard(comm.rank(), comm.size()),
                            chunk_size);
  else
    local = ready;
  // As in training: every rank stops with the lowest failing rank's error (that rank
  // with its own message, the others with "rank R failed: ..."), before any sending.
  SCION_RETURN_IF_ERROR(comm.agree(local ? Status::ok() : local.status()));
  auto gathered = comm.gather(encode_outputs(*local));
  if (!gathered) return gathered.status();
  if (comm.rank() != 0) return FamilyOutputs();
  FamilyOutputs merged;
  for (const std::string& bytes : *gathered) {
    auto outputs = decode_outputs(bytes);
    if (!outputs) return outputs.status();
    merged.merge(std::move(*outputs));
  }
  return merged;
}

}  // namespace scion::workbench
