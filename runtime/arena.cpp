#include "runtime/arena.h"

#include <cassert>
#include <stdexcept>
#include <utility>

#include "runtime/backend.h"
#include "runtime/memory_info.h"

namespace scion::runtime {
namespace {
constexpr std::size_t kAlignment = 64;
std::size_t round_up(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
}  // namespace

Result<Arena> Arena::create(const std::vector<ViewSpec>& table, Backend& backend,
                            const std::string& purpose) {
  Arena arena;
  std::vector<std::size_t> offsets;
  offsets.reserve(table.size());
  for (const ViewSpec& spec : table) {
    offsets.push_back(arena.bytes_);
    Tensor probe{nullptr, spec.shape, spec.dtype, backend.device()};
    arena.bytes_ += round_up(probe.bytes());
  }
  arena.data_ = backend.allocate_zeroed(arena.bytes_ == 0 ? kAlignment : arena.bytes_);
  if (arena.data_ == nullptr) {
    const std::optional<std::int64_t> available =
        backend.device() == Device::kCpu ? available_memory_bytes() : std::nullopt;
    return Status(StatusCode::kOutOfMemory,
                  "out of memory: needs " + memory_size(static_cast<std::int64_t>(arena.bytes_)) +
                      " for " + purpose +
                      (available ? ", " + memory_size(*available) + " available" : std::string()) +
                      "; lower width, layers, batch_size or max_length, or free memory");
  }
  arena.backend_ = &backend;
  arena.lay_out(table, offsets);
  return arena;
}

void Arena::lay_out(const std::vector<ViewSpec>& table, const std::vector<std::size_t>& offsets) {
  for (std::size_t i = 0; i < table.size(); ++i) {
    const ViewSpec& spec = table[i];
    Tensor view{static_cast<char*>(data_) + offsets[i], spec.shape, spec.dtype, backend_->device()};
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

Tensor Arena::flat_f32() const {
  return Tensor{data_, {static_cast<std::int64_t>(bytes_ / sizeof(float))}, DType::kF32,
                backend_ ? backend_->device() : Device::kCpu};
}

void Arena::zero() {
  if (backend_) backend_->fill_zero(data_, bytes_);
}

void Arena::release() {
  if (backend_ && data_) backend_->deallocate(data_);
  data_ = nullptr;
}

}  // namespace scion::runtime
