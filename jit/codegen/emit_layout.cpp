// Data exchanged between threads: broadcasts, layout conversions, gathers (reshape, permute) and reductions.
#include "codegen/emitter.h"

namespace tilejit::codegen::detail {

void Emitter::emit_broadcast(NodeId id) {
  const NodeId x = g_.operand(id, 0);
  if (uniform(x)) {
    if (uniform(id)) {
      line("const " + decl(id) + " = " + at(x) + ";", id);
      return;
    }
    line(decl_stmt(id), id);
    element_loop(id, false, false, {var(id) + "[i] = " + at(x) + ";"});
    return;
  }
  // The layout pass gave x the layout in which every thread already holds the sources of its elements.
  const layout::Layout& to = lay(id).dist;
  const ir::Shape& sx = g_.node(x).shape;
  check_internal(layout::unbroadcast(to, sx) == lay(x).dist, "emitter: broadcast operand in another layout");
  // Register r of the result reads register src(r) of x: the digits of the kept register factors.
  const std::vector<layout::Term> src = layout::unbroadcast_register_terms(to, sx);
  line(decl_stmt(id) + "  // " + note(id) + ": every thread holds the sources of its elements");
  line("#pragma unroll");
  line("for (int i = 0; i < " + str(lay(id).regs()) + "; ++i) " + var(id) + "[i] = " + name_[static_cast<size_t>(x)] +
       "[" + terms(src, "i") + "];");
}

void Emitter::emit_convert(NodeId id) {
  const NodeId x = g_.operand(id, 0);
  const bool resident = L_.smem.resident.count(x) > 0;  // a TMA tile read in place has no registers
  if (uniform(x) || uniform(id) || (!resident && lay(x).dist == lay(id).dist)) {
    name_[static_cast<size_t>(id)] = name_[static_cast<size_t>(x)];
    return;
  }
  const layout::SharedLayout* staging = staging_of(id);
  const std::string how = staging_note(staging);
  line("// " + note(id) + ": " + lay(x).dist.str() + " -> " + lay(id).dist.str() + (how.empty() ? "" : ", " + how));
  open("");
  auto [p, staged] = shared_source(id, x, 0, staging);
  if (staged) sync();
  close();
  read_chunks(id, p, "through shared memory", staged ? staging : nullptr);
}

void Emitter::emit_gather(NodeId id, NodeId x, const std::string& src, const layout::SharedLayout* staging) {
  line(decl_stmt(id), id);
  open("");
  auto [p, staged] = shared_source(id, x, 0, staging);
  if (staged) sync();
  line("const " + mem_type(g_.node(x).dtype) + "* const src = " + p + ";");
  const std::string at = staged ? staged_index(staging, src) : src;
  element_loop(id, true, true, {var(id) + "[i] = " + load_elem("src", at, g_.node(x).dtype) + ";"});
  close();
}

void Emitter::emit_reshape(NodeId id) {
  const NodeId x = g_.operand(id, 0);
  const ValueLayout &lx = lay(x), &ly = lay(id);
  auto res = L_.smem.resident.find(id);
  if (res != L_.smem.resident.end()) {
    // A reshaped view of a tile still in shared memory: copy to registers only if used there.
    if (L_.smem.register_copies.count(id))
      read_chunks(id, buffer_ptr(res->second, g_.node(id).dtype), note(id) + " (from the TMA tile)");
    return;
  }
  if (lx.kind == ValueLayout::Uniform && ly.kind == ValueLayout::Uniform) {
    name_[static_cast<size_t>(id)] = name_[static_cast<size_t>(x)];
    return;
  }
  if (lx.kind == ly.kind && layout::same_registers(lx.dist, ly.dist)) {
    name_[static_cast<size_t>(id)] = name_[static_cast<size_t>(x)];  // same elements in the same registers
    return;
  }
  emit_gather(id, x, "e");  // row-major order is kept: element e of the result is element e of x
}

void Emitter::emit_permute(NodeId id) {
  const NodeId x = g_.operand(id, 0);
  const ir::Shape &sd = g_.node(id).shape, &sx = g_.node(x).shape;
  const std::vector<int64_t> perm = ir::attrs<ir::PermuteAttrs>(g_, id).perm;
  const auto stx = row_major(sx);
  if (uniform(x)) {
    line("const " + decl(id) + " = " + at(x) + ";", id);
    return;
  }
  std::string src;
  for (int d = 0; d < sd.rank; ++d) src = add_term(src, coord("e", sd, d), stx[static_cast<size_t>(perm[static_cast<size_t>(d)])]);
  const layout::SharedLayout* staging = staging_of(id);
  if (const std::string how = staging_note(staging); !how.empty()) line("// " + note(id) + ": the staged tile's " + how);
  emit_gather(id, x, src.empty() ? "0" : src, staging);
}

namespace {
/// The value every reduction of kind `op` over type `t` starts from.
std::string reduce_identity(Op op, DType t) {
  const bool sum = op == Op::ReduceSum, low = op == Op::ReduceMin;  // low: start at the top of the range
  switch (t) {
    case DType::f32: return sum ? "-0.0f" : low ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
    case DType::f64: return sum ? "-0.0" : low ? "__longlong_as_double(0x7ff0000000000000ll)" : "__longlong_as_double(0xfff0000000000000ll)";
    case DType::bf16: return sum ? "tj::bf16_t(0x8000)" : low ? "tj::bf16_t(0x7f80)" : "tj::bf16_t(0xff80)";
    case DType::f16: return sum ? "tj::f16_t(0x8000)" : low ? "tj::f16_t(0x7c00)" : "tj::f16_t(0xfc00)";
    case DType::i32: return sum ? "0" : low ? "2147483647" : "(-2147483647 - 1)";
    case DType::i64: return sum ? "0ll" : low ? "9223372036854775807ll" : "(-9223372036854775807ll - 1)";
    case DType::i8: return sum ? "static_cast<signed char>(0)" : low ? "static_cast<signed char>(127)" : "static_cast<signed char>(-128)";
    case DType::u8: return sum ? "static_cast<unsigned char>(0)" : low ? "static_cast<unsigned char>(255)" : "static_cast<unsigned char>(0)";
    case DType::i1: return low ? "true" : "false";
    default: break;
  }
  throw InternalError("emitter: no reduction identity for " + std::string(ir::name_of(t)));
}
}  // namespace

std::string Emitter::take_flagged(const std::vector<Partial>& parts, const std::string& flag, const std::string& other_flag,
                                  const std::vector<std::string>& other, const std::string& take) const {
  if (flag.empty()) return take;
  std::string first;
  for (size_t k = 0; k < parts.size(); ++k) first += parts[k].acc + "[j] = " + other[k] + "; ";
  return "if (" + other_flag + ") { if (" + flag + "[j]) " + take + " else { " + first + "} " + flag + "[j] = true; }";
}

void Emitter::reduce_across_threads(NodeId id, const layout::ReductionPlan& plan, const std::vector<Partial>& parts,
                                    const std::string& flag, const std::function<std::string(const std::vector<std::string>&)>& take) {
  const int out_regs = plan.out_regs;
  std::vector<std::string> other;
  for (const Partial& p : parts) other.push_back(p.other);
  // Across lanes: butterfly shuffles over the combined lane digits.
  if (!plan.shuffle_masks.empty()) {
    line("#pragma unroll");
    open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
    for (int m : plan.shuffle_masks) {
      // The shuffle has a statement of its own: every lane must execute it (an operand of a
      // combine written as a conditional expression might not be evaluated in some lanes).
      line("{");
      for (const Partial& p : parts) line("  const " + reg_type(p.type) + " " + p.other + " = tj::shfl_xor(" + p.acc + "[j], " + str(m) + ");");
      if (!flag.empty()) line("  const bool " + flag + "_o = tj::shfl_xor(" + flag + "[j], " + str(m) + ");");
      line("  " + take_flagged(parts, flag, flag + "_o", other, take(other)));
      line("}");
    }
    close();
  }

  // Across warps: each warp's partial through the scratch arena, then every thread combines them in warp order.
  const int nw = plan.warps;
  if (nw == 1) return;
  const bool whole = g_.node(id).shape.numel() == 1;
  const std::string out_e = whole ? "0" : terms(layout::slice(lay(g_.operand(id, 0)).dist, ir::reduction_axis(g_, id)).linear_terms(), "j");
  const std::string out_valid = whole ? "" : guard_of(layout::slice(lay(g_.operand(id, 0)).dist, ir::reduction_axis(g_, id)), "j");
  scratch_barrier(id);
  const std::vector<int> offsets = passes::reduction_scratch(g_, L_.layout, id);
  std::vector<std::string> slots;
  for (size_t k = 0; k < parts.size(); ++k) slots.push_back(scratch_ptr(offsets[k], parts[k].type));
  const std::string flags = flag.empty() ? "" : scratch_ptr(offsets[parts.size()], DType::u8);
  std::string writer;
  for (const layout::Term& term : plan.writer) writer += (writer.empty() ? "" : " && ") + digit(term, "") + " == 0";
  writer = both(writer, out_valid);
  // Slot of result element e from warp w: e * nw + w (just w for a single result).
  const std::string base = out_e == "0" ? "" : "(" + out_e + ") * " + str(nw);
  const std::string slot = base.empty() ? terms(plan.warp_slot, "") : base + " + " + terms(plan.warp_slot, "");
  const std::string first = base.empty() ? "0" : base, from_w = base.empty() ? "w" : base + " + w";
  line("#pragma unroll");
  open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
  open(writer.empty() ? "" : "if (" + writer + ")");
  for (size_t k = 0; k < parts.size(); ++k) line(slots[k] + "[" + slot + "] = " + parts[k].acc + "[j];");
  if (!flag.empty()) line(flags + "[" + slot + "] = " + flag + "[j];");
  close();
  close();
  sync("partial results of every warp");
  line("#pragma unroll");
  open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
  if (!out_valid.empty()) open("if (" + out_valid + ")");
  for (size_t k = 0; k < parts.size(); ++k) line(parts[k].acc + "[j] = " + slots[k] + "[" + first + "];");
  if (!flag.empty()) line(flag + "[j] = " + flags + "[" + first + "] != 0;");
  line("#pragma unroll");
  open("for (int w = 1; w < " + str(nw) + "; ++w)");
  for (size_t k = 0; k < parts.size(); ++k) line("const " + reg_type(parts[k].type) + " " + other[k] + " = " + slots[k] + "[" + from_w + "];");
  if (!flag.empty()) line("const bool " + flag + "_o = " + flags + "[" + from_w + "] != 0;");
  line(take_flagged(parts, flag, flag + "_o", other, take(other)));
  close();
  if (!out_valid.empty()) close();
  close();
}

// A reduction in three steps: each thread combines its own registers, the lanes that hold parts of one
// result combine through warp shuffles (butterfly, so every lane ends with the result), and the warps
// that do combine through a small shared buffer. The result is left in every thread that holds its
// slice: in the slice layout, or in every thread when it is one element.
void Emitter::emit_reduce(NodeId id) {
  const ir::Node& n = g_.node(id);
  const NodeId x = g_.operand(id, 0);
  const DType t = g_.node(x).dtype;
  const int axis = ir::reduction_axis(g_, id);
  const bool argmax = n.op == Op::ArgMax;
  if (n.op == Op::Reduce) return emit_combine(id);
  const std::string tt = reg_type(t);
  if (uniform(x)) {  // one element: the reduction is the element itself
    line("const " + decl(id) + " = " + (argmax ? std::string("0") : at(x)) + ";", id);
    return;
  }
  const layout::Layout& lx = lay(x).dist;
  const bool whole = uniform(id);  // one result: every dimension is reduced (the others have extent 1)
  const ValueLayout& ly = lay(id);
  check_internal(whole || ly.dist == layout::slice(lx, axis), "emitter: reduction result not in the slice layout");
  const layout::ReductionPlan plan = layout::plan_reduction(lx, axis, whole);
  const Op step_op = n.op == Op::ReduceSum ? Op::Add : n.op == Op::ReduceMin ? Op::Min : Op::Max;
  auto combine = [&](const std::string& a, const std::string& b) { return detail::binary(step_op, t, a, b); };
  const std::string ident = reduce_identity(argmax ? Op::ReduceMax : n.op, t);
  const int out_regs = plan.out_regs;
  const std::string acc = var(id) + "_acc", arg = var(id) + "_arg";
  // argmax keeps (value, index) pairs: the other pair wins when its value is greater, or equal with a smaller index.
  auto argmax_take = [&](const std::string& v, const std::string& a, const std::string& also) {
    const std::string wins = detail::argmax_greater(t, v, acc + "[j]") + " || (!" + detail::argmax_greater(t, acc + "[j]", v) +
                             " && " + a + " < " + arg + "[j])";
    return "if (" + (also.empty() ? wins : also + " && (" + wins + ")") + ") " + acc + "[j] = " + v + ", " + arg + "[j] = " + a + ";";
  };

  // 1. Within each thread: result register j combines parent registers r(j, k), k over the axis digits.
  const std::string r = plus(terms(plan.reg_of_j, "j"), terms(plan.reg_of_k, "k"));
  line("// " + note(id) + " over axis " + str(axis) + " of " + lx.str());
  line(tt + " " + acc + "[" + str(out_regs) + "];");
  if (argmax) line("int " + arg + "[" + str(out_regs) + "];");
  const std::string x_i = name_[static_cast<size_t>(x)] + "[i]";
  const std::string valid = guard(lay(x), "i");
  line("#pragma unroll");
  open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
  if (!argmax && plan.axis_regs > 2) {
    // A pairwise tree: log2(K) levels of independent combines instead of a chain of K (the IR leaves
    // the order of a float sum unspecified; max and min do not depend on it).
    const std::string K = str(plan.axis_regs);
    line(tt + " t[" + K + "];");
    line("#pragma unroll");
    open("for (int k = 0; k < " + K + "; ++k)");
    line("const int i = " + r + ";");
    line("t[k] = " + (valid.empty() ? x_i : "(" + valid + ") ? " + x_i + " : " + ident) + ";");
    close();
    line("#pragma unroll");
    open("for (int s = 1; s < " + K + "; s *= 2)");
    line("#pragma unroll");
    line("for (int k = 0; k + s < " + K + "; k += 2 * s) t[k] = " + combine("t[k]", "t[k + s]") + ";");
    close();
    line(acc + "[j] = t[0];");
    close();
  } else {
    line(acc + "[j] = " + ident + ";");
    if (argmax) line(arg + "[j] = 2147483647;");
    line("#pragma unroll");
    open("for (int k = 0; k < " + str(plan.axis_regs) + "; ++k)");
    line("const int i = " + r + ";");
    if (argmax) {
      line("const int a = " + plus(terms(plan.coord_of_k, "k"), terms(plan.coord_of_thread, "")) + ";  // coordinate along the axis");
      line(argmax_take(x_i, "a", valid.empty() ? "" : valid));
    } else {
      const std::string c = acc + "[j] = " + combine(acc + "[j]", x_i) + ";";
      line(valid.empty() ? c : "if (" + valid + ") " + c);
    }
    close();
    close();
  }

  // 2 and 3. Across lanes, then across warps.
  std::vector<Partial> parts{{acc, t, "o"}};
  if (argmax) parts.push_back({arg, DType::i32, "oa"});
  reduce_across_threads(id, plan, parts, "", [&](const std::vector<std::string>& o) {
    return argmax ? argmax_take(o[0], o[1], "") : acc + "[j] = " + combine(acc + "[j]", o[0]) + ";";
  });
  const std::string result = argmax ? arg : acc;
  if (whole) {
    line("const " + decl(id) + " = " + result + "[0];");
  } else {
    name_[static_cast<size_t>(id)] = result;
  }
}

// A reduction with the user's combine function (a Reduce of n values): the function becomes a lambda
// over scalars, `vN_combine(a0.., b0.., r0..)`, and the steps are emit_reduce's, with n partials. It
// has no identity: the first element of each thread starts its partial, and over a padded layout
// (registers that hold no element) each partial carries a flag saying whether it holds one.
void Emitter::emit_combine(NodeId id) {
  const auto xs = g_.operands(id);
  const size_t n = xs.size();
  const NodeId x0 = xs[0];
  if (uniform(x0)) return;  // one element: the results are the elements (emit_reduce_result)
  const int axis = ir::reduction_axis(g_, id);
  const uint32_t region = ir::combine_region(g_, id);
  const std::string fn = var(id) + "_combine";

  // The combine function: parameters named after the region's arguments, results by reference.
  std::vector<std::string> params(2 * n);
  for (NodeId b : g_.region(region).nodes)
    if (g_.node(b).op == Op::CombineArg) name_[static_cast<size_t>(b)] = params[static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g_, b).index)] = var(b);
  std::string sig;
  for (size_t k = 0; k < 2 * n; ++k)
    sig += "const " + reg_type(g_.node(xs[k % n]).dtype) + " " + (params[k].empty() ? var(id) + "_unused" + str(static_cast<int64_t>(k)) : params[k]) + ", ";
  for (size_t k = 0; k < n; ++k) sig += reg_type(g_.node(xs[k]).dtype) + "& r" + str(static_cast<int64_t>(k)) + (k + 1 < n ? ", " : "");
  const layout::Layout& lx = lay(x0).dist;
  line("// " + note(id) + " over axis " + str(axis) + " of " + lx.str() + ": " + str(static_cast<int64_t>(n)) +
       " values combined by the function below");
  open("const auto " + fn + " = [&](" + sig + ")");
  const NodeId yield = g_.region(region).nodes.back();
  for (NodeId b : g_.region(region).nodes)
    if (b != yield && g_.node(b).op != Op::CombineArg) emit_node(b);
  for (size_t k = 0; k < n; ++k) line("r" + str(static_cast<int64_t>(k)) + " = " + at(g_.operand(yield, static_cast<int>(k))) + ";");
  --depth_;
  line("};");

  const bool whole = g_.node(id).shape.numel() == 1;
  const layout::ReductionPlan plan = layout::plan_reduction(lx, axis, whole);
  const int out_regs = plan.out_regs;
  std::vector<Partial> parts;
  for (size_t k = 0; k < n; ++k) parts.push_back({var(id) + "_acc" + str(static_cast<int64_t>(k)), g_.node(xs[k]).dtype, "o" + str(static_cast<int64_t>(k))});
  // fn(partials..., others..., partials...): the partials combined with the values named `other`.
  auto call = [&](const std::function<std::string(size_t)>& mine, const std::vector<std::string>& other) {
    std::string a, r;
    for (size_t k = 0; k < n; ++k) a += mine(k) + ", ";
    for (size_t k = 0; k < n; ++k) a += other[k] + ", ";
    for (size_t k = 0; k < n; ++k) r += mine(k) + (k + 1 < n ? ", " : "");
    return fn + "(" + a + r + ");";
  };
  auto partial_j = [&](size_t k) { return parts[k].acc + "[j]"; };
  const std::string valid = guard(lay(x0), "i");
  const std::string flag = valid.empty() ? "" : var(id) + "_ok";

  // 1. Within each thread: result register j combines parent registers r(j, k), k over the axis digits.
  const std::string r = plus(terms(plan.reg_of_j, "j"), terms(plan.reg_of_k, "k"));
  for (const Partial& p : parts) line(reg_type(p.type) + " " + p.acc + "[" + str(out_regs) + "]" + (flag.empty() ? ";" : " = {};"));
  if (!flag.empty()) line("bool " + flag + "[" + str(out_regs) + "];  // the partial holds an element");
  std::vector<std::string> x_i;  // element i of each reduced block
  for (NodeId x : xs) x_i.push_back(name_[static_cast<size_t>(x)] + "[i]");
  line("#pragma unroll");
  open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
  if (flag.empty() && plan.axis_regs > 1) {
    // A pairwise tree: log2(K) levels of independent combines instead of a chain of K.
    const std::string K = str(plan.axis_regs);
    for (size_t k = 0; k < n; ++k) line(reg_type(parts[k].type) + " t" + str(static_cast<int64_t>(k)) + "[" + K + "];");
    line("#pragma unroll");
    open("for (int k = 0; k < " + K + "; ++k)");
    line("const int i = " + r + ";");
    for (size_t k = 0; k < n; ++k) line("t" + str(static_cast<int64_t>(k)) + "[k] = " + x_i[k] + ";");
    close();
    line("#pragma unroll");
    open("for (int s = 1; s < " + K + "; s *= 2)");
    line("#pragma unroll");
    std::vector<std::string> upper;
    for (size_t k = 0; k < n; ++k) upper.push_back("t" + str(static_cast<int64_t>(k)) + "[k + s]");
    line("for (int k = 0; k + s < " + K + "; k += 2 * s) " + call([&](size_t k) { return "t" + str(static_cast<int64_t>(k)) + "[k]"; }, upper));
    close();
    for (size_t k = 0; k < n; ++k) line(partial_j(k) + " = t" + str(static_cast<int64_t>(k)) + "[0];");
  } else if (flag.empty()) {
    line("const int i = " + terms(plan.reg_of_j, "j") + ";");
    for (size_t k = 0; k < n; ++k) line(partial_j(k) + " = " + x_i[k] + ";");
  } else {
    line(flag + "[j] = false;");
    line("#pragma unroll");
    open("for (int k = 0; k < " + str(plan.axis_regs) + "; ++k)");
    line("const int i = " + r + ";");
    line(take_flagged(parts, flag, valid, x_i, call(partial_j, x_i)));
    close();
  }
  close();

  // 2 and 3. Across lanes, then across warps.
  reduce_across_threads(id, plan, parts, flag, [&](const std::vector<std::string>& o) { return call(partial_j, o); });
}

// A value of a Reduce: its partials hold the results in the slice layout (in every thread for one element).
void Emitter::emit_reduce_result(NodeId id) {
  const NodeId red = g_.operand(id, 0);
  const int k = ir::attrs<ir::IndexAttrs>(g_, id).index;
  const NodeId x = g_.operand(red, k);
  if (uniform(x)) {
    line("const " + decl(id) + " = " + at(x) + ";", id);
    return;
  }
  const std::string partials = var(red) + "_acc" + str(k);
  if (uniform(id)) {
    line("const " + decl(id) + " = " + partials + "[0];", id);
    return;
  }
  check_internal(lay(id).dist == layout::slice(lay(x).dist, ir::reduction_axis(g_, red)),
                 "emitter: reduce result not in the slice layout");
  name_[static_cast<size_t>(id)] = partials;
}

}  // namespace tilejit::codegen::detail
