// Matrix products (dot); tensor-core lowering will live here.
#include "codegen/emitter.h"

namespace tilejit::codegen::detail {

void Emitter::emit_dot(NodeId id) {
  const NodeId a = g_.operand(id, 0), b = g_.operand(id, 1), c = g_.operand(id, 2);
  const DType ta = g_.node(a).dtype, tc = g_.node(id).dtype;
  const ir::Shape &sa = g_.node(a).shape, &sc = g_.node(id).shape;
  const int64_t K = sa.dims[1], N = sc.dims[1];
  line(decl_stmt(id), id);
  const std::string acc = at(id);
  const std::string ea = "A[" + coord("e", sc, 0) + " * " + str(K) + " + kk]", eb = "B[kk * " + str(N) + " + " + coord("e", sc, 1) + "]";
  // acc += a * b, as the IR defines it: each product is rounded (to f32, or f64 for f64 inputs)
  // and then added to the accumulator in its type, in order k = 0, 1, ... (no fused multiply-add).
  std::string step;
  if (ir::is_float(ta)) {
    const bool wide = ta == DType::f64;
    const std::string prod = wide ? "__dmul_rn(" + ea + ", " + eb + ")"
                                  : "__fmul_rn(" + cast(ea, ta, DType::f32) + ", " + cast(eb, ta, DType::f32) + ")";
    if (tc == DType::f64) {
      step = "__dadd_rn(" + acc + ", " + (wide ? prod : "static_cast<double>(" + prod + ")") + ")";
    } else if (wide) {
      step = detail::from_compute("__double2float_rn(__dadd_rn(static_cast<double>(" + detail::to_compute(acc, tc) + "), " + prod + "))", tc);
    } else {
      step = detail::from_compute("__fadd_rn(" + detail::to_compute(acc, tc) + ", " + prod + ")", tc);
    }
  } else if (ir::is_float(tc)) {
    // Integer products (wrapping in 64 bits) added to a float accumulator with one rounding.
    const std::string prod = "tj::mul_wrap(static_cast<long long>(" + ea + "), static_cast<long long>(" + eb + "))";
    const std::string sum = "__dadd_rn(static_cast<double>(" + detail::to_compute(acc, tc) + "), tj::i64_to_f64_odd(" + prod + "))";
    step = tc == DType::f64 ? sum : detail::from_compute("__double2float_rn(" + sum + ")", tc);
  } else if (tc == DType::i32 || tc == DType::i64) {
    step = "tj::add_wrap(" + acc + ", tj::mul_wrap(" + cast(ea, ta, tc) + ", " + cast(eb, ta, tc) + "))";
  } else {
    step = "static_cast<" + reg_type(tc) + ">(" + acc + " + " + cast(ea, ta, DType::i32) + " * " + cast(eb, ta, DType::i32) + ")";
  }
  if (uniform(id)) {
    line(var(id) + " = " + at(c) + ";");
  } else {
    line("#pragma unroll");
    line("for (int i = 0; i < " + str(lay(id).regs()) + "; ++i) " + var(id) + "[i] = " + at(c) + ";");
  }
  open("");
  const bool ra = L_.smem.resident.count(a) > 0;
  const int a_bytes = ra ? 0 : static_cast<int>(sa.numel()) * ir::size_of(ta);
  auto [pa, sta] = shared_source(a, 0);
  auto [pb, stb] = shared_source(b, ra ? 0 : (a_bytes + 15) / 16 * 16);
  if (sta || stb) sync();
  line("const " + mem_type(ta) + "* const A = " + pa + ";  // [" + str(sa.dims[0]) + ", " + str(K) + "]");
  line("const " + mem_type(ta) + "* const B = " + pb + ";  // [" + str(K) + ", " + str(N) + "]");
  // k outermost: every accumulator still sums its products in order k = 0, 1, ...
  open("for (int kk = 0; kk < " + str(K) + "; ++kk)");
  element_loop(id, true, true, {acc + " = " + step + ";"});
  close();
  close();
  if (sta || stb) scratch_pending_ = true;
}

}  // namespace tilejit::codegen::detail
