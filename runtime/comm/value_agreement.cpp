#include "runtime/comm/value_agreement.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

namespace scion::runtime {
namespace {

// Length-prefixed fields: any bytes, any length.
void append_field(std::string& out, const std::string& field) {
  const std::uint64_t size = field.size();
  out.append(reinterpret_cast<const char*>(&size), sizeof size);
  out += field;
}

std::string encode(const std::vector<AgreedValue>& values) {
  std::string out;
  for (const AgreedValue& v : values) {
    append_field(out, v.what);
    append_field(out, v.value);
  }
  return out;
}

// nullopt for bytes that are not a list of fields (another scion's encoding).
std::optional<std::map<std::string, std::string>> decode(const std::string& bytes) {
  std::map<std::string, std::string> out;
  std::size_t at = 0;
  auto field = [&]() -> std::optional<std::string> {
    std::uint64_t size = 0;
    if (bytes.size() - at < sizeof size) return std::nullopt;
    bytes.copy(reinterpret_cast<char*>(&size), sizeof size, at);
    at += sizeof size;
    if (bytes.size() - at < size) return std::nullopt;
    std::string text = bytes.substr(at, size);
    at += size;
    return text;
  };
  while (at < bytes.size()) {
    auto what = field();
    auto value = field();
    if (!what || !value) return std::nullopt;
    out[*what] = *value;
  }
  return out;
}

std::string shown(const std::optional<std::string>& value) {
  if (!value) return "none";
  return value->size() > 16 ? value->substr(0, 12) + "..." : *value;
}

}  // namespace

Status agree_on_values(Communicator& comm, const std::vector<AgreedValue>& values) {
  if (comm.size() == 1) return Status::ok();
  auto all = comm.all_gather(encode(values));
  if (!all) return all.status();
  std::vector<std::map<std::string, std::string>> ranks;
  for (std::size_t r = 0; r < all->size(); ++r) {
    auto decoded = decode((*all)[r]);
    if (!decoded)
      return spec_error("rank " + std::to_string(r) +
                        " sent its start-up values in another form: every rank must run the "
                        "same scion");
    ranks.push_back(std::move(*decoded));
  }
  // Every name any rank holds, in the order rank 0 listed its own, then the others'.
  std::vector<std::string> names;
  for (const AgreedValue& v : values) names.push_back(v.what);
  for (const auto& rank : ranks)
    for (const auto& [what, value] : rank)
      if (std::find(names.begin(), names.end(), what) == names.end()) names.push_back(what);
  std::string differences;
  for (const std::string& what : names) {
    auto value_at = [&](std::size_t r) -> std::optional<std::string> {
      auto it = ranks[r].find(what);
      return it == ranks[r].end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    std::string line;
    for (std::size_t r = 1; r < ranks.size(); ++r)
      if (value_at(r) != value_at(0))
        line += ", rank " + std::to_string(r) + " has " + shown(value_at(r));
    if (line.empty()) continue;
    differences +=
        (differences.empty() ? "" : "; ") + what + ": rank 0 has " + shown(value_at(0)) + line;
  }
  if (differences.empty()) return Status::ok();
  return spec_error("the ranks disagree, so no rank started any work: " + differences +
                    ". Every rank must run the same scion on the same spec, data and store "
                    "(check the files each rank's machine sees)");
}

}  // namespace scion::runtime
