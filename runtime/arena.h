// Arena: one allocation carved into named tensor views from a table of (name, shape,
// dtype), one per role: parameters, gradients, optimizer state, activations.
//
// The arena owns its bytes (zero-filled at creation) for its whole life; views are
// valid until it is destroyed. Creation fails with kOutOfMemory, saying how much it
// needed and for what, when the backend cannot supply the bytes. Each view starts on a 64-byte boundary so SIMD loads and
// BLAS see aligned rows. Memory comes from a Backend, so a CUDA backend gets device
// arenas through the same type. Not thread-safe to construct; views may be used freely.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/tensor.h"
#include "base/status.h"

namespace scion::runtime {

class Backend;

struct ViewSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::kF32;
};

class Arena {
 public:
  Arena() = default;
  // `purpose` names what the bytes are for in the error ("the parameters of 'base'").
  // Errors: kOutOfMemory ("out of memory: needs 192.0 GiB for <purpose>, 17.9 GiB
  // available").
  static Result<Arena> create(const std::vector<ViewSpec>& table, Backend& backend,
                              const std::string& purpose);
  ~Arena();
  Arena(Arena&& other) noexcept;
  Arena& operator=(Arena&& other) noexcept;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  bool contains(const std::string& name) const { return views_.count(name) > 0; }
  // REQUIRES: contains(name).
  const Tensor& view(const std::string& name) const;
  // Views in table order.
  const std::vector<std::string>& names() const { return names_; }
  std::size_t bytes() const { return bytes_; }
  void* data() const { return data_; }
  // The whole allocation (views and the padding between them) as one flat fp32 tensor.
  Tensor flat_f32() const;
  void zero();

 private:
  void release();
  void lay_out(const std::vector<ViewSpec>& table, const std::vector<std::size_t>& offsets);

  Backend* backend_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::map<std::string, Tensor> views_;
  std::vector<std::string> names_;
};

}  // namespace scion::runtime
