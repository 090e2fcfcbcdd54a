// Kernel objects: tilejit::kernel(name, lambda), configuration parameters, host tensor views, interpret(), autotune().
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tilejit/arg_rules.h"
#include "tilejit/checked.h"
#include "tilejit/config.h"
#include "tilejit/dsl/control.h"
#include "tilejit/dsl/tma.h"
#include "tilejit/interp/interp.h"
#include "tilejit/kernel_base.h"
#include "tilejit/launch_args.h"
#include "tilejit/runtime/autotune.h"
#include "tilejit/runtime/launch.h"

namespace tilejit {

namespace detail {
/// A string usable as a template argument: Meta<"BM">.
template <size_t N>
struct FixedString {
  char chars[N]{};
  constexpr FixedString(const char (&s)[N]) { std::copy_n(s, N, chars); }  // NOLINT
  constexpr std::string_view view() const { return {chars, N - 1}; }
};
}  // namespace detail

namespace dsl {
/// A named configuration integer: a kernel parameter whose value is chosen per
/// configuration at run time and is a compile-time constant of the generated code.
/// Triton's meta-parameters (`BLOCK_M: tl.constexpr`): `Meta<"BM"> BM`.
template <::tilejit::detail::FixedString Name>
struct Meta {
  int64_t value = 0;
  static constexpr std::string_view name() { return Name.view(); }
  constexpr operator int64_t() const { return value; }  // NOLINT
};
/// The former name of Meta ("block" is a value of the kernel: a tile of elements).
template <::tilejit::detail::FixedString Name>
using Block [[deprecated("Block<\"BM\"> is now Meta<\"BM\">")]] = Meta<Name>;
namespace detail {
template <::tilejit::detail::FixedString N> struct is_config_int<Meta<N>> : std::true_type {};
}  // namespace detail
}  // namespace dsl

/// A tensor on the host or the device given to a kernel: base address, sizes and
/// strides in elements (outermost first). Row-major strides are the default.
/// A view made from a `const` pointer is read-only: launching or interpreting a kernel that
/// writes it is a UserError before anything runs (a kernel store would otherwise overwrite a
/// `const` object, or fault on read-only pages).
template <class T, int R>
class TensorView {
  static_assert(dsl::is_dtype_v<T>, "tilejit: TensorView<T, R>: T must be an element type");
  static_assert(R >= 1 && R <= kMaxTensorRank, "tilejit: TensorView<T, R>: rank must be between 1 and 8");

 public:
  using dtype = dsl::tag_t<T>;
  static constexpr int rank = R;

  TensorView(void* data, const std::array<int64_t, R>& sizes) : data_(data), sizes_(sizes) { set_row_major(); }
  TensorView(void* data, const std::array<int64_t, R>& sizes, const std::array<int64_t, R>& strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  /// Read-only views.
  TensorView(const void* data, const std::array<int64_t, R>& sizes)
      : data_(const_cast<void*>(data)), sizes_(sizes), read_only_(true) {
    set_row_major();
  }
  TensorView(const void* data, const std::array<int64_t, R>& sizes, const std::array<int64_t, R>& strides)
      : data_(const_cast<void*>(data)), sizes_(sizes), strides_(strides), read_only_(true) {}
  /// A null base (refused when the kernel runs, unless the tensor is empty in the interpreter).
  TensorView(std::nullptr_t, const std::array<int64_t, R>& sizes) : TensorView(static_cast<void*>(nullptr), sizes) {}
  TensorView(std::nullptr_t, const std::array<int64_t, R>& sizes, const std::array<int64_t, R>& strides)
      : TensorView(static_cast<void*>(nullptr), sizes, strides) {}

  void* data() const { return data_; }
  const std::array<int64_t, R>& sizes() const { return sizes_; }
  const std::array<int64_t, R>& strides() const { return strides_; }
  /// True for a view made from a const pointer or a read-only DLPack tensor.
  bool read_only() const { return read_only_; }
  /// The element count; UserError when it does not fit in 64 bits.
  int64_t numel(std::source_location loc = std::source_location::current()) const {
    int64_t n = 1;
    for (int64_t s : sizes_) {
      const std::optional<int64_t> m = checked::mul(n, s);
      if (!m) throw UserError("TensorView::numel: the element count overflows 64 bits", "a size of " + std::to_string(s), "a product within 2^63", loc);
      n = *m;
    }
    return n;
  }

  TensorArg arg() const {
    TensorArg a;
    a.data = data_;
    a.dtype = dsl::dtype_v<T>;
    a.rank = R;
    std::copy(sizes_.begin(), sizes_.end(), a.sizes.begin());
    std::copy(strides_.begin(), strides_.end(), a.strides.begin());
    a.read_only = read_only_;
    return a;
  }

 private:
  // Row-major strides; a product that overflows is left to the argument checks, which refuse the
  // tensor by its sizes (the strides wrap only when the element count does not fit in 64 bits).
  void set_row_major() {
    int64_t s = 1;
    for (int d = R - 1; d >= 0; --d) {
      strides_[static_cast<size_t>(d)] = s;
      s = checked::mul(s, sizes_[static_cast<size_t>(d)]).value_or(INT64_MAX);
    }
  }

  void* data_;
  std::array<int64_t, R> sizes_{};
  std::array<int64_t, R> strides_{};
  bool read_only_ = false;
};

/// From a typed pointer the element type and the rank are deduced: TensorView(x.data(), {M, N}) of a
/// std::vector<tilejit::bfloat16> is a TensorView<bfloat16, 2> (bf16), read-only for a `const` pointer. A `void*`
/// (device memory) says nothing of its type: spell it, TensorView<bf16, 2>(ptr, {M, N}).
template <class H, size_t R>
TensorView(H*, const int64_t (&)[R]) -> TensorView<H, static_cast<int>(R)>;
template <class H, size_t R>
TensorView(const H*, const int64_t (&)[R]) -> TensorView<H, static_cast<int>(R)>;
template <class H, size_t R>
TensorView(H*, const int64_t (&)[R], const int64_t (&)[R]) -> TensorView<H, static_cast<int>(R)>;
template <class H, size_t R>
TensorView(const H*, const int64_t (&)[R], const int64_t (&)[R]) -> TensorView<H, static_cast<int>(R)>;

/// Several tensors of one type and rank, for a TensorArray<T, R> parameter.
template <class T, int R>
struct TensorArrayView {
  std::vector<TensorView<T, R>> tensors;
};

namespace detail {

template <class F> struct lambda_traits : lambda_traits<decltype(&F::operator())> {};
template <class C, class Ret, class... A> struct lambda_traits<Ret (C::*)(A...) const> {
  using args = std::tuple<std::remove_cvref_t<A>...>;
};
template <class C, class Ret, class... A> struct lambda_traits<Ret (C::*)(A...)> {
  using args = std::tuple<std::remove_cvref_t<A>...>;
};

template <class P>
P make_param(ir::Graph& g, int index, const Config& cfg) {
  ir::Param p;
  p.name = "arg" + std::to_string(index);
  if constexpr (requires { P::name(); }) {
    p.kind = ir::Param::Config;
    p.dtype = ir::DType::i64;
    p.rank = 0;
    p.name = std::string(P::name());
    // A missing value is reported at the kernel's definition, where the Meta<> parameter is declared.
    if (!cfg.has(P::name())) {
      try {
        (void)cfg.get(P::name());
      } catch (const UserError& e) {
        throw UserError(e.rule(), e.value(), e.limit(), g.kernel_location.file, g.kernel_location.line);
      }
    }
    const int64_t v = cfg.get(P::name());
    g.params.push_back(p);
    return P{v};
  } else if constexpr (dsl::detail::is_tensor_v<P>) {
    p.kind = ir::Param::Tensor;
    p.dtype = dsl::dtype_v<typename P::dtype>;
    p.rank = P::rank;
    p.node = g.add(ir::Op::ParamTensor, p.dtype, ir::Shape{}, {}, ir::ParamAttrs{index, P::rank});
    g.params.push_back(p);
    return P(p.node);
  } else if constexpr (dsl::detail::is_tensor_array_v<P>) {
    p.kind = ir::Param::TensorArray;
    p.dtype = dsl::dtype_v<typename P::dtype>;
    p.rank = P::rank;
    p.node = g.add(ir::Op::ParamTensorArray, p.dtype, ir::Shape{}, {}, ir::ParamAttrs{index, P::rank});
    g.params.push_back(p);
    return P(p.node);
  } else {
    p.kind = ir::Param::Scalar;
    p.dtype = dsl::dtype_v<typename P::dtype>;
    p.rank = 0;
    p.node = g.add(ir::Op::ParamScalar, p.dtype, ir::Shape{}, {}, ir::ParamAttrs{index});
    g.params.push_back(p);
    return P(dsl::detail::node, p.node);
  }
}

template <class Args, size_t... I>
Args make_params(ir::Graph& g, const Config& cfg, std::index_sequence<I...>) {
  // Braced initialisation evaluates left to right, so parameters are numbered in order.
  return Args{make_param<std::tuple_element_t<I, Args>>(g, static_cast<int>(I), cfg)...};
}

template <class P>
inline constexpr bool is_config_param_v = requires { P::name(); };

/// Number of host arguments a kernel takes: its parameters minus configuration ones.
template <class Args, size_t... I>
constexpr size_t host_arity(std::index_sequence<I...>) {
  return ((is_config_param_v<std::tuple_element_t<I, Args>> ? 0 : 1) + ... + 0);
}

/// "5000000000", "1e+300": a number as the user wrote it, for messages.
inline std::string number_str(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

/// Throws UserError when host argument `pos` (for Scalar<T> parameter `param`) is outside the
/// range of T: an integer beyond its bounds, or a finite number that would round to infinity.
template <class T, class A>
void check_scalar_range(const A& a, size_t pos, size_t param, const std::string& kernel, const std::source_location& loc) {
  constexpr ir::DType d = dsl::dtype_v<T>;
  const std::string rule = "kernel '" + kernel + "': scalar argument " + std::to_string(pos) + " (parameter arg" +
                           std::to_string(param) + ", Scalar<" + std::string(ir::name_of(d)) + ">) is out of its type's range";
  if constexpr (d == ir::DType::i1) {
    return;  // any value converts to a bool
  } else if constexpr (dsl::is_float_v<T>) {
    const auto x = static_cast<double>(a);
    if (std::isfinite(x) && !std::isfinite(ir::round_to(d, x)))
      throw UserError(rule, number_str(x), "a number that rounds to a finite " + std::string(ir::name_of(d)), loc);
  } else {
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    switch (d) {
      case ir::DType::i8: lo = -128; hi = 127; break;
      case ir::DType::u8: lo = 0; hi = 255; break;
      case ir::DType::i32: lo = INT32_MIN; hi = INT32_MAX; break;
      default: break;
    }
    bool in;
    std::string value;
    if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
      in = static_cast<int64_t>(a) >= lo && static_cast<int64_t>(a) <= hi;
      value = std::to_string(static_cast<int64_t>(a));
    } else if constexpr (std::is_integral_v<A>) {
      in = static_cast<uint64_t>(a) <= static_cast<uint64_t>(hi);
      value = std::to_string(static_cast<uint64_t>(a));
    } else {
      // 2^63 is exactly representable; every double below it and at or above -2^63 fits int64.
      const auto x = static_cast<double>(a);
      in = x >= static_cast<double>(lo) && (d == ir::DType::i64 ? x < 9223372036854775808.0 : x <= static_cast<double>(hi));
      value = number_str(x);
    }
    if (!in) throw UserError(rule, value, std::to_string(lo) + ".." + std::to_string(hi), loc);
  }
}

/// Converts one host argument for parameter type P (host argument `pos`, parameter `param`).
template <class P, class A>
KernelArg to_kernel_arg(const A& a, size_t pos, size_t param, const std::string& kernel, const std::source_location& loc) {
  KernelArg k;
  if constexpr (dsl::detail::is_tensor_v<P>) {
    static_assert(requires { typename A::dtype; a.arg(); },
                  "tilejit: a Tensor<T, R> parameter takes a tilejit::TensorView<T, R> argument");
    if constexpr (requires { a.arg(); }) {
      static_assert(std::is_same_v<typename A::dtype, typename P::dtype>,
                    "tilejit: tensor argument's element type differs from the kernel parameter's");
      static_assert(A::rank == P::rank, "tilejit: tensor argument's rank differs from the kernel parameter's");
      k.kind = KernelArg::Tensor;
      k.tensor = a.arg();
    }
  } else if constexpr (dsl::detail::is_tensor_array_v<P>) {
    static_assert(requires { a.tensors; }, "tilejit: a TensorArray<T, R> parameter takes a tilejit::TensorArrayView<T, R> argument");
    if constexpr (requires { a.tensors; }) {
      static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(a.tensors[0])>::dtype, typename P::dtype>,
                    "tilejit: tensor array argument's element type differs from the kernel parameter's");
      k.kind = KernelArg::TensorArray;
      for (const auto& t : a.tensors) k.array.push_back(t.arg());
    }
  } else {
    using T = typename P::dtype;
    static_assert(std::is_arithmetic_v<A> || dsl::is_dtype_v<A>, "tilejit: a Scalar<T> parameter takes a number");
    check_scalar_range<T>(a, pos, param, kernel, loc);
    k.kind = KernelArg::Scalar;
    k.dtype = dsl::dtype_v<T>;
    if constexpr (dsl::is_float_v<T>) {
      k.f = ir::round_to(k.dtype, static_cast<double>(a));
    } else {
      k.i = static_cast<int64_t>(a);
    }
  }
  return k;
}

}  // namespace detail

template <class F>
class Autotuned;

/// A kernel: a C++ lambda traced once per configuration, run in the interpreter
/// or compiled for the GPU.
template <class F>
class Kernel {
  using Args = typename detail::lambda_traits<F>::args;
  static constexpr size_t kParams = std::tuple_size_v<Args>;

 public:
  Kernel(std::string name, F fn, std::source_location where)
      : base_(std::make_shared<KernelBase>(std::move(name), where, [fn](ir::Graph& g, const Config& cfg) {
          dsl::detail::TraceScope scope(g);
          g.set_location(g.kernel_location.file.c_str(), g.kernel_location.line);
          Args params = detail::make_params<Args>(g, cfg, std::make_index_sequence<kParams>{});
          std::apply(fn, params);
        })) {}

  const std::string& name() const { return base_->name(); }
  KernelBase& base() const { return *base_; }

  /// The IR of this kernel for `config`.
  std::shared_ptr<const ir::Graph> trace(const Config& config) const { return base_->graph(config); }

  /// Converts host arguments (one per non-configuration parameter) to KernelArgs; a scalar out of
  /// its type's range is a UserError located at `loc`.
  template <class... A>
  std::array<KernelArg, kParams> bind_at(const std::source_location& loc, const A&... args) const {
    static_assert(sizeof...(A) == detail::host_arity<Args>(std::make_index_sequence<kParams>{}),
                  "tilejit: wrong number of kernel arguments (configuration parameters such as Meta<\"BM\"> "
                  "are not passed; their values come from the Config)");
    std::array<KernelArg, kParams> out;  // on the stack: the launch path allocates nothing
    bind_from<0, 0>(out, loc, args...);
    return out;
  }
  template <class... A>
  std::array<KernelArg, kParams> bind(const A&... args) const {
    return bind_at(std::source_location::current(), args...);
  }

  /// Launches the kernel on the GPU (device pointers in the TensorViews) on `stream`.
  /// Compiles on first use per configuration and device. See runtime::launch.
  /// UserErrors about the call (grid, arguments) name the caller's line.
  template <class... A>
  void launch(Located<Stream> stream, dim3 grid, const Config& config, const A&... args) const {
    const auto bound = bind_at(stream.where, args...);
    runtime::launch(*base_, stream.value, grid, config, bound, {}, stream.where);
  }

  /// Like launch(), with a caller-owned workspace for device-built descriptors.
  template <class... A>
  void launch_with(const LaunchOptions& options, Located<Stream> stream, dim3 grid, const Config& config, const A&... args) const {
    const auto bound = bind_at(stream.where, args...);
    runtime::launch(*base_, stream.value, grid, config, bound, options, stream.where);
  }

  /// Compiles and loads the kernel for each configuration without launching it (see runtime::warmup).
  void warmup(std::initializer_list<Config> configs) const {
    for (const Config& c : configs) runtime::warmup(*base_, c);
  }

  /// Bytes of workspace a launch over `grid` needs (for launch_with).
  size_t workspace_bytes(dim3 grid, const Config& config) const { return runtime::workspace_bytes(*base_, grid, config); }

  /// The generated CUDA C++ for `config` (no GPU needed).
  std::string cuda_source(const Config& config) const { return runtime::generate(*base_, config).source; }

  /// A tuner over `space` that chooses the configuration of each launch (see Autotuned). Build it
  /// once and keep it: its decisions live in it, in the process and in the cache folder.
  Autotuned<F> autotune(TuneSpace space) const {
    return Autotuned<F>(*this, std::make_shared<runtime::Autotuner>(base_, std::move(space)));
  }
  /// A tuner over TuneSpace::matmul(), the default space of a matrix-product kernel: for kernels whose Meta
  /// parameters are BM, BN and BK (in any order); UserError at the caller's line for any other kernel.
  Autotuned<F> autotune(std::source_location loc = std::source_location::current()) const {
    std::vector<std::string> names;
    block_names<0>(names);
    std::vector<std::string> sorted = names;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::vector<std::string>{"BK", "BM", "BN"}) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      throw UserError("autotune() without a space searches the matrix-product space, for kernels whose Meta parameters are "
                      "BM, BN and BK; kernel '" + base_->name() + "' needs a space of its own",
                      list.empty() ? std::string("no Meta parameters") : "Meta parameters " + list,
                      "BM, BN, BK (or kernel.autotune(space))", loc);
    }
    return autotune(TuneSpace::matmul());
  }

  /// Runs the kernel in the CPU interpreter on host buffers.
  /// UserErrors about the call (grid, arguments) name the caller's line; a program that fails
  /// leaves the tensors the kernel writes as they were.
  template <class... A>
  void interpret(Located<dim3> grid, const Config& config, const A&... args) const {
    const auto g = trace(config);
    const auto bound = bind_at(grid.where, args...);
    const args::CallSite at = args::CallSite::of(grid.where);
    runtime::check_resources(*base_, config, grid.where);
    interp::run(*g, grid.value, bound, &at);
  }

 private:
  template <size_t I, size_t Pos>
  void bind_from(std::array<KernelArg, kParams>& out, const std::source_location& loc) const {
    if constexpr (I < kParams) {
      using P = std::tuple_element_t<I, Args>;
      static_assert(detail::is_config_param_v<P>, "internal: argument count mismatch");
      KernelArg k;
      k.kind = KernelArg::Config;
      out[I] = k;
      bind_from<I + 1, Pos>(out, loc);
    }
  }
  template <size_t I, size_t Pos, class A0, class... A>
  void bind_from(std::array<KernelArg, kParams>& out, const std::source_location& loc, const A0& a0, const A&... rest) const {
    using P = std::tuple_element_t<I, Args>;
    if constexpr (detail::is_config_param_v<P>) {
      KernelArg k;
      k.kind = KernelArg::Config;
      out[I] = k;
      bind_from<I + 1, Pos>(out, loc, a0, rest...);
    } else {
      out[I] = detail::to_kernel_arg<P>(a0, Pos, I, base_->name(), loc);
      bind_from<I + 1, Pos + 1>(out, loc, rest...);
    }
  }

  /// The names of the kernel's Meta parameters, in order.
  template <size_t I>
  static void block_names(std::vector<std::string>& out) {
    if constexpr (I < kParams) {
      using P = std::tuple_element_t<I, Args>;
      if constexpr (detail::is_config_param_v<P>) out.emplace_back(P::name());
      block_names<I + 1>(out);
    }
  }

  std::shared_ptr<KernelBase> base_;
};

/// A kernel with a tuner (from Kernel::autotune): launch(stream, args...) launches the
/// configuration chosen for the arguments' tuning key, tuning on the first launch of each key.
/// Options are set before the first launch; copies share the tuner and its decisions.
///
///   auto scale_tuned = scale.autotune({{"BM", {64, 128}}, {"BN", {64, 128, 256}}, {"num_warps", {4, 8}}})
///       .grid([](const tilejit::Config& c, const tilejit::TuneArgs& a) {
///         return tilejit::dim3(tilejit::cdiv(a.size(0, 0), c["BM"]), tilejit::cdiv(a.size(0, 1), c["BN"]));
///       });
///   scale_tuned.launch(stream, X, Y, 2.0f);
template <class F>
class Autotuned {
 public:
  using KeyFn = runtime::Autotuner::KeyFn;
  using PruneFn = runtime::Autotuner::PruneFn;
  using HeuristicFn = runtime::Autotuner::HeuristicFn;

  Autotuned(Kernel<F> kernel, std::shared_ptr<runtime::Autotuner> tuner) : kernel_(std::move(kernel)), tuner_(std::move(tuner)) {}

  /// The grid of a configuration (required): `dim3(const Config&)`, or
  /// `dim3(const Config&, const TuneArgs&)` to read the arguments' sizes.
  template <class G>
  Autotuned& grid(G g, std::source_location loc = std::source_location::current()) {
    if constexpr (std::is_invocable_r_v<dim3, const G&, const Config&, const TuneArgs&>) {
      tuner_->set_grid(std::move(g), loc);
    } else {
      static_assert(std::is_invocable_r_v<dim3, const G&, const Config&>,
                    "tilejit: the grid function takes (const tilejit::Config&) or (const tilejit::Config&, const "
                    "tilejit::TuneArgs&) and returns a tilejit::dim3");
      tuner_->set_grid([g = std::move(g)](const Config& c, const TuneArgs&) { return g(c); }, loc);
    }
    return *this;
  }
  /// Replaces the default tuning key (each tensor's element type and sizes rounded up to powers
  /// of two, plus the key scalars): launches whose keys are equal share a decision.
  Autotuned& key(KeyFn fn, std::source_location loc = std::source_location::current()) {
    tuner_->set_key(std::move(fn), loc);
    return *this;
  }
  /// Makes the values of these scalar arguments (positions among launch's arguments) part of the
  /// default key.
  Autotuned& key_scalars(std::initializer_list<size_t> args, std::source_location loc = std::source_location::current()) {
    for (size_t a : args) tuner_->add_key_scalar(a, loc);
    return *this;
  }
  /// Drops the configurations for which `fn` returns true, before anything is compiled.
  Autotuned& prune(PruneFn fn, std::source_location loc = std::source_location::current()) {
    tuner_->set_prune(std::move(fn), loc);
    return *this;
  }
  /// Sets the value `name` (a Meta name, or a Config field: num_warps, num_stages, programs_per_sm, warp_specialize,
  /// overlap_products, pingpong, cluster_x, cluster_y, fp_contract, producer_registers) of every
  /// candidate to `fn(candidate, args)`, in the order the heuristics are added, before pruning.
  /// A name the kernel lacks is a UserError at the first tuning, naming this line.
  Autotuned& heuristic(std::string name, HeuristicFn fn, std::source_location loc = std::source_location::current()) {
    tuner_->add_heuristic(std::move(name), std::move(fn), loc);
    return *this;
  }
  /// How candidates are timed (budget, runs, L2 flush).
  Autotuned& options(const TuneOptions& o, std::source_location loc = std::source_location::current()) {
    tuner_->set_options(o, loc);
    return *this;
  }
  /// Measures candidates with `t` instead of CUDA events (tests; see TuneTimer).
  Autotuned& timer(std::shared_ptr<TuneTimer> t, std::source_location loc = std::source_location::current()) {
    tuner_->set_timer(std::move(t), loc);
    return *this;
  }

  /// Launches the configuration chosen for these arguments, tuning first when their key is new.
  /// After a tuning the arguments' data is as after one plain launch of the chosen configuration.
  template <class... A>
  void launch(Located<Stream> stream, const A&... args) const {
    const auto bound = kernel_.bind_at(stream.where, args...);
    tuner_->launch(stream.value, bound, {}, stream.where);
  }
  /// Like launch(), with a caller-owned workspace for device-built descriptors.
  template <class... A>
  void launch_with(const LaunchOptions& options, Located<Stream> stream, const A&... args) const {
    const auto bound = kernel_.bind_at(stream.where, args...);
    tuner_->launch(stream.value, bound, options, stream.where);
  }
  /// Chooses (tuning when needed) and compiles the configuration for these arguments' key without
  /// launching; their data is left as it was. Call it before capturing launches in a CUDA graph.
  template <class... A>
  Config tune(Located<Stream> stream, const A&... args) const {
    const auto bound = kernel_.bind_at(stream.where, args...);
    return tuner_->tune(stream.value, bound, {}, stream.where);
  }
  /// The candidates a tuning for these arguments considers (heuristics applied, pruned). It takes
  /// launch()'s arguments; nothing runs on the stream, whose place records the caller's line for
  /// the UserErrors (a scalar out of range, pruning that leaves nothing), as launch()'s does.
  template <class... A>
  std::vector<Config> candidates(Located<Stream> stream, const A&... args) const {
    const auto bound = kernel_.bind_at(stream.where, args...);
    return tuner_->candidates(bound, stream.where);
  }

  const Kernel<F>& kernel() const { return kernel_; }
  runtime::Autotuner& tuner() const { return *tuner_; }

 private:
  Kernel<F> kernel_;
  std::shared_ptr<runtime::Autotuner> tuner_;
};

/// Makes a kernel from a lambda whose parameters are Tensor<T, R>, TensorArray<T, R>,
/// Scalar<T> and Meta<"NAME"> values.
template <class F>
Kernel<F> kernel(std::string name, F fn, std::source_location where = std::source_location::current()) {
  return Kernel<F>(std::move(name), std::move(fn), where);
}

}  // namespace tilejit
