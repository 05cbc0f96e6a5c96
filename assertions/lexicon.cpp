#include "assertions/lexicon.h"

#include <fmt/format.h>

#include <fstream>

#include "assertions/builtin_lexicon_data.h"
#include "base/regular_file.h"

namespace scion::assertions {

bool is_lexicon_name(std::string_view name) {
  if (name.empty()) return false;
  auto is_alpha = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!is_alpha(name[0])) return false;
  for (char c : name)
    if (!is_alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

LexiconSet LexiconSet::builtin() {
  LexiconSet set;
  for (std::size_t i = 0; i < kBuiltinLexiconCount; ++i) {
    const BuiltinLexiconData& data = kBuiltinLexiconData[i];
    set.lexicons_[data.name] = std::vector<std::string>(data.entries, data.entries + data.size);
  }
  return set;
}

Result<LexiconSet> LexiconSet::for_workspace(const spec::Workspace& workspace) {
  LexiconSet set = builtin();
  for (const auto& [name, entries] : workspace.lexicons) {
    Status s =
        set.add(name, entries, fmt::format("{}: lexicons.{}", workspace.spec_path.string(), name));
    if (!s.is_ok()) return s;
  }
  return set;
}

Status LexiconSet::add(const std::string& name, std::vector<std::string> entries,
                       std::string_view origin) {
  if (!is_lexicon_name(name))
    return spec_error(
        fmt::format("{}: lexicon name '{}' is not an identifier; use letters, digits "
                    "and '_', starting with a letter",
                    origin, name));
  if (entries.empty())
    return spec_error(
        fmt::format("{}: lexicon '{}' is empty; give it at least one entry", origin, name));
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].empty())
      return spec_error(
          fmt::format("{}: entry {} of lexicon '{}' is empty; remove it", origin, i, name));
  lexicons_[name] = std::move(entries);
  return Status::ok();
}

const std::vector<std::string>* LexiconSet::find(std::string_view name) const {
  auto it = lexicons_.find(name);
  return it == lexicons_.end() ? nullptr : &it->second;
}

std::vector<std::string> LexiconSet::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entries] : lexicons_) out.push_back(name);
  return out;
}

Result<std::vector<std::string>> read_lexicon_file(const std::filesystem::path& path) {
  if (Status regular = check_regular_file(path, FollowLinks::kYes);
      !regular && regular.code() != StatusCode::kNotFound)
    return regular;
  std::ifstream in(path);
  if (!in)
    return io_error(fmt::format("{}: cannot open the lexicon file; check the path", path.string()));
  std::vector<std::string> entries;
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto last = line.find_last_not_of(" \t\r");
    entries.push_back(line.substr(first, last - first + 1));
  }
  if (in.bad()) return io_error(fmt::format("{}: reading the lexicon file failed", path.string()));
  if (entries.empty())
    return spec_error(fmt::format("{}: the lexicon file has no entries; write one entry per line",
                                  path.string()));
  return entries;
}

std::vector<BuiltinLexiconInfo> builtin_lexicon_catalog() {
  std::vector<BuiltinLexiconInfo> out;
  for (std::size_t i = 0; i < kBuiltinLexiconCount; ++i)
    out.push_back({kBuiltinLexiconData[i].name, kBuiltinLexiconData[i].description,
                   kBuiltinLexiconData[i].size});
  return out;
}

}  // namespace scion::assertions
