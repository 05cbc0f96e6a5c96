// The task metrics (runtime/metrics/) on small cases worked out by hand, the way
// scikit-learn and seqeval compute them (each expected value's arithmetic is beside it).
#include <catch2/catch.hpp>

#include "runtime/metrics/classification_metrics.h"
#include "runtime/metrics/entity_metrics.h"
#include "runtime/metrics/multi_label_metrics.h"
#include "runtime/metrics/regression_metrics.h"

using namespace scion::runtime;

TEST_CASE("classification metrics: accuracy, F1 averages, MCC and calibration") {
  const std::vector<std::string> labels = {"a", "b", "c"};
  const std::vector<std::int32_t> truth = {0, 0, 1, 1, 2, 2};
  // Predictions 0, 1, 1, 1, 2, 0 with confidences .72 .62 .82 .77 .93 .52, each in a bin
  // of its own (bins of width 1/15).
  const std::vector<float> p = {0.72f, 0.18f, 0.10f, 0.30f, 0.62f, 0.08f, 0.10f, 0.82f, 0.08f,
                                0.13f, 0.77f, 0.10f, 0.03f, 0.04f, 0.93f, 0.52f, 0.20f, 0.28f};
  const ClassificationMetrics m = classification_metrics(labels, truth, p);
  CHECK(m.accuracy == Approx(4.0 / 6));
  CHECK(m.micro_f1 == Approx(4.0 / 6));
  // F1: a 1/2 (P 1/2, R 1/2), b 4/5 (P 2/3, R 1), c 2/3 (P 1, R 1/2).
  CHECK(m.per_class[1].f1 == Approx(0.8));
  CHECK(m.macro_f1 == Approx((0.5 + 0.8 + 2.0 / 3) / 3));
  CHECK(m.weighted_f1 == Approx((0.5 + 0.8 + 2.0 / 3) / 3));  // equal supports
  // MCC: (c·s − Σ p_k t_k) / sqrt((s² − Σ p_k²)(s² − Σ t_k²)) = (24 − 12) / sqrt(22 · 24).
  CHECK(m.mcc == Approx(12.0 / std::sqrt(22.0 * 24.0)));
  // ECE: Σ |correct − confidence| / 6 with one example per bin.
  CHECK(m.ece == Approx((0.28 + 0.62 + 0.18 + 0.23 + 0.07 + 0.52) / 6).epsilon(1e-5));
  CHECK_FALSE(m.roc_auc.has_value());  // three classes
  CHECK(m.confusion[2][0] == 1);
}

TEST_CASE("binary ROC-AUC counts ties half and needs both classes") {
  const std::vector<std::string> labels = {"neg", "pos"};
  const std::vector<std::int32_t> truth = {0, 0, 1, 1, 0, 1};
  const std::vector<float> p1 = {0.1f, 0.4f, 0.35f, 0.8f, 0.2f, 0.4f};
  std::vector<float> p;
  for (float x : p1) {
    p.push_back(1 - x);
    p.push_back(x);
  }
  // Positives .35 .8 .4 against negatives .1 .4 .2: 2 + 3 + 2.5 of 9 pairs.
  REQUIRE(classification_metrics(labels, truth, p).roc_auc.has_value());
  CHECK(*classification_metrics(labels, truth, p).roc_auc == Approx(7.5 / 9));
  const std::vector<std::int32_t> one_class = {1, 1, 1, 1, 1, 1};
  CHECK_FALSE(classification_metrics(labels, one_class, p).roc_auc.has_value());
}

TEST_CASE("regression metrics: errors and correlations") {
  const std::vector<float> predicted = {1, 2, 3, 4}, truth = {1, 3, 2, 5};
  const RegressionMetrics m = regression_metrics({"score"}, predicted, truth);
  CHECK(m.mse == Approx(0.75));
  CHECK(m.rmse == Approx(std::sqrt(0.75)));
  CHECK(m.mae == Approx(0.75));
  // Pearson: Σ dx·dy / sqrt(Σ dx² Σ dy²) = 5.5 / sqrt(5 · 8.75); Spearman: ranks 1 2 3 4
  // against 1 3 2 4, 4 / 5.
  REQUIRE(m.pearson.has_value());
  CHECK(*m.pearson == Approx(5.5 / std::sqrt(5 * 8.75)));
  REQUIRE(m.spearman.has_value());
  CHECK(*m.spearman == Approx(0.8));
  const std::vector<float> constant = {2, 2, 2, 2};
  CHECK_FALSE(regression_metrics({"score"}, constant, truth).pearson.has_value());
  // Ties take their mean rank: scipy.stats.spearmanr([1, 2, 2, 3], [1, 2, 3, 4]) = 0.9487.
  CHECK(*spearman(std::vector<double>{1, 2, 2, 3}, std::vector<double>{1, 2, 3, 4}) ==
        Approx(0.9486833));
}

TEST_CASE("multi-label metrics at a threshold") {
  const std::vector<float> p = {0.9f, 0.2f, 0.6f, 0.7f, 0.1f, 0.4f};
  const std::vector<float> truth = {1, 0, 1, 0, 0, 1};
  const MultiLabelMetrics m = multi_label_metrics({"a", "b"}, p, truth, 0.5f);
  // Predicted {a}, {a, b}, {}: a TP 2; b FP 1, FN 1.
  CHECK(m.micro_f1 == Approx(4.0 / 6));
  CHECK(m.macro_f1 == Approx(0.5));
  CHECK(m.subset_accuracy == Approx(1.0 / 3));
  CHECK(m.hamming_loss == Approx(2.0 / 6));
  CHECK(multi_label_metrics({"a", "b"}, p, truth, 0.05f).micro_f1 == Approx(6.0 / 9));
}

TEST_CASE("entity metrics read IOB tags as seqeval does") {
  const std::vector<std::string> tags = {"O", "B-PER", "I-PER", "B-LOC"};
  const EntityMetrics m = entity_metrics(tags, {{1, 2, 0, 3}}, {{1, 0, 0, 3}});
  // True PER(0-1) LOC(3); predicted PER(0) LOC(3): one of two right each way.
  CHECK(m.precision == Approx(0.5));
  CHECK(m.recall == Approx(0.5));
  CHECK(m.f1 == Approx(0.5));
  CHECK(m.accuracy == Approx(0.75));
  REQUIRE(m.per_type.size() == 2);
  CHECK(m.per_type[0].type == "LOC");
  CHECK(m.per_type[0].f1 == Approx(1.0));
  // An I- tag after O begins an entity, and a type change ends one (conlleval's rules).
  const std::vector<std::string> sentence = {"O", "I-PER", "I-PER", "I-LOC", "O"};
  const std::vector<Entity> found = entities(sentence);
  REQUIRE(found.size() == 2);
  CHECK(found[0] == Entity{"PER", 1, 2});
  CHECK(found[1] == Entity{"LOC", 3, 3});
}
