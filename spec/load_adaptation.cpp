// The `adapt` mapping of a descendant: one entry per adaptation method.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "spec/keys.h"
#include "spec/loader_parts.h"

namespace scion::spec::detail {
namespace {

constexpr int kUnknownLimit = 1 << 20;  // bounds used when the architecture is unknown

int layers_of(const Architecture* a) { return a ? a->layers : kUnknownLimit; }
int max_length_of(const Architecture* a) { return a ? a->max_length : kUnknownLimit; }

void read_layers(SpecReader& r, const YamlNode& node, const std::string& path,
                 const Architecture* a, std::vector<int>& out) {
  const int layers = layers_of(a);
  r.read_int_list(
      find(node, "layers"), join_path(path, "layers"), out, 0, layers - 1,
      a ? fmt::format("a layer index from 0 to {} (the base has {} layers)", layers - 1, layers)
        : std::string("a layer index of at least 0"));
}

// `method: {}`, `method: true`, `method:` (null) enable a method without settings;
// `method: false` leaves it off. Returns whether the method is on.
bool read_switch(SpecReader& r, const YamlNode& node, const std::string& path) {
  if (node.is_null()) return true;
  if (node.is_map()) {
    r.check_keys(node, path, {});
    return true;
  }
  bool on = false;
  if (node.is_scalar() && !node.quoted && (node.value == "true" || node.value == "false")) {
    r.read_bool(&node, path, on);
    return on;
  }
  r.error(node, path, fmt::format("expected true, false or {{}}, got {}", describe(node)));
  return false;
}

int read_virtual_tokens(SpecReader& r, const YamlNode& node, const std::string& path,
                        const Architecture* a) {
  int tokens = 0;
  const int limit = max_length_of(a) - 1;
  if (const YamlNode* n = r.require(node, path, "virtual_tokens", "how many virtual tokens"))
    r.read_int(n, join_path(path, "virtual_tokens"), tokens, 1, limit,
               a ? fmt::format("an integer from 1 to {} (below the base's max_length)", limit)
                 : std::string("a positive integer"));
  return tokens;
}

PrefixSpec load_prefix(SpecReader& r, const YamlNode& node, const std::string& path,
                       const Architecture* a) {
  PrefixSpec s;
  r.check_keys(node, path, keys::kPrefix);
  s.virtual_tokens = read_virtual_tokens(r, node, path, a);
  read_layers(r, node, path, a, s.layers);
  r.read_int(find(node, "reparam_hidden"), join_path(path, "reparam_hidden"), s.reparam_hidden, 0,
             1 << 16, "an integer from 0 (no reparametrisation) to 65536");
  return s;
}

PromptSpec load_prompt(SpecReader& r, const YamlNode& node, const std::string& path,
                       const Architecture* a) {
  PromptSpec s;
  r.check_keys(node, path, keys::kPrompt);
  s.virtual_tokens = read_virtual_tokens(r, node, path, a);
  r.read_choice<PromptInit>(find(node, "init"), join_path(path, "init"), keys::kPromptInits, s.init,
                            "prompt init");
  const YamlNode* text = find(node, "text");
  r.read_string(text, join_path(path, "text"), s.init_text);
  if (s.init == PromptInit::kText && (text == nullptr || s.init_text.empty()))
    r.error(text ? *text : node, text ? join_path(path, "text") : path,
            "init: text needs a non-empty 'text' to initialise the prompt from");
  if (s.init != PromptInit::kText && text != nullptr)
    r.error(*text, join_path(path, "text"), "'text' is used only with init: text");
  return s;
}

HeadSpec load_head(SpecReader& r, const YamlNode& node, const std::string& path) {
  HeadSpec s;
  r.check_keys(node, path, keys::kHead);
  r.read_choice<HeadTask>(find(node, "task"), join_path(path, "task"), keys::kTasks, s.task,
                          "head task");
  const YamlNode* labels = find(node, "labels");
  const std::string lpath = join_path(path, "labels");
  // One output is a head of its own for regression (one number) and multi-label (one
  // yes/no label); choosing among classes or tags needs two.
  const bool one_is_enough = s.task == HeadTask::kRegression || s.task == HeadTask::kMultiLabel;
  if (r.read_string_list(labels, lpath, s.labels) && labels) {
    std::set<std::string> seen(s.labels.begin(), s.labels.end());
    const std::size_t least = one_is_enough ? 1 : 2;
    if (s.labels.size() < least || seen.size() != s.labels.size() || seen.count(""))
      r.error(*labels, lpath,
              fmt::format("expected at least {} distinct, non-empty label{}",
                          least == 1 ? "one" : "two", least == 1 ? "" : "s"));
  }
  const YamlNode* pooling = find(node, "pooling");
  r.read_choice<Pooling>(pooling, join_path(path, "pooling"), keys::kPoolings, s.pooling,
                         "pooling");
  if (pooling && s.task == HeadTask::kTokenClassification)
    r.error(*pooling, join_path(path, "pooling"),
            "'pooling' does not apply to task: token_classification (every position is "
            "classified)");
  if (const YamlNode* threshold = find(node, "threshold")) {
    float value = 0.5f;
    if (s.task != HeadTask::kMultiLabel)
      r.error(*threshold, join_path(path, "threshold"),
              "'threshold' applies only to task: multi_label");
    else if (r.read_float(threshold, join_path(path, "threshold"), value, 0, true, 1, true,
                          "a probability above 0 and below 1"))
      s.threshold = value;
  }
  return s;
}

// The methods a base without biases can take instead of BitFit, "a, b or c": every one but
// BitFit and a head (which alone adapts none of the trunk), the registered ones included.
std::string methods_without_biases(const std::vector<std::string_view>& methods) {
  std::vector<std::string_view> others;
  for (std::string_view m : methods)
    if (m != "bitfit" && m != "head") others.push_back(m);
  std::string out;
  for (std::size_t i = 0; i < others.size(); ++i)
    out += fmt::format("{}{}", i == 0 ? "" : i + 1 == others.size() ? " or " : ", ", others[i]);
  return out;
}

}  // namespace

void load_adaptation(SpecReader& r, const YamlNode& node, const std::string& path,
                     const Architecture* a, Adaptation& out) {
  if (!r.expect_map(node, path, "a mapping from adaptation methods to their settings")) return;
  const std::vector<std::string_view> methods = keys::method_keys();
  r.check_keys(node, path, methods, "adaptation method");
  const std::size_t errors_before = r.error_count();
  bool any = false, unknown = false;
  for (const auto& [key, value] : node.entries) {
    if (!key->is_scalar()) continue;
    const std::string& method = key->value;
    const std::string mpath = join_path(path, method);
    const bool settings = method != "bitfit" && method != "full";
    if (settings && !r.expect_map(*value, mpath, "a mapping of " + method + " settings")) continue;
    if (const MethodBlock* block = find_method_block(method)) {
      out.methods[method] = block->read(r, *value, mpath, a);
    } else if (method == "prefix") {
      out.prefix = load_prefix(r, *value, mpath, a);
    } else if (method == "prompt") {
      out.prompt = load_prompt(r, *value, mpath, a);
    } else if (method == "head") {
      out.head = load_head(r, *value, mpath);
    } else if (method == "bitfit") {
      if (!read_switch(r, *value, mpath)) continue;
      if (a && !a->linear_bias && !a->qkv_bias && a->norm_kind == NormKind::kRmsNorm) {
        r.error(*key, mpath,
                fmt::format("BitFit trains the trunk's biases, and this {} base has none",
                            a->hf_model_type),
                "; choose " + methods_without_biases(methods));
        continue;
      }
      out.bitfit = BitfitSpec{};
    } else if (method == "full") {
      if (!read_switch(r, *value, mpath)) continue;
      out.full = FullSpec{};
    } else {
      unknown = true;  // reported by check_keys
      continue;
    }
    any = true;
  }
  if (!any && !unknown && r.error_count() == errors_before)
    r.error(node, path,
            fmt::format("expected at least one adaptation method ({})", fmt::join(methods, ", ")));
}

}  // namespace scion::spec::detail
