#include "runtime/arena.h"

#include <cassert>
#include <stdexcept>
#include <utility>

#include "runtime/backend.h"

namespace scion::runtime {
namespace {
constexpr std::size_t kAlignment = 64;
std::size_t round_up(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
}  // namespace

Arena::Arena(const std::vector<ViewSpec>& table, Backend& backend) : backend_(&backend) {
  std::vector<std::size_t> offsets;
  offsets.reserve(table.size());
  for (const ViewSpec& spec : table) {
    offsets.push_back(bytes_);
    Tensor probe{nullptr, spec.shape, spec.dtype, backend.device()};
    bytes_ += round_up(probe.bytes());
  }
  data_ = backend.allocate(bytes_ == 0 ? kAlignment : bytes_);
  backend.fill_zero(data_, bytes_);
  for (std::size_t i = 0; i < table.size(); ++i) {
    const ViewSpec& spec = table[i];
    Tensor view{static_cast<char*>(data_) + offsets[i], spec.shape, spec.dtype, backend.device()};
    const bool inserted = views_.emplace(spec.name, view).second;
    assert(inserted && "arena view names must be unique");
    (void)inserted;
    names_.push_back(spec.name);
  }
}

Arena::~Arena() { release(); }

Arena::Arena(Arena&& other) noexcept { *this = std::move(other); }

Arena& Arena::operator=(Arena&& other) noexcept {
  if (this != &other) {
    release();
    backend_ = std::exchange(other.backend_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    views_ = std::move(other.views_);
    names_ = std::move(other.names_);
  }
  return *this;
}

const Tensor& Arena::view(const std::string& name) const {
  auto it = views_.find(name);
  if (it == views_.end()) throw std::out_of_range("arena has no view named " + name);
  return it->second;
}

void Arena::zero() {
  if (backend_) backend_->fill_zero(data_, bytes_);
}

void Arena::release() {
  if (backend_ && data_) backend_->deallocate(data_);
  data_ = nullptr;
}

}  // namespace scion::runtime
