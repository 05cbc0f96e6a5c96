#include "base/json_number_range.h"

#include <nlohmann/json.hpp>
#include <vector>

namespace scion {
namespace {

using json = nlohmann::json;

// A SAX pass that keeps the key path of the value being read, and stops at the first
// number out of range with that path.
class RangeFinder final : public nlohmann::json_sax<json> {
 public:
  std::optional<OutOfRangeNumber> found;

  bool null() override { return value_read(); }
  bool boolean(bool) override { return value_read(); }
  bool number_integer(number_integer_t) override { return value_read(); }
  bool number_unsigned(number_unsigned_t) override { return value_read(); }
  bool number_float(number_float_t, const string_t&) override { return value_read(); }
  bool string(string_t&) override { return value_read(); }
  bool binary(binary_t&) override { return value_read(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& name) override {
    frames_.back().key = name;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& error) override {
    if (error.id != 406) return false;
    found.emplace();
    found->key_path = key_path();
    found->literal = last_token;
    found->column = position;
    return false;
  }

 private:
  struct Frame {
    bool array = false;
    std::string key;
    std::size_t index = 0;
  };

  bool open(bool array) {
    frames_.push_back({.array = array});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value_read();
  }
  // A value of the enclosing array is done: the next one has the next index.
  bool value_read() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  std::string key_path() const {
    std::string path;
    for (const Frame& f : frames_) {
      if (f.array) {
        path += '[';
        path += std::to_string(f.index);
        path += ']';
        continue;
      }
      if (!path.empty()) path += '.';
      path += f.key;
    }
    return path;
  }

  std::vector<Frame> frames_;
};

}  // namespace

std::optional<OutOfRangeNumber> find_out_of_range_number(std::string_view text) {
  RangeFinder finder;
  json::sax_parse(text.begin(), text.end(), &finder);
  return finder.found;
}

std::string describe_out_of_range_number(std::string_view where, const OutOfRangeNumber& number) {
  std::string message(where);
  message += ':';
  message += std::to_string(number.column);
  message += number.key_path.empty() ? ": the value" : ": field '";
  message += number.key_path;
  message += number.key_path.empty() ? " holds " : "' holds ";
  message += number.literal;
  message +=
      ", beyond the range of a 64-bit float (about ±1.8e308); write the number within that "
      "range, or as a string";
  return message;
}

}  // namespace scion
