// Reading the store: parameters for the runtime, and the lineage queries behind
// `scion lineage tree|show|log|diff`.
#include <algorithm>
#include <functional>

#include "lineage/digest.h"
#include "lineage/store.h"
#include "lineage/store_rows.h"

namespace scion::lineage {

namespace {

// A shape as the parameters table records it: a JSON array of integers, else nullopt
// (the schema only guarantees valid JSON).
std::optional<std::vector<std::int64_t>> parse_recorded_shape(const std::string& text) {
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (!value.is_array()) return std::nullopt;
  std::vector<std::int64_t> shape;
  for (const nlohmann::json& dim : value) {
    if (!dim.is_number_integer()) return std::nullopt;
    shape.push_back(dim.get<std::int64_t>());
  }
  return shape;
}

}  // namespace

// For listings: a damaged shape reads as empty (fsck names it).
std::vector<std::int64_t> shape_column(const std::string& text) {
  return parse_recorded_shape(text).value_or(std::vector<std::int64_t>());
}

nlohmann::json json_column(const std::string& text) {
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  return value.is_discarded() ? nlohmann::json::object() : value;
}

std::optional<std::string> optional_text(const Statement& stmt, int column) {
  if (stmt.column_is_null(column)) return std::nullopt;
  return stmt.column_text(column);
}

namespace {

// Children after their parents; siblings by name.
std::vector<StoredModel> parents_first(std::vector<StoredModel> models) {
  std::sort(models.begin(), models.end(),
            [](const StoredModel& a, const StoredModel& b) { return a.name < b.name; });
  std::vector<StoredModel> ordered;
  std::function<void(const std::string&)> visit = [&](const std::string& parent) {
    for (const StoredModel& m : models) {
      if (m.parent == parent) {
        ordered.push_back(m);
        visit(m.name);
      }
    }
  };
  visit("");
  return ordered;
}

}  // namespace

Result<LoadedParameter> LineageStore::load_object(const std::string& name,
                                                  const std::string& digest) {
  auto stmt = db_->prepare(
      "SELECT size, inline_bytes IS NOT NULL, inline_bytes FROM objects WHERE digest = ?");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, std::string_view(digest));
  auto row = stmt->step();
  if (!row.is_ok()) return row.status();
  if (!*row)
    return corruption("parameter '" + name + "' refers to object " + digest +
                      ", which the store does not have; run 'scion fsck'");
  const std::int64_t size = stmt->column_int(0);
  LoadedParameter loaded;
  if (stmt->column_int(1) != 0) {
    std::span<const std::byte> blob = stmt->column_blob(2);
    auto copy = std::make_shared<std::vector<std::byte>>(blob.begin(), blob.end());
    loaded.bytes = *copy;
    loaded.keepalive = copy;
  } else {
    auto region = objects_.map(digest);
    if (!region.is_ok()) {
      return corruption("object file of parameter '" + name + "' is missing or unreadable (" +
                        region.status().message() + "); run 'scion fsck'");
    }
    std::shared_ptr<MappedRegion> shared(std::move(*region));
    loaded.bytes = shared->bytes();
    loaded.keepalive = shared;
  }
  if (static_cast<std::int64_t>(loaded.bytes.size()) != size ||
      (options_.verify_on_load && sha256_hex(loaded.bytes) != digest)) {
    return corruption("object " + digest + " (parameter '" + name +
                      "') does not match its digest: the store is damaged. Run 'scion fsck' "
                      "and retrain or re-import the model");
  }
  return loaded;
}

Result<LoadedParameters> LineageStore::load_parameters(const std::string& model) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT name, digest, dtype, shape, trainable, introduced_by FROM parameters "
      "WHERE model_id = ? ORDER BY name");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id);
  return load_rows(model, *stmt);
}

Result<LoadedParameters> LineageStore::load_parameters(const std::string& model,
                                                       const std::string& recipe_hash) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT p.name, p.digest, p.dtype, p.shape, p.trainable, p.introduced_by "
      "FROM version_parameters p JOIN versions v ON v.id = p.version_id "
      "WHERE v.model_id = ? AND v.recipe_hash = ? ORDER BY p.name");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id).bind(2, std::string_view(recipe_hash));
  return load_rows(model, *stmt);
}

// `rows`: name, digest, dtype, shape, trainable, introduced_by of one model's parameters.
Result<LoadedParameters> LineageStore::load_rows(const std::string& model, Statement& stmt) {
  struct Row {
    std::string name, digest, dtype, shape, introduced_by;
    bool trainable;
  };
  std::vector<Row> rows;
  SCION_RETURN_IF_ERROR(stmt.for_each_row([&](const Statement& row) {
    rows.push_back({row.column_text(0), row.column_text(1), row.column_text(2), row.column_text(3),
                    row.column_text(5), row.column_int(4) != 0});
  }));
  if (rows.empty()) {
    return not_found("model '" + model + "' has no stored parameters; train or import it first");
  }
  LoadedParameters loaded;
  std::map<std::string, LoadedParameter> by_digest;  // one mapping per distinct tensor
  for (const Row& r : rows) {
    if (!by_digest.count(r.digest)) {
      auto object = load_object(r.name, r.digest);
      if (!object.is_ok()) return object.status();
      by_digest[r.digest] = std::move(*object);
    }
    LoadedParameter p = by_digest[r.digest];
    // The row's shape and dtype must fit its object, or every reader (export, predict,
    // training's inherited values) would read past or misread the bytes.
    const std::optional<DType> dtype = parse_dtype(r.dtype);
    const std::optional<std::vector<std::int64_t>> shape = parse_recorded_shape(r.shape);
    const std::optional<std::int64_t> size =
        dtype && shape ? tensor_byte_count(*dtype, *shape) : std::nullopt;
    if (!size || *size != static_cast<std::int64_t>(p.bytes.size()))
      return corruption("model '" + model + "' parameter '" + r.name + "' is recorded as " +
                        r.dtype + " " + r.shape + ", which does not fit its object of " +
                        std::to_string(p.bytes.size()) +
                        " bytes: the store is damaged. Run `scion fsck`, then retrain or "
                        "re-import the model");
    p.dtype = *dtype;
    p.shape = *shape;
    p.digest = r.digest;
    p.trainable = r.trainable;
    p.introduced_by = r.introduced_by;
    loaded.emplace(r.name, std::move(p));
  }
  return loaded;
}

Result<std::vector<StoredModel>> LineageStore::models() {
  auto stmt = db_->prepare(R"sql(
    SELECT m.name, coalesce(parent.name, ''), m.recipe_hash, m.adaptation, m.architecture,
           m.created_at, m.updated_at,
           (SELECT count(*) FROM parameters p WHERE p.model_id = m.id),
           (SELECT count(*) FROM parameters p WHERE p.model_id = m.id AND p.introduced_by = m.name),
           (SELECT count(*) FROM parameters p JOIN parameters pp
              ON pp.model_id = m.parent_id AND pp.name = p.name AND pp.digest = p.digest
            WHERE p.model_id = m.id)
    FROM models m LEFT JOIN models parent ON parent.id = m.parent_id)sql");
  if (!stmt.is_ok()) return stmt.status();
  std::vector<StoredModel> models;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    StoredModel m;
    m.name = row.column_text(0);
    m.parent = row.column_text(1);
    m.recipe_hash = optional_text(row, 2);
    m.adaptation = json_column(row.column_text(3));
    m.architecture = json_column(row.column_text(4));
    m.created_at = row.column_text(5);
    m.updated_at = row.column_text(6);
    m.parameter_count = row.column_int(7);
    m.own_count = row.column_int(8);
    m.shared_with_parent = row.column_int(9);
    models.push_back(std::move(m));
  }));
  const std::size_t recorded = models.size();
  std::vector<StoredModel> ordered = parents_first(models);
  if (ordered.size() == recorded) return ordered;
  // The others never reach a base: their parent links form a cycle (only a damaged or
  // hand-edited lineage.db has one). Reading on would show them as "not trained".
  std::string names;
  for (const StoredModel& m : models)
    if (std::none_of(ordered.begin(), ordered.end(),
                     [&](const StoredModel& o) { return o.name == m.name; }))
      names += (names.empty() ? "'" : ", '") + m.name + "' (parent '" + m.parent + "')";
  return corruption("the parent links of model(s) " + names +
                    " form a cycle in the store, so they descend from no base: lineage.db is "
                    "damaged. Run `scion fsck` and restore lineage.db from a backup");
}

Result<std::optional<StoredModel>> LineageStore::find_model(const std::string& name) {
  auto all = models();
  if (!all.is_ok()) return all.status();
  for (StoredModel& m : *all) {
    if (m.name == name) return std::optional<StoredModel>(std::move(m));
  }
  return std::optional<StoredModel>();
}

Result<std::vector<StoredParameter>> LineageStore::parameters(const std::string& model) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT p.name, p.digest, p.dtype, p.shape, p.trainable, p.introduced_by, o.size "
      "FROM parameters p JOIN objects o ON o.digest = p.digest WHERE p.model_id = ? "
      "ORDER BY p.name");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id);
  std::vector<StoredParameter> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    out.push_back({row.column_text(0), row.column_text(1),
                   parse_dtype(row.column_text(2)).value_or(DType::kF32),
                   shape_column(row.column_text(3)), row.column_int(4) != 0, row.column_text(5),
                   row.column_int(6)});
  }));
  return out;
}

Result<std::vector<StoredParameter>> LineageStore::parameters(const std::string& model,
                                                              const std::string& recipe_hash) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT p.name, p.digest, p.dtype, p.shape, p.trainable, p.introduced_by, o.size "
      "FROM version_parameters p JOIN versions v ON v.id = p.version_id "
      "JOIN objects o ON o.digest = p.digest WHERE v.model_id = ? AND v.recipe_hash = ? "
      "ORDER BY p.name");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id).bind(2, std::string_view(recipe_hash));
  std::vector<StoredParameter> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    out.push_back({row.column_text(0), row.column_text(1),
                   parse_dtype(row.column_text(2)).value_or(DType::kF32),
                   shape_column(row.column_text(3)), row.column_int(4) != 0, row.column_text(5),
                   row.column_int(6)});
  }));
  return out;
}

Result<std::vector<StoredParameter>> LineageStore::missing_objects(const std::string& model) {
  auto stored = find_model(model);
  if (!stored.is_ok()) return stored.status();
  if (!stored->has_value() || !(*stored)->recipe_hash) return std::vector<StoredParameter>{};
  return missing_objects(model, *(*stored)->recipe_hash);
}

Result<std::vector<StoredParameter>> LineageStore::missing_objects(const std::string& model,
                                                                   const std::string& recipe_hash) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT p.name, p.digest, o.digest IS NULL, o.inline_bytes IS NULL "
      "FROM version_parameters p JOIN versions v ON v.id = p.version_id "
      "LEFT JOIN objects o ON o.digest = p.digest WHERE v.model_id = ? AND v.recipe_hash = ? "
      "ORDER BY p.name");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id).bind(2, std::string_view(recipe_hash));
  std::vector<StoredParameter> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    const std::string digest = row.column_text(1);
    const bool no_row = row.column_int(2) != 0;
    const bool in_file = row.column_int(3) != 0;
    if (no_row || (in_file && !objects_.contains(digest))) {
      StoredParameter missing;
      missing.name = row.column_text(0);
      missing.digest = digest;
      out.push_back(std::move(missing));
    }
  }));
  return out;
}

Result<std::map<std::string, std::int64_t>> LineageStore::sharing(const std::string& model) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT other.name, count(DISTINCT p.name) FROM parameters p "
      "JOIN parameters q ON q.digest = p.digest AND q.model_id <> p.model_id "
      "JOIN models other ON other.id = q.model_id WHERE p.model_id = ? GROUP BY other.name");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id);
  std::map<std::string, std::int64_t> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    out[row.column_text(0)] = row.column_int(1);
  }));
  return out;
}

Result<std::vector<RunRecord>> LineageStore::runs(const std::string& model, std::int64_t limit) {
  std::optional<std::int64_t> id;
  if (!model.empty()) {
    auto found = model_id(model);
    if (!found.is_ok()) return found.status();
    id = *found;
  }
  std::string sql = R"sql(
    SELECT r.id, m.name, r.kind, r.status, r.recipe_hash, r.dataset_digest, r.started_at,
           r.finished_at,
           (julianday(coalesce(r.finished_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))
              - julianday(r.started_at)) * 86400.0,
           r.seed, r.host, r.scion_version, r.hyperparameters, r.message,
           (SELECT coalesce(max(x.step), 0) FROM run_metrics x WHERE x.run_id = r.id),
           (SELECT x.loss FROM run_metrics x WHERE x.run_id = r.id AND x.loss IS NOT NULL
            ORDER BY x.step DESC LIMIT 1),
           r.pid, r.cases
    FROM runs r JOIN models m ON m.id = r.model_id)sql";
  sql += id ? " WHERE r.model_id = ?1" : " WHERE ?1 IS NULL";
  sql += " ORDER BY r.started_at DESC, r.id DESC LIMIT ?2";
  auto stmt = db_->prepare(sql);
  if (!stmt.is_ok()) return stmt.status();
  if (id) {
    stmt->bind(1, *id);
  } else {
    stmt->bind_null(1);
  }
  stmt->bind(2, limit > 0 ? limit : std::int64_t{-1});
  std::vector<RunRecord> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    RunRecord r;
    r.id = row.column_int(0);
    r.model = row.column_text(1);
    r.kind = parse_run_kind(row.column_text(2)).value_or(RunKind::kTrain);
    r.status = parse_run_status(row.column_text(3)).value_or(RunStatus::kRunning);
    r.recipe_hash = row.column_text(4);
    r.dataset_digest = optional_text(row, 5);
    r.started_at = row.column_text(6);
    r.finished_at = optional_text(row, 7);
    r.duration_s = row.column_double(8);
    r.seed = row.column_int(9);
    r.host = row.column_text(10);
    r.scion_version = row.column_text(11);
    r.hyperparameters = json_column(row.column_text(12));
    r.message = row.column_text(13);
    r.steps = row.column_int(14);
    if (!row.column_is_null(15)) r.final_loss = row.column_double(15);
    if (!row.column_is_null(16)) r.pid = row.column_int(16);
    if (!row.column_is_null(17)) r.cases = row.column_int(17);
    out.push_back(std::move(r));
  }));
  return out;
}

Result<std::vector<StepMetrics>> LineageStore::run_metrics(std::int64_t run_id) {
  auto stmt = db_->prepare(
      "SELECT step, loss, lr, validation, recorded_at FROM run_metrics WHERE run_id = ? "
      "ORDER BY step");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, run_id);
  std::vector<StepMetrics> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    StepMetrics m;
    m.step = row.column_int(0);
    if (!row.column_is_null(1)) m.loss = row.column_double(1);
    if (!row.column_is_null(2)) m.lr = row.column_double(2);
    const nlohmann::json validation = json_column(row.column_text(3));
    for (const auto& [name, value] : validation.items()) {
      if (value.is_number()) m.validation[name] = value.get<double>();
    }
    if (!row.column_is_null(4)) m.recorded_at = row.column_text(4);
    out.push_back(std::move(m));
  }));
  return out;
}

Result<std::vector<DatasetRecord>> LineageStore::datasets_of(const std::string& model) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT DISTINCT d.digest, d.path, d.rows, d.format FROM runs r "
      "JOIN datasets d ON d.digest = r.dataset_digest WHERE r.model_id = ? ORDER BY d.path");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id);
  std::vector<DatasetRecord> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    out.push_back(
        {row.column_text(0), row.column_text(1), row.column_int(2), row.column_text(3)});
  }));
  return out;
}

Result<std::vector<TestCaseResult>> LineageStore::test_results(const std::string& model,
                                                               const std::string& model_version) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT model_version, run_id, test, case_index, input, expected, output, passed "
      "FROM test_results WHERE model_id = ?1 AND (?2 = '' OR model_version = ?2) "
      "ORDER BY test, case_index, id");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id).bind(2, std::string_view(model_version));
  std::vector<TestCaseResult> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    TestCaseResult r;
    r.model = model;
    r.model_version = row.column_text(0);
    if (!row.column_is_null(1)) r.run_id = row.column_int(1);
    r.test = row.column_text(2);
    r.case_index = row.column_int(3);
    r.input = row.column_text(4);
    r.expected = row.column_text(5);
    r.output = row.column_text(6);
    r.passed = row.column_int(7) != 0;
    out.push_back(std::move(r));
  }));
  return out;
}

Result<std::vector<AssertionViolation>> LineageStore::assertion_violations(
    const std::string& model, const std::string& model_version) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT model_version, run_id, assertion, input, detail FROM assertion_violations "
      "WHERE model_id = ?1 AND (?2 = '' OR model_version = ?2) ORDER BY assertion, id");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id).bind(2, std::string_view(model_version));
  std::vector<AssertionViolation> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    AssertionViolation v;
    v.model = model;
    v.model_version = row.column_text(0);
    if (!row.column_is_null(1)) v.run_id = row.column_int(1);
    v.assertion = row.column_text(2);
    v.input = row.column_text(3);
    v.detail = json_column(row.column_text(4));
    out.push_back(std::move(v));
  }));
  return out;
}

Result<std::vector<EvalResult>> LineageStore::eval_results(const std::string& model,
                                                         const std::string& model_version) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT model_version, dataset, dataset_digest, rows, kind, metrics, evaluated_at, "
      "scion_version FROM eval_results WHERE model_id = ?1 AND (?2 = '' OR model_version = ?2) "
      "ORDER BY evaluated_at DESC, id DESC");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id).bind(2, std::string_view(model_version));
  std::vector<EvalResult> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    EvalResult r;
    r.model = model;
    r.model_version = row.column_text(0);
    r.dataset = row.column_text(1);
    r.dataset_digest = row.column_text(2);
    r.rows = row.column_int(3);
    r.kind = row.column_text(4);
    r.metrics = json_column(row.column_text(5));
    r.evaluated_at = row.column_text(6);
    r.scion_version = row.column_text(7);
    out.push_back(std::move(r));
  }));
  return out;
}

}  // namespace scion::lineage
