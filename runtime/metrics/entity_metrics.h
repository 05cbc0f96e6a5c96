// The metrics of a token classifier over tagged words, seqeval-style: what `scion eval`
// reports and stores, and training's val_f1, val_precision, val_recall and val_accuracy
// (spec/metric_names.h).
//
// Entities are read from each sentence's tags as seqeval 1.2 reads IOB tags by their
// prefix (its default, conlleval's rules): a tag "B-PER" begins an entity of type PER,
// "I-PER" continues one (or begins one after O or another type), "E-"/"S-" end one as in
// IOBES, "O" is outside (any other tag reads as seqeval reads it: its first letter the
// chunk letter, what follows a '-' after it, else the rest, the type). An entity
// is (type, first word, last word); a predicted entity counts as correct when the same
// triple is true. Precision, recall and F1 over all entities (micro, seqeval's default),
// the same per type, and token accuracy: the share of words whose tag is right. Words
// are the first sub-words the model read (a truncated sentence counts its kept words).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace scion::runtime {

struct EntityTypeMetrics {
  std::string type;
  double precision = 0;
  double recall = 0;
  double f1 = 0;
  std::int64_t support = 0;    // true entities of this type
  std::int64_t predicted = 0;  // predicted entities of this type
};

struct EntityMetrics {
  std::int64_t sentences = 0;
  std::int64_t words = 0;
  double precision = 0;
  double recall = 0;
  double f1 = 0;
  double accuracy = 0;                      // words tagged right
  std::vector<EntityTypeMetrics> per_type;  // by type name
};

// One entity: its type and its first and last word.
using Entity = std::tuple<std::string, std::int64_t, std::int64_t>;

// The entities in one sentence's tags.
std::vector<Entity> entities(std::span<const std::string> tags);

// `truth` and `predicted` hold, per sentence, one tag index (into `tags`) per word.
// REQUIRES: matching shapes; every index < tags.size().
EntityMetrics entity_metrics(const std::vector<std::string>& tags,
                             const std::vector<std::vector<std::int32_t>>& truth,
                             const std::vector<std::vector<std::int32_t>>& predicted);

}  // namespace scion::runtime
