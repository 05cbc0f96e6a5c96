// Adaptation methods as units, the spec's side: what a method that lives in a folder of its
// own (runtime/adapters/<method>/, docs/architecture.md) tells the loader about its `adapt:` block.
//
// A MethodBlock owns, for its method: the block's key and its settings' keys (the loader
// checks them, `scion schema` types them), how the settings are read and checked (errors
// with key paths, through SpecReader), their JSON (one form: the recipe hash's canonical
// input and the store's record of the adaptation), and the rules it sets across a family
// (a model's block against its ancestors'), and, where PEFT has the method, its PEFT form
// (spec/peft_form.h). The loader, spec_json, json_schema and the PEFT files loop over the
// registered blocks instead of naming each method; a model's settings land in
// `Adaptation::methods` under the block's key.
//
// Methods register once, before anything reads a spec, from one list
// (runtime/adapters/registry.cpp: runtime::register_adaptation_methods(), which scion's
// main and the test mains call first). A program that does not call it reads no method
// of the list: its key is reported as an unknown adaptation method.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace scion::spec {

class SpecReader;
struct YamlNode;
struct Architecture;
struct Model;
struct Adaptation;
class PeftForm;

// One model's settings of a registered method; each method derives its own, with a
// `static constexpr std::string_view kKey` naming its block (Adaptation::find reads it),
// or keeps a plain aggregate and stores it wrapped in MethodSettingsOf (below).
class MethodSettings {
 public:
  virtual ~MethodSettings() = default;
  // The settings as the recipe hash and the store record them. A method's JSON must not
  // change once recipes hash it (tests/unit/recipe_hash_golden.cpp holds the examples').
  virtual nlohmann::json json() const = 0;
};

// A method's settings kept as a plain aggregate `T` (with `static constexpr
// std::string_view kKey` and `nlohmann::json json() const`), so that code builds them with
// designated initialisers (`Settings{.rank = 2, .alpha = 4}`), which a class with a virtual
// base cannot take. Adaptation::find<T>() and set<T>() wrap and unwrap it; no one else
// names this type.
template <class T>
struct MethodSettingsOf final : MethodSettings {
  explicit MethodSettingsOf(T settings) : value(std::move(settings)) {}
  nlohmann::json json() const override { return value.json(); }
  const T value;
};

class MethodBlock {
 public:
  virtual ~MethodBlock() = default;

  // The block's key under `adapt:` ("ia3") and the keys its mapping may hold.
  virtual std::string_view key() const = 0;
  virtual std::span<const std::string_view> keys() const = 0;

  // Reads the block at `path` (`node` is a mapping: the loader checked), reporting through
  // `reader`. `arch` is the base's architecture, null when unknown (checks that need it are
  // skipped then).
  virtual std::shared_ptr<const MethodSettings> read(SpecReader& reader, const YamlNode& node,
                                                     const std::string& path,
                                                     const Architecture* arch) const = 0;

  // The inverse of MethodSettings::json; null when `json` is not such a form (a damaged
  // or foreign record).
  virtual std::shared_ptr<const MethodSettings> from_json(const nlohmann::json& json) const = 0;

  // `scion schema`: the JSON Schema of each of keys() (a key left out is reported by
  // spec::keys_without_schema_type) and a one-line description of the method.
  virtual nlohmann::json key_schemas() const = 0;
  virtual std::string_view description() const = 0;

  // Rules across the family, once every model is read: `model` (whose `adapt` node is
  // `adapt`) against its `ancestors`, parent first; called for every model with an `adapt:`
  // block, whether or not it uses this method, so a method can refuse what others put where
  // it already is. `arch` as in read().
  virtual void check_family(SpecReader& reader, const YamlNode& adapt, const Model& model,
                            const Architecture* arch,
                            const std::vector<const Model*>& ancestors) const;

  // How the method's adapter reads in PEFT's files (spec/peft_form.h); null (the default)
  // when PEFT has no such adapter.
  virtual const PeftForm* peft() const;

  // The settings' enums that json() holds as their index (recipe hashes depend on it), by
  // their key in json(), each as its words in index order: words[i] names index i. The
  // words mode of spec/spec_json.h prints them so, and from_json reads either. None (the
  // default): json() holds no index.
  virtual std::map<std::string, std::vector<std::string_view>, std::less<>> enum_words() const;

  // How refusals name the method's adapter, "bottleneck adapter" (after "a"), when its
  // parameters are not a change of the trunk's weights and so cannot be folded into them: a
  // model with it has no --format huggingface or PEFT form, and an ancestor with it cannot
  // be merged into the base folder of a descendant's PEFT export. "" (the default): the
  // method folds into the weights.
  virtual std::string_view unfoldable_adapter() const;

  // What a model's method label (lineage::method_label: `lineage tree`, `lineage show`)
  // adds after the block's key for `settings`, its record in spec words (which may come from
  // an older store), such as a rank: " r=8". "" (the default): the key alone.
  virtual std::string label(const nlohmann::json& settings) const;
};

// The first registered method of `adaptation` whose adapter does not fold into the
// weights (MethodBlock::unfoldable_adapter), in registration order: its words; "" when
// every one folds.
std::string_view unfoldable_adapter(const Adaptation& adaptation);

// Adds `block` to the registry. Registration happens at start-up, before any spec is read,
// and never afterwards (the registry is not locked). A second block under a taken key is a
// programming error: it aborts with a message.
void register_method_block(std::unique_ptr<const MethodBlock> block);

// The registered blocks, in registration order.
const std::vector<const MethodBlock*>& method_blocks();

// The block under `key`; null when no method registered it.
const MethodBlock* find_method_block(std::string_view key);

}  // namespace scion::spec
