// Versions of models, the spec versions and tags that keep them, and the keyed outcomes of
// tests: the parts of LineageStore that schema version 4 added (docs/store.md).
#include <string_view>

#include "lineage/digest.h"
#include "lineage/store.h"
#include "lineage/store_rows.h"

namespace scion::lineage {

namespace {

constexpr std::string_view kVersionColumns = R"sql(
    SELECT v.id, m.name, v.recipe_hash,
           coalesce((SELECT pm.name FROM models pm WHERE pm.id = pv.model_id),
                    (SELECT pm.name FROM models pm WHERE pm.id = m.parent_id), ''),
           pv.recipe_hash, v.run_id, v.data_digests, v.adaptation, v.architecture,
           v.created_at, coalesce(m.version_id = v.id, 0),
           (SELECT count(*) FROM version_parameters p WHERE p.version_id = v.id)
    FROM versions v JOIN models m ON m.id = v.model_id
    LEFT JOIN versions pv ON pv.id = v.parent_version_id)sql";

StoredVersion version_row(const Statement& row) {
  StoredVersion v;
  v.id = row.column_int(0);
  v.model = row.column_text(1);
  v.recipe_hash = row.column_text(2);
  v.parent = row.column_text(3);
  v.parent_recipe_hash = optional_text(row, 4);
  if (!row.column_is_null(5)) v.run = row.column_int(5);
  for (const nlohmann::json& d : json_column(row.column_text(6)))
    if (d.is_string()) v.data_digests.push_back(d.get<std::string>());
  v.adaptation = json_column(row.column_text(7));
  v.architecture = json_column(row.column_text(8));
  v.created_at = row.column_text(9);
  v.current = row.column_int(10) != 0;
  v.parameter_count = row.column_int(11);
  return v;
}

// The digest that identifies a spec version: its models and recipe hashes, sorted by name.
std::string spec_version_digest(const std::map<std::string, std::string>& members) {
  std::string listing;
  for (const auto& [model, recipe] : members) listing += model + " " + recipe + "\n";
  return sha256_hex(std::as_bytes(std::span(listing.data(), listing.size())));
}

}  // namespace

Result<std::vector<StoredVersion>> LineageStore::versions(const std::string& model) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(std::string(kVersionColumns) +
                           " WHERE v.model_id = ? ORDER BY v.created_at DESC, v.id DESC");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id);
  std::vector<StoredVersion> out;
  SCION_RETURN_IF_ERROR(
      stmt->for_each_row([&](const Statement& row) { out.push_back(version_row(row)); }));
  return out;
}

Result<std::optional<StoredVersion>> LineageStore::find_version(const std::string& model,
                                                                const std::string& recipe_hash) {
  auto id = model_id(model);
  if (!id.is_ok()) return id.status();
  auto stmt =
      db_->prepare(std::string(kVersionColumns) + " WHERE v.model_id = ? AND v.recipe_hash = ?");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id).bind(2, std::string_view(recipe_hash));
  auto row = stmt->step();
  if (!row.is_ok()) return row.status();
  if (!*row) return std::optional<StoredVersion>();
  return std::optional<StoredVersion>(version_row(*stmt));
}

Result<StoredModel> LineageStore::model_at(const std::string& model,
                                           const std::string& recipe_hash) {
  auto version = find_version(model, recipe_hash);
  if (!version.is_ok()) return version.status();
  if (!version->has_value())
    return not_found("the store holds no version of '" + model + "' for recipe " +
                     recipe_hash.substr(0, 12));
  const StoredVersion& v = **version;
  // Shared with the parent: the parent's version it was made from, else its current one.
  auto stmt = db_->prepare(R"sql(
    SELECT m.created_at,
           (SELECT count(*) FROM version_parameters p WHERE p.version_id = v.id
              AND p.introduced_by = m.name),
           (SELECT count(*) FROM version_parameters p JOIN version_parameters pp
              ON pp.version_id = coalesce(v.parent_version_id,
                                          (SELECT version_id FROM models WHERE id = m.parent_id))
             AND pp.name = p.name AND pp.digest = p.digest
            WHERE p.version_id = v.id)
    FROM versions v JOIN models m ON m.id = v.model_id WHERE v.id = ?)sql");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, v.id);
  auto row = stmt->step();
  if (!row.is_ok()) return row.status();
  if (!*row) return corruption("version " + std::to_string(v.id) + " of '" + model + "' is gone");
  StoredModel m;
  m.name = model;
  m.parent = v.parent;
  m.recipe_hash = v.recipe_hash;
  m.adaptation = v.adaptation;
  m.architecture = v.architecture;
  m.created_at = stmt->column_text(0);
  m.updated_at = v.created_at;
  m.parameter_count = v.parameter_count;
  m.own_count = stmt->column_int(1);
  m.shared_with_parent = stmt->column_int(2);
  return m;
}

// REQUIRES: a transaction is open.
Result<std::int64_t> LineageStore::upsert_spec_version(
    const std::string& spec_path, const std::map<std::string, std::string>& members) {
  const std::string digest = spec_version_digest(members);
  const std::string now = utc_now();
  auto seen = db_->prepare(
      "INSERT INTO spec_versions (digest, spec_path, first_seen, last_seen) VALUES (?1, ?2, ?3, "
      "?3) ON CONFLICT (digest) DO UPDATE SET spec_path = excluded.spec_path, last_seen = "
      "excluded.last_seen");
  if (!seen.is_ok()) return seen.status();
  SCION_RETURN_IF_ERROR(seen->bind(1, std::string_view(digest))
                            .bind(2, std::string_view(spec_path))
                            .bind(3, std::string_view(now))
                            .run());
  auto id = db_->prepare("SELECT id FROM spec_versions WHERE digest = ?");
  if (!id.is_ok()) return id.status();
  id->bind(1, std::string_view(digest));
  auto row = id->step();
  if (!row.is_ok()) return row.status();
  if (!*row) return corruption("the spec version just recorded is gone");
  const std::int64_t spec_version = id->column_int(0);
  auto member = db_->prepare(
      "INSERT OR IGNORE INTO spec_version_members (spec_version_id, version_id) "
      "SELECT ?, v.id FROM versions v JOIN models m ON m.id = v.model_id "
      "WHERE m.name = ? AND v.recipe_hash = ?");
  if (!member.is_ok()) return member.status();
  for (const auto& [model, recipe] : members) {
    member->reset();
    SCION_RETURN_IF_ERROR(member->bind(1, spec_version)
                              .bind(2, std::string_view(model))
                              .bind(3, std::string_view(recipe))
                              .run());
  }
  return spec_version;
}

Result<std::int64_t> LineageStore::record_spec_version(
    const std::string& spec_path, const std::map<std::string, std::string>& members) {
  auto tx = Transaction::begin(*db_);
  if (!tx.is_ok()) return tx.status();
  auto id = upsert_spec_version(spec_path, members);
  if (!id.is_ok()) return id.status();
  SCION_RETURN_IF_ERROR((*tx)->commit());
  return id;
}

Status LineageStore::tag_spec_version(const std::string& tag, const std::string& spec_path,
                                      const std::map<std::string, std::string>& members) {
  auto tx = Transaction::begin(*db_);
  if (!tx.is_ok()) return tx.status();
  auto id = upsert_spec_version(spec_path, members);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "INSERT INTO tags (name, spec_version_id, created_at) VALUES (?, ?, ?) "
      "ON CONFLICT (name) DO UPDATE SET spec_version_id = excluded.spec_version_id, "
      "created_at = excluded.created_at");
  if (!stmt.is_ok()) return stmt.status();
  SCION_RETURN_IF_ERROR(
      stmt->bind(1, std::string_view(tag)).bind(2, *id).bind(3, std::string_view(utc_now())).run());
  return (*tx)->commit();
}

Status LineageStore::delete_tag(const std::string& tag) {
  auto stmt = db_->prepare("DELETE FROM tags WHERE name = ?");
  if (!stmt.is_ok()) return stmt.status();
  SCION_RETURN_IF_ERROR(stmt->bind(1, std::string_view(tag)).run());
  if (sqlite3_changes(db_->handle()) != 1)
    return not_found("no tag '" + tag + "' in the store; `scion tag` (without a name) lists the "
                     "tags there are");
  return Status::ok();
}

Result<std::vector<SpecVersion>> LineageStore::spec_versions() {
  auto stmt = db_->prepare(
      "SELECT id, digest, spec_path, first_seen, last_seen FROM spec_versions "
      "ORDER BY last_seen DESC, id DESC");
  if (!stmt.is_ok()) return stmt.status();
  std::vector<SpecVersion> out;
  std::map<std::int64_t, std::size_t> index;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    index[row.column_int(0)] = out.size();
    out.push_back({.id = row.column_int(0),
                   .digest = row.column_text(1),
                   .spec_path = row.column_text(2),
                   .first_seen = row.column_text(3),
                   .last_seen = row.column_text(4)});
  }));
  auto tags = db_->prepare("SELECT name, spec_version_id FROM tags ORDER BY name");
  if (!tags.is_ok()) return tags.status();
  SCION_RETURN_IF_ERROR(tags->for_each_row([&](const Statement& row) {
    if (auto it = index.find(row.column_int(1)); it != index.end())
      out[it->second].tags.push_back(row.column_text(0));
  }));
  auto members = db_->prepare(
      "SELECT s.spec_version_id, m.name, v.recipe_hash FROM spec_version_members s "
      "JOIN versions v ON v.id = s.version_id JOIN models m ON m.id = v.model_id");
  if (!members.is_ok()) return members.status();
  SCION_RETURN_IF_ERROR(members->for_each_row([&](const Statement& row) {
    if (auto it = index.find(row.column_int(0)); it != index.end())
      out[it->second].members[row.column_text(1)] = row.column_text(2);
  }));
  return out;
}

Status LineageStore::record_test_outcomes(const std::vector<TestOutcome>& outcomes) {
  auto tx = Transaction::begin(*db_);
  if (!tx.is_ok()) return tx.status();
  auto stmt = db_->prepare(
      "INSERT INTO test_outcomes (run_id, kind, name, model_id, model_version, "
      "definition_digest, lexicon_digests, semantics_version, cases, failed, inherited) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!stmt.is_ok()) return stmt.status();
  for (const TestOutcome& o : outcomes) {
    auto id = model_id(o.key.model);
    if (!id.is_ok()) return id.status();
    stmt->reset();
    SCION_RETURN_IF_ERROR(stmt->bind(1, o.run)
                              .bind(2, std::string_view(o.key.kind))
                              .bind(3, std::string_view(o.key.name))
                              .bind(4, *id)
                              .bind(5, std::string_view(o.key.model_version))
                              .bind(6, std::string_view(o.key.definition_digest))
                              .bind(7, std::string_view(o.key.lexicon_digests.dump()))
                              .bind(8, o.key.semantics_version)
                              .bind(9, o.cases)
                              .bind(10, o.failed)
                              .bind(11, o.inherited)
                              .run());
  }
  return (*tx)->commit();
}

Result<std::optional<TestOutcome>> LineageStore::find_test_outcome(const TestOutcomeKey& key) {
  auto id = model_id(key.model);
  if (!id.is_ok()) return id.status();
  auto stmt = db_->prepare(
      "SELECT o.run_id, o.cases, o.failed, o.inherited FROM test_outcomes o "
      "JOIN runs r ON r.id = o.run_id "
      "WHERE o.model_id = ? AND o.model_version = ? AND o.kind = ? AND o.name = ? "
      "AND o.definition_digest = ? AND o.lexicon_digests = ? AND o.semantics_version = ? "
      "AND r.status = 'finished' ORDER BY o.run_id DESC LIMIT 1");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, *id)
      .bind(2, std::string_view(key.model_version))
      .bind(3, std::string_view(key.kind))
      .bind(4, std::string_view(key.name))
      .bind(5, std::string_view(key.definition_digest))
      .bind(6, std::string_view(key.lexicon_digests.dump()))
      .bind(7, key.semantics_version);
  auto row = stmt->step();
  if (!row.is_ok()) return row.status();
  if (!*row) return std::optional<TestOutcome>();
  return std::optional<TestOutcome>(TestOutcome{.key = key,
                                                .run = stmt->column_int(0),
                                                .cases = stmt->column_int(1),
                                                .failed = stmt->column_int(2),
                                                .inherited = stmt->column_int(3)});
}

Result<std::vector<TestOutcome>> LineageStore::test_outcomes(std::int64_t run) {
  auto stmt = db_->prepare(
      "SELECT o.kind, o.name, m.name, o.model_version, o.definition_digest, o.lexicon_digests, "
      "o.semantics_version, o.cases, o.failed, o.inherited FROM test_outcomes o "
      "JOIN models m ON m.id = o.model_id WHERE o.run_id = ? ORDER BY o.kind, o.name");
  if (!stmt.is_ok()) return stmt.status();
  stmt->bind(1, run);
  std::vector<TestOutcome> out;
  SCION_RETURN_IF_ERROR(stmt->for_each_row([&](const Statement& row) {
    out.push_back({.key = {.kind = row.column_text(0),
                           .name = row.column_text(1),
                           .model = row.column_text(2),
                           .model_version = row.column_text(3),
                           .definition_digest = row.column_text(4),
                           .lexicon_digests = json_column(row.column_text(5)),
                           .semantics_version = row.column_int(6)},
                   .run = run,
                   .cases = row.column_int(7),
                   .failed = row.column_int(8),
                   .inherited = row.column_int(9)});
  }));
  return out;
}

}  // namespace scion::lineage
