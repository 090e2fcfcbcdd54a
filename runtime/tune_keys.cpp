// Tuning keys: TuneArgs (the launch arguments as key, prune, heuristic and grid functions see them) and
// the key of a launch (Autotuner::key, key_text): the user's key function, or the default key of element
// types, sizes rounded up to powers of two and the scalars marked as part of the key.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <bit>
#include <string>
#include <vector>

#include "tilejit/error.h"
#include "tilejit/runtime/autotune.h"

namespace tilejit {

namespace {

const char* kind_name(const KernelArg& a) {
  switch (a.kind) {
    case KernelArg::Tensor:
      return "a tensor";
    case KernelArg::TensorArray:
      return "a tensor array";
    case KernelArg::Scalar:
      return "a scalar";
    case KernelArg::Config:
      return "a configuration value";
  }
  return "?";
}

}  // namespace

size_t TuneArgs::count() const {
  return static_cast<size_t>(std::count_if(bound_.begin(), bound_.end(),
                                           [](const KernelArg& a) { return a.kind != KernelArg::Config; }));
}

const KernelArg& TuneArgs::arg(size_t i, std::source_location loc) const {
  size_t host = 0;
  for (const KernelArg& a : bound_) {
    if (a.kind == KernelArg::Config) continue;
    if (host++ == i) return a;
  }
  throw UserError("autotune: there is no launch argument " + std::to_string(i), std::to_string(i),
                  std::to_string(count()) + " arguments, numbered from 0", loc);
}

const TensorArg& TuneArgs::tensor(size_t i, std::source_location loc) const {
  const KernelArg& a = arg(i, loc);
  if (a.kind != KernelArg::Tensor)
    throw UserError("autotune: launch argument " + std::to_string(i) + " is not a tensor", kind_name(a),
                    "a TensorView argument", loc);
  return a.tensor;
}

int64_t TuneArgs::size(size_t i, int dim, std::source_location loc) const {
  const TensorArg& t = tensor(i, loc);
  if (dim < 0 || dim >= t.rank)
    throw UserError(
        "autotune: tensor argument " + std::to_string(i) + " has no dimension " + std::to_string(dim),
        std::to_string(dim), "0.." + std::to_string(t.rank - 1), loc);
  return t.sizes[static_cast<size_t>(dim)];
}

double TuneArgs::scalar(size_t i, std::source_location loc) const {
  const KernelArg& a = arg(i, loc);
  if (a.kind != KernelArg::Scalar)
    throw UserError("autotune: launch argument " + std::to_string(i) + " is not a scalar", kind_name(a),
                    "a number", loc);
  return ir::is_float(a.dtype) ? a.f : static_cast<double>(a.i);
}

namespace runtime {

namespace {

int64_t round_up_pow2(int64_t v) {
  return v <= 1 ? v : static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(v)));
}

// The default tuning key: per tensor its element type and sizes rounded up to powers of two, per
// tensor array its element type and length (rounded likewise), and the value of each scalar
// marked as part of the key. Fills `values`, `text` or both.
void default_key(std::span<const KernelArg> args, const std::vector<size_t>& key_scalars,
                 std::vector<int64_t>* values, std::string* text) {
  size_t host = 0;
  for (const KernelArg& a : args) {
    if (a.kind == KernelArg::Config) continue;
    const size_t index = host++;
    std::string part;
    switch (a.kind) {
      case KernelArg::Tensor:
        if (values) values->push_back(static_cast<int64_t>(a.tensor.dtype));
        if (text) part = std::string(ir::name_of(a.tensor.dtype)) + "[";
        for (int d = 0; d < a.tensor.rank; ++d) {
          const int64_t s = round_up_pow2(a.tensor.sizes[static_cast<size_t>(d)]);
          if (values) values->push_back(s);
          if (text) part += (d ? ", " : "") + std::to_string(s);
        }
        if (text) part += "]";
        break;
      case KernelArg::TensorArray: {
        const ir::DType dtype = a.array.empty() ? ir::DType::i1 : a.array.front().dtype;
        const int64_t n = round_up_pow2(static_cast<int64_t>(a.array.size()));
        if (values) values->insert(values->end(), {static_cast<int64_t>(dtype), n});
        if (text) part = std::to_string(n) + " x " + std::string(ir::name_of(dtype)) + " tensors";
        break;
      }
      case KernelArg::Scalar: {
        if (std::find(key_scalars.begin(), key_scalars.end(), index) == key_scalars.end()) break;
        const bool is_float = ir::is_float(a.dtype);
        if (values) values->push_back(is_float ? std::bit_cast<int64_t>(a.f) : a.i);
        if (text)
          part =
              "arg" + std::to_string(index) + "=" + (is_float ? fmt::format("{}", a.f) : std::to_string(a.i));
        break;
      }
      case KernelArg::Config:
        break;
    }
    if (text && !part.empty()) *text += (text->empty() ? "" : ", ") + part;
  }
}

std::string join(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

}  // namespace

void Autotuner::key(std::span<const KernelArg> args, std::vector<int64_t>& out) const {
  out.clear();
  if (key_fn_)
    out = key_fn_(TuneArgs(args));
  else
    default_key(args, key_scalars_, &out, nullptr);
}

std::string Autotuner::key_text(std::span<const KernelArg> args) const {
  if (key_fn_) return join(key_fn_(TuneArgs(args)));
  std::string text;
  default_key(args, key_scalars_, nullptr, &text);
  return text.empty() ? "()" : text;
}

}  // namespace runtime
}  // namespace tilejit
