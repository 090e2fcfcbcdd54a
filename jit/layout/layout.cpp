// Register layouts as lists of factors (see layout.h): construction, slicing, reshapes, broadcasts, permutes.
#include "tilejit/layout/layout.h"

#include <algorithm>
#include <map>
#include <set>

#include "tilejit/error.h"

namespace tilejit::layout {

namespace {

int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

const char* axis_name(Axis a) { return a == Axis::Reg ? "reg" : a == Axis::Lane ? "lane" : "warp"; }

}  // namespace

std::array<int64_t, ir::kMaxRank> row_major(const ir::Shape& s) {
  std::array<int64_t, ir::kMaxRank> st{};
  int64_t m = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    st[static_cast<size_t>(d)] = m;
    m *= s.dims[d];
  }
  return st;
}

namespace {

/// Size-1 factors dropped; a factor that continues the previous one of its axis (same dimension, stride
/// following on) merged into it. Two layouts with equal canonical factors map every register alike.
std::vector<Factor> canonical(const std::vector<Factor>& fs) {
  std::vector<Factor> sorted(fs);  // only the order within one axis matters
  std::stable_sort(sorted.begin(), sorted.end(), [](const Factor& a, const Factor& b) { return a.axis < b.axis; });
  std::vector<Factor> out;
  for (Factor g : sorted) {
    if (g.size == 1) continue;
    if (g.dim == kReplicated) g.stride = 0;
    if (!out.empty()) {
      Factor& prev = out.back();
      if (prev.axis == g.axis && prev.dim == g.dim && (g.dim == kReplicated || g.stride == prev.stride * prev.size)) {
        prev.size *= g.size;
        continue;
      }
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace

Layout::Layout(ir::Shape shape, int warps, std::vector<Factor> factors)
    : shape_(shape), warps_(warps), factors_(std::move(factors)) {
  check_internal(size_of(Axis::Lane) == kLanes, "layout: lane factors must multiply to 32");
  check_internal(size_of(Axis::Warp) == warps, "layout: warp factors must multiply to the warp count");
  for (const Factor& f : factors_) {
    check_internal(f.size >= 1, "layout: factor of size 0");
    check_internal(f.dim == kReplicated || (f.dim >= 0 && f.dim < shape.rank), "layout: factor dimension out of range");
    check_internal(f.dim != kReplicated || f.axis != Axis::Reg, "layout: replicated register factor");
  }
  // Each digit's divisor: the product of the earlier factors on its axis.
  divs_.resize(factors_.size());
  int64_t running[3] = {1, 1, 1};
  for (size_t k = 0; k < factors_.size(); ++k) {
    int64_t& r = running[static_cast<int>(factors_[k].axis)];
    divs_[k] = r;
    r *= factors_[k].size;
  }
}

int Layout::size_of(Axis a) const {
  int n = 1;
  for (const Factor& f : factors_)
    if (f.axis == a) n *= f.size;
  return n;
}

int64_t Layout::digit_div(size_t k) const { return divs_[k]; }

std::array<int64_t, ir::kMaxRank> Layout::coord(int reg, int lane, int warp) const {
  std::array<int64_t, ir::kMaxRank> c{};
  for (size_t k = 0; k < factors_.size(); ++k) {
    const Factor& f = factors_[k];
    const int64_t hw = f.axis == Axis::Reg ? reg : f.axis == Axis::Lane ? lane : warp;
    const int64_t digit = hw / divs_[k] % f.size;
    if (f.dim != kReplicated) c[static_cast<size_t>(f.dim)] += digit * f.stride;
  }
  return c;
}

bool Layout::inside(const std::array<int64_t, ir::kMaxRank>& c) const {
  for (int d = 0; d < shape_.rank; ++d)
    if (c[static_cast<size_t>(d)] >= shape_.dims[d]) return false;
  return true;
}

std::vector<int> Layout::padded_dims() const {
  std::vector<int> out;
  for (int d = 0; d < shape_.rank; ++d) {
    int64_t top = 0;
    for (const Factor& f : factors_)
      if (f.dim == d) top += (f.size - 1) * f.stride;
    if (top + 1 > shape_.dims[d]) out.push_back(d);
  }
  return out;
}

bool Layout::padded() const { return !padded_dims().empty(); }

bool Layout::replicated() const {
  for (const Factor& f : factors_)
    if (f.dim == kReplicated && f.size > 1) return true;
  return false;
}

std::vector<Term> Layout::coord_terms(int dim) const {
  std::vector<Term> out;
  for (size_t k = 0; k < factors_.size(); ++k) {
    const Factor& f = factors_[k];
    if (f.dim != dim || f.size == 1) continue;
    const int64_t div = digit_div(k);
    const bool top = div * f.size == size_of(f.axis);  // the most significant digit needs no modulo
    out.push_back(Term{f.axis, div, top ? 0 : f.size, f.stride});
  }
  return out;
}

std::vector<Term> Layout::linear_terms() const {
  const auto rs = row_major(shape_);
  std::vector<Term> out;
  for (int d = 0; d < shape_.rank; ++d)
    for (Term t : coord_terms(d)) {
      t.mul *= rs[static_cast<size_t>(d)];
      out.push_back(t);
    }
  return out;
}

std::vector<Term> Layout::replica_terms() const {
  std::vector<Term> out;
  for (size_t k = 0; k < factors_.size(); ++k) {
    const Factor& f = factors_[k];
    if (f.dim != kReplicated || f.size == 1) continue;
    const int64_t div = digit_div(k);
    out.push_back(Term{f.axis, div, div * f.size == size_of(f.axis) ? 0 : f.size, 1});
  }
  return out;
}

int Layout::vector_width() const {
  for (const Factor& f : factors_) {
    if (f.axis != Axis::Reg || f.size == 1) continue;
    return f.dim == shape_.rank - 1 && f.stride == 1 ? f.size : 1;
  }
  return 1;
}

std::string Layout::str() const {
  std::string s = shape_.str();
  bool first = true;
  for (const Factor& f : canonical(factors_)) {
    s += first ? " " : ", ";
    first = false;
    s += std::string(axis_name(f.axis)) + " ";
    s += f.dim == kReplicated ? "rep" : "d" + std::to_string(f.dim);
    s += "x" + std::to_string(f.size);
    if (f.dim != kReplicated && f.stride != 1) s += "(s" + std::to_string(f.stride) + ")";
  }
  if (first) s += " (one thread's worth in every thread)";
  return s;
}

bool Layout::operator==(const Layout& o) const {
  return shape_ == o.shape_ && warps_ == o.warps_ && canonical(factors_) == canonical(o.factors_);
}

int choose_vector(const ir::Shape& shape, int max_vec, int warps) {
  const int64_t inner = shape.rank ? shape.dims[shape.rank - 1] : 1;
  const int64_t threads = static_cast<int64_t>(warps) * kLanes;
  int vec = std::max(1, max_vec);
  while (vec > 1 && (inner % vec != 0 || shape.numel() / vec < threads)) vec /= 2;
  return vec;
}

Layout blocked(const ir::Shape& shape, int vec, int warps) {
  check_internal(shape.rank >= 1, "layout: blocked layout of a scalar");
  check_internal(shape.dims[shape.rank - 1] % vec == 0, "layout: vector width must divide the innermost extent");
  const int r = shape.rank;
  std::vector<Factor> fs;
  if (vec > 1) fs.push_back({Axis::Reg, vec, r - 1, 1});
  std::array<int64_t, ir::kMaxRank> rem{}, unit{};  // units still to cover, elements per unit
  for (int d = 0; d < r; ++d) {
    unit[static_cast<size_t>(d)] = d == r - 1 ? vec : 1;
    rem[static_cast<size_t>(d)] = shape.dims[d] / unit[static_cast<size_t>(d)];
  }
  auto spread = [&](Axis axis, int64_t count) {
    for (int d = r - 1; d >= 0 && count > 1; --d) {
      const auto k = static_cast<size_t>(d);
      const int64_t take = d == 0 ? count : std::min(count, pow2_ceil(rem[k]));
      if (take == 1) continue;
      fs.push_back({axis, static_cast<int>(take), d, unit[k]});
      unit[k] *= take;
      rem[k] = (rem[k] + take - 1) / take;
      count /= take;
    }
  };
  spread(Axis::Lane, kLanes);
  spread(Axis::Warp, warps);
  for (int d = r - 1; d >= 0; --d) {
    const auto k = static_cast<size_t>(d);
    if (rem[k] > 1) fs.push_back({Axis::Reg, static_cast<int>(rem[k]), d, unit[k]});
  }
  return Layout(shape, warps, std::move(fs));
}

Layout slice(const Layout& parent, int dim) {
  ir::Shape s;
  s.rank = static_cast<uint8_t>(parent.shape().rank - 1);
  for (int d = 0, k = 0; d < parent.shape().rank; ++d)
    if (d != dim) s.dims[k++] = parent.shape().dims[d];
  std::vector<Factor> fs;
  for (Factor f : parent.factors()) {
    if (f.dim == dim) {
      if (f.axis == Axis::Reg) continue;
      f.dim = kReplicated;
      f.stride = 0;
    } else if (f.dim > dim) {
      f.dim -= 1;
    }
    fs.push_back(f);
  }
  return Layout(s, parent.warps(), std::move(fs));
}

std::optional<std::array<int, ir::kMaxRank>> unit_reshape_dims(const ir::Shape& from, const ir::Shape& to) {
  std::array<int, ir::kMaxRank> where;
  where.fill(-1);
  int t = 0;
  for (int d = 0; d < from.rank; ++d) {
    if (from.dims[d] == 1) continue;
    while (t < to.rank && to.dims[t] == 1) ++t;
    if (t == to.rank || to.dims[t] != from.dims[d]) return std::nullopt;
    where[static_cast<size_t>(d)] = t++;
  }
  while (t < to.rank && to.dims[t] == 1) ++t;
  if (t != to.rank) return std::nullopt;
  return where;
}

std::optional<Layout> reshape_units(const Layout& from, const ir::Shape& to) {
  const auto where = unit_reshape_dims(from.shape(), to);
  if (!where) return std::nullopt;
  // The registers and threads that pad a removed unit dimension (every digit but 0 lands past its
  // extent) pad a kept one instead: their digit moves the innermost non-unit dimension of `to` by its
  // extent, so they hold nothing there either (replicating them would make them hold element 0).
  int pad_dim = to.rank - 1;
  while (pad_dim > 0 && to.dims[pad_dim] == 1) --pad_dim;
  std::vector<Factor> fs;
  for (Factor f : from.factors()) {
    if (f.dim != kReplicated) {
      const int t = (*where)[static_cast<size_t>(f.dim)];
      if (t >= 0) {
        f.dim = t;
      } else if (f.size == 1) {
        continue;
      } else {
        if (pad_dim < 0) return std::nullopt;
        f.dim = pad_dim;
        f.stride = to.dims[pad_dim];
      }
    }
    fs.push_back(f);
  }
  return Layout(to, from.warps(), std::move(fs));
}

namespace {
/// Which dimensions of `to` a broadcast from `from` (numpy rules) expands, and the source dimension of the others.
std::vector<int> source_dims(const ir::Shape& to, const ir::Shape& from) {
  const int lead = to.rank - from.rank;
  std::vector<int> src(static_cast<size_t>(to.rank), kReplicated);
  for (int d = 0; d < to.rank; ++d) {
    const int dx = d - lead;
    if (dx >= 0 && (from.dims[dx] == to.dims[d])) src[static_cast<size_t>(d)] = dx;
  }
  return src;
}
}  // namespace

Layout unbroadcast(const Layout& to, const ir::Shape& from_shape) {
  const auto src = source_dims(to.shape(), from_shape);
  std::vector<Factor> fs;
  for (Factor f : to.factors()) {
    if (f.dim != kReplicated) {
      const int s = src[static_cast<size_t>(f.dim)];
      if (s == kReplicated) {
        if (f.axis == Axis::Reg) continue;
        f.stride = 0;
      }
      f.dim = s;
    }
    fs.push_back(f);
  }
  return Layout(from_shape, to.warps(), std::move(fs));
}

int64_t evaluate(const std::vector<Term>& terms, int64_t reg, int64_t lane, int64_t warp) {
  int64_t v = 0;
  for (const Term& t : terms) {
    const int64_t hw = t.axis == Axis::Reg ? reg : t.axis == Axis::Lane ? lane : warp;
    const int64_t digit = t.mod ? hw / t.div % t.mod : hw / t.div;
    v += digit * t.mul;
  }
  return v;
}

std::vector<Term> unbroadcast_register_terms(const Layout& to, const ir::Shape& from_shape) {
  const auto src = source_dims(to.shape(), from_shape);
  std::vector<Term> out;
  int64_t scale = 1;
  for (size_t k = 0; k < to.factors().size(); ++k) {
    const Factor& f = to.factors()[k];
    if (f.axis != Axis::Reg || f.size == 1) continue;
    if (f.dim != kReplicated && src[static_cast<size_t>(f.dim)] == kReplicated) continue;  // selects nothing in the source
    const int64_t div = to.digit_div(k);
    out.push_back({Axis::Reg, div, div * f.size == to.regs() ? 0 : f.size, scale});
    scale *= f.size;
  }
  return out;
}

std::vector<int> unbroadcast_registers(const Layout& to, const ir::Shape& from_shape) {
  const auto terms = unbroadcast_register_terms(to, from_shape);
  std::vector<int> out(static_cast<size_t>(to.regs()));
  for (int r = 0; r < to.regs(); ++r) out[static_cast<size_t>(r)] = static_cast<int>(evaluate(terms, r));
  return out;
}

ReductionPlan plan_reduction(const Layout& parent, int dim, bool whole) {
  ReductionPlan p;
  p.out_regs = whole ? 1 : slice(parent, dim).regs();
  // Which digits are combined: those of the dimension, and for one result every non-replicated one.
  auto combined = [&](const Factor& f) { return f.dim == dim || (whole && f.dim != kReplicated); };
  int64_t js = 1, ks = 1;
  std::vector<Term> replicas;
  for (size_t k = 0; k < parent.factors().size(); ++k) {
    const Factor& f = parent.factors()[k];
    if (f.size == 1) continue;
    const int64_t div = parent.digit_div(k);
    if (f.axis == Axis::Reg) {
      const bool along = combined(f);
      int64_t& s = along ? ks : js;
      (along ? p.reg_of_k : p.reg_of_j).push_back({Axis::Reg, s, f.size, div});
      if (f.dim == dim) p.coord_of_k.push_back({Axis::Reg, s, f.size, f.stride});
      s *= f.size;
    } else if (f.dim == kReplicated) {
      // Threads that only replicate hold the same partial: one of them writes it.
      replicas.push_back({f.axis, div, div * f.size == parent.size_of(f.axis) ? 0 : f.size, 1});
    } else if (combined(f) && f.axis == Axis::Lane) {
      for (int64_t m = div; m < div * f.size; m *= 2) p.shuffle_masks.push_back(static_cast<int>(m));
      p.writer.push_back({Axis::Lane, div, f.size, 1});  // after the butterfly every such lane holds the result
    } else if (combined(f)) {
      p.warp_slot.push_back({Axis::Warp, div, div * f.size == parent.warps() ? 0 : f.size, p.warps});
      p.warps *= static_cast<int>(f.size);
    }
  }
  p.writer.insert(p.writer.end(), replicas.begin(), replicas.end());
  p.axis_regs = static_cast<int>(ks);
  // The most significant digit of j and of k needs no modulo.
  for (auto* ts : {&p.reg_of_j, &p.reg_of_k, &p.coord_of_k})
    if (!ts->empty() && ts->back().div * ts->back().mod == (ts == &p.reg_of_j ? js : ks)) ts->back().mod = 0;
  for (const Term& t : parent.coord_terms(dim))
    if (t.axis != Axis::Reg) p.coord_of_thread.push_back(t);
  return p;
}

std::vector<std::vector<int>> reduction_groups(const Layout& parent, int dim) {
  const ReductionPlan p = plan_reduction(parent, dim, false);
  std::vector<std::vector<int>> out;
  for (int j = 0; j < p.out_regs; ++j) {
    std::vector<std::pair<int64_t, int>> g;
    for (int k = 0; k < p.axis_regs; ++k)
      g.push_back({evaluate(p.coord_of_k, k), static_cast<int>(evaluate(p.reg_of_j, j) + evaluate(p.reg_of_k, k))});
    std::sort(g.begin(), g.end());
    std::vector<int> regs;
    for (const auto& [along, r] : g) regs.push_back(r);
    out.push_back(std::move(regs));
  }
  return out;
}

bool same_registers(const Layout& a, const Layout& b) {
  if (a.regs() != b.regs() || a.warps() != b.warps()) return false;
  const auto ra = row_major(a.shape()), rb = row_major(b.shape());
  for (int w = 0; w < a.warps(); ++w)
    for (int lane = 0; lane < kLanes; ++lane)
      for (int r = 0; r < a.regs(); ++r) {
        const auto ca = a.coord(r, lane, w), cb = b.coord(r, lane, w);
        const bool ia = a.inside(ca), ib = b.inside(cb);
        if (ia != ib) return false;
        if (!ia) continue;
        int64_t ea = 0, eb = 0;
        for (int d = 0; d < a.shape().rank; ++d) ea += ca[static_cast<size_t>(d)] * ra[static_cast<size_t>(d)];
        for (int d = 0; d < b.shape().rank; ++d) eb += cb[static_cast<size_t>(d)] * rb[static_cast<size_t>(d)];
        if (ea != eb) return false;
      }
  return true;
}

Layout permute_sources(const Layout& out, const std::vector<int64_t>& perm, const ir::Shape& src_shape) {
  std::vector<Factor> f = out.factors();
  for (Factor& x : f)
    if (x.dim != kReplicated) x.dim = static_cast<int>(perm.at(static_cast<size_t>(x.dim)));
  return Layout(src_shape, out.warps(), f);
}

}  // namespace tilejit::layout
