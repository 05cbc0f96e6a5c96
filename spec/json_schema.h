// The JSON Schema (draft 2020-12) of scion.yaml, for editors and validators.
//
// Built from the loader's own tables (spec/keys.h): every mapping the loader closes is closed
// in the schema (additionalProperties: false) with exactly the loader's keys, and every
// closed value lists exactly the loader's words, so the two cannot drift apart. The schema
// describes shape only (keys, types, words); ranges, references between models and the
// bodies of tests and assertions (checked by assertions/) are left to `scion validate`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace scion::spec {

// The schema's identifier ($id). It names no web address: editors find the schema through
// a modeline naming a file (scion.schema.json, written by `scion init`).
inline constexpr const char* kSchemaId = "urn:scion:schema:workspace";

nlohmann::json workspace_json_schema();

// Keys of spec/keys.h for which json_schema.cpp gives no type ("models.*.train.seed"):
// empty unless someone added a key to the loader without describing it here.
std::vector<std::string> keys_without_schema_type();

}  // namespace scion::spec
