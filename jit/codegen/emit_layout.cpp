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
  const auto padded = L_.smem.conversion_pad.find(id);
  const int pad = padded == L_.smem.conversion_pad.end() ? 0 : padded->second;
  line("// " + note(id) + ": " + lay(x).dist.str() + " -> " + lay(id).dist.str() +
       (pad ? ", rows padded by " + str(pad) + " elements against bank conflicts" : ""));
  open("");
  auto [p, staged] = shared_source(x, 0, pad);
  if (staged) sync();
  close();
  read_chunks(id, p, "through shared memory", staged ? pad : 0);
  if (staged) scratch_pending_ = true;
}

/// Element i of `id` (row-major coordinates e0, e1, ...) reads element `src` of `x` through shared memory.
void Emitter::emit_gather(NodeId id, NodeId x, const std::string& src) {
  line(decl_stmt(id), id);
  open("");
  auto [p, staged] = shared_source(x, 0);
  if (staged) sync();
  line("const " + mem_type(g_.node(x).dtype) + "* const src = " + p + ";");
  element_loop(id, true, true, {var(id) + "[i] = " + load_elem("src", src, g_.node(x).dtype) + ";"});
  close();
  if (staged) scratch_pending_ = true;
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
  const auto perm = g_.ints(id);
  const auto stx = row_major(sx);
  if (uniform(x)) {
    line("const " + decl(id) + " = " + at(x) + ";", id);
    return;
  }
  std::string src;
  for (int d = 0; d < sd.rank; ++d) src = add_term(src, coord("e", sd, d), stx[static_cast<size_t>(perm[static_cast<size_t>(d)])]);
  emit_gather(id, x, src.empty() ? "0" : src);
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

// A reduction in three steps: each thread combines its own registers, the lanes that hold parts of one
// result combine through warp shuffles (butterfly, so every lane ends with the result), and the warps
// that do combine through a small shared buffer. The result is left in every thread that holds its
// slice: in the slice layout, or in every thread when it is one element.
void Emitter::emit_reduce(NodeId id) {
  const ir::Node& n = g_.node(id);
  const NodeId x = g_.operand(id, 0);
  const DType t = g_.node(x).dtype;
  const int axis = static_cast<int>(g_.int_at(id, 0));
  const bool argmax = n.op == Op::ArgMax;
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

  // 2. Across lanes: butterfly shuffles over the combined lane digits.
  if (!plan.shuffle_masks.empty()) {
    line("#pragma unroll");
    open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
    for (int m : plan.shuffle_masks) {
      // The shuffle has a statement of its own: every lane must execute it (an operand of a
      // combine written as a conditional expression might not be evaluated in some lanes).
      line("{");
      line("  const " + tt + " o = tj::shfl_xor(" + acc + "[j], " + str(m) + ");");
      if (argmax) {
        line("  const int oa = tj::shfl_xor(" + arg + "[j], " + str(m) + ");");
        line("  " + argmax_take("o", "oa", ""));
      } else {
        line("  " + acc + "[j] = " + combine(acc + "[j]", "o") + ";");
      }
      line("}");
    }
    close();
  }

  // 3. Across warps: each warp's partial through the scratch arena, then every thread combines them in warp order.
  const int nw = plan.warps;
  const std::string out_e = whole ? "0" : terms(ly.dist.linear_terms(), "j");
  const std::string out_valid = whole ? "" : guard(ly, "j");
  if (nw > 1) {
    scratch_barrier();
    const int64_t out_n = whole ? 1 : n.shape.numel();
    const std::string vals = scratch_ptr(0, t), idxs = scratch_ptr(static_cast<int>((out_n * nw * ir::size_of(t) + 15) / 16 * 16), DType::i32);
    std::string writer;
    for (const layout::Term& term : plan.writer) writer += (writer.empty() ? "" : " && ") + digit(term, "") + " == 0";
    writer = both(writer, out_valid);
    // Slot of result element e from warp w: e * nw + w (just w for a single result).
    const std::string base = out_e == "0" ? "" : "(" + out_e + ") * " + str(nw);
    const std::string slot = base.empty() ? terms(plan.warp_slot, "") : base + " + " + terms(plan.warp_slot, "");
    const std::string first = base.empty() ? "0" : base, other = base.empty() ? "w" : base + " + w";
    line("#pragma unroll");
    open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
    open(writer.empty() ? "" : "if (" + writer + ")");
    line(vals + "[" + slot + "] = " + acc + "[j];");
    if (argmax) line(idxs + "[" + slot + "] = " + arg + "[j];");
    close();
    close();
    sync("partial results of every warp");
    line("#pragma unroll");
    open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
    if (!out_valid.empty()) open("if (" + out_valid + ")");
    line(acc + "[j] = " + vals + "[" + first + "];");
    if (argmax) line(arg + "[j] = " + idxs + "[" + first + "];");
    line("#pragma unroll");
    open("for (int w = 1; w < " + str(nw) + "; ++w)");
    line("const " + tt + " o = " + vals + "[" + other + "];");
    if (argmax) {
      line("const int oa = " + idxs + "[" + other + "];");
      line(argmax_take("o", "oa", ""));
    } else {
      line(acc + "[j] = " + combine(acc + "[j]", "o") + ";");
    }
    close();
    if (!out_valid.empty()) close();
    close();
    scratch_pending_ = true;
  }
  const std::string result = argmax ? arg : acc;
  if (whole) {
    line("const " + decl(id) + " = " + result + "[0];");
  } else {
    name_[static_cast<size_t>(id)] = result;
  }
}

}  // namespace tilejit::codegen::detail
