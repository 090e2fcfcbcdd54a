// Matrix products (dot): wgmma on tensor cores where the planner chose it (passes::plan_mma), else CUDA cores.
#include "codegen/emitter.h"

namespace tilejit::codegen::detail {

namespace {

/// "wgmma_m64n128k16_f32_bf16_k4": the name of the helper that issues the instructions of one K tile of `m`
/// (k4: four k-steps; m2 / n2: two instructions along M / N per warpgroup and k-step).
std::string wgmma_name(const passes::MmaDot& m) {
  std::string s = m.instruction();
  s = s.substr(std::string("wgmma.mma_async.sync.aligned.").size());
  for (char& c : s)
    if (c == '.') c = '_';
  s = "wgmma_" + s;
  // The two operand types are equal: keep one.
  s = s.substr(0, s.rfind('_')) + (m.a_in_registers() ? "_rs" : "");
  const layout::MmaTiling& t = m.tiling;
  s += "_k" + str(t.k / t.instr_k);
  if (t.m_tiles > 1) s += "_m" + str(t.m_tiles);
  if (t.n_tiles > 1) s += "_n" + str(t.n_tiles);
  return s;
}

}  // namespace

std::string Emitter::wgmma_helper(const passes::MmaDot& m) const {
  const layout::MmaTiling& t = m.tiling;
  // An f16 accumulator holds two elements per 32-bit register (tj::PackedF16).
  const bool packed = m.acc == DType::f16;
  const int per = t.instr_n / (packed ? 4 : 2);  // accumulator registers of one instruction
  const int parts = t.m_tiles * t.n_tiles;
  const int count = static_cast<int>(t.k / t.instr_k) * parts;
  const int regs = per * parts;
  const bool integer = m.acc == DType::i32;
  const bool transposable = m.in == DType::bf16 || m.in == DType::f16;
  const bool ra = m.a_in_registers();  // a: four 32-bit registers (two 16-bit elements each); no TransA
  const std::string reg = integer ? "int" : packed ? "unsigned" : "float";
  // Operands: the accumulator registers, then a (1 or 4) and b of each instruction, scale_d, the transpose bits.
  const int a_ops = ra ? 4 : 1, per_instr = a_ops + 1, scale_op = regs + count * per_instr;
  std::string h = "namespace tj {\n\n";
  h += "/// " + str(count) + " x " + m.instruction() + " (" + t.str() + ") in one asm\n";
  h += "/// statement: d (" + str(regs) + " registers per thread of a warpgroup" + (packed ? ", two f16 each" : "") + ") += a x b, a ";
  h += ra ? "from registers (four 32-bit registers per instruction)" : "from shared memory";
  h += ", b from shared memory\n/// through matrix descriptors, one (a, b) per instruction, k-step outermost; `scale_d` 0 makes every\n";
  h += "/// instruction ignore d (d = a x b; generated code passes 1).\n";
  if (transposable) h += ra ? "/// TransB: b is N-major (its tile holds N innermost).\n" : "/// TransA / TransB: the operand is M- / N-major (its tile holds M / N innermost).\n";
  if (transposable) h += ra ? "template <int TransB>\n" : "template <int TransA, int TransB>\n";
  h += "__device__ __forceinline__ void " + wgmma_name(m) + "(" + reg + "* d, int scale_d";
  for (int i = 0; i < count; ++i) {
    h += ",\n    ";
    if (ra)
      for (int q = 0; q < 4; ++q) h += "unsigned a" + str(i) + "_" + str(q) + ", ";
    else
      h += "unsigned long long a" + str(i) + ", ";
    h += "unsigned long long b" + str(i);
  }
  h += ") {\n";
  h += "  asm volatile(\n      \"{\\n\"\n      \".reg .pred p;\\n\"\n";
  h += "      \"setp.ne.b32 p, %" + str(scale_op) + ", 0;\\n\"\n";
  for (int i = 0; i < count; ++i) {
    // Instruction i: k-step i / parts, then its part (mt, nt) of the accumulator.
    const int first = (i % parts) * per, op = regs + i * per_instr;
    h += "      \"" + m.instruction() + " {\"\n";
    for (int r = first; r < first + per; r += 8) {
      h += "      \"";
      for (int j = r; j < std::min(first + per, r + 8); ++j) h += "%" + str(j) + (j + 1 < first + per ? ", " : "");
      h += "\"\n";
    }
    std::string tail = ra ? "}, {%" + str(op) + ", %" + str(op + 1) + ", %" + str(op + 2) + ", %" + str(op + 3) + "}" : "}, %" + str(op);
    tail += ", %" + str(op + a_ops) + ", p";
    if (!integer) tail += ", 1, 1";
    if (transposable) tail += ra ? ", %" + str(scale_op + 1) : ", %" + str(scale_op + 1) + ", %" + str(scale_op + 2);
    h += "      \"" + tail + ";\\n\"\n";
  }
  h += "      \"}\\n\"\n      : ";
  const std::string c = integer || packed ? "\"+r\"" : "\"+f\"";
  for (int j = 0; j < regs; ++j) h += c + "(d[" + str(j) + "])" + (j + 1 < regs ? (j % 8 == 7 ? ",\n        " : ", ") : "");
  h += "\n      : ";
  for (int i = 0; i < count; ++i) {
    if (ra)
      for (int q = 0; q < 4; ++q) h += "\"r\"(a" + str(i) + "_" + str(q) + "), ";
    else
      h += "\"l\"(a" + str(i) + "), ";
    h += "\"l\"(b" + str(i) + "),\n        ";
  }
  h += "\"r\"(scale_d)";
  if (transposable) h += ra ? ", \"n\"(TransB)" : ", \"n\"(TransA), \"n\"(TransB)";
  h += ");\n}\n\n}  // namespace tj\n";
  return h;
}

/// The shared-memory address of an operand tile (of the current pipeline stage when its load is pipelined).
std::string Emitter::tile_address(NodeId load) const {
  const passes::LoadPlan& lp = L_.smem.loads.at(load);
  const std::string b = "tj::smem_addr(tj_buf" + str(lp.buffer) + ")";
  if (lp.stages == 1) return b;
  const int64_t bytes = g_.node(load).shape.numel() * ir::size_of(g_.node(load).dtype);
  return b + " + tj_stage" + str(L_.pipe.loop_of.at(load)) + " * " + str(bytes);
}

std::string Emitter::operand_address(const passes::MmaOperand& o) const {
  if (!o.k_major_copy) return tile_address(o.load);
  const std::string b = "tj::smem_addr(tj_buf" + str(L_.smem.k_major_copies.at(o.load)) + ")";
  const auto loop = L_.pipe.loop_of.find(o.load);
  return loop == L_.pipe.loop_of.end() ? b : b + " + (tj_it" + str(loop->second) + " % 2) * " + str(o.tile.bytes());
}

void Emitter::copy_k_major(const passes::MmaOperand& o, const char* which) {
  const passes::LoadPlan& lp = L_.smem.loads.at(o.load);
  const auto loop = L_.pipe.loop_of.find(o.load);
  const bool pipelined = loop != L_.pipe.loop_of.end();
  std::string src = "reinterpret_cast<const unsigned char*>(tj_buf" + str(lp.buffer) + ")";
  std::string dst = "reinterpret_cast<unsigned char*>(tj_buf" + str(L_.smem.k_major_copies.at(o.load)) + ")";
  if (pipelined) {
    src += " + tj_stage" + str(loop->second) + " * " + str(o.source.bytes());
    dst += " + (tj_it" + str(loop->second) + " % 2) * " + str(o.tile.bytes());
  }
  line("// " + std::string(which) + ": wgmma reads " + (o.tile.elem_bytes == 4 ? "tf32" : "8-bit") + " operands K-major only: the [" +
       str(o.source.rows) + ", " + str(o.source.inner) + "] tile of %" + str(o.load) + " is copied into a K-major " +
       str(o.tile.swizzle) + "B-swizzled [" + str(o.tile.rows) + ", " + str(o.tile.inner) + "] tile" +
       (pipelined ? " (one of two: the previous iteration's products may still read the other)" : ""));
  line("tj::copy_k_major<" + str(o.tile.elem_bytes) + ", " + str(o.tile.rows) + ", " + str(o.tile.inner) + ", " +
       str(o.tile.swizzle) + ", " + str(threads_) + ">(" + src + ", " + dst + ", tid);");
}

void Emitter::emit_wgmma(NodeId id, const passes::MmaDot& m) {
  const NodeId c = g_.operand(id, 2);
  const layout::MmaTiling& t = m.tiling;
  // The accumulator is updated in place when nothing else reads it (a loop-carried accumulator).
  const bool in_place = !uniform(c) && L_.info.users[static_cast<size_t>(c)].size() == 1 && lay(c).dist == lay(id).dist &&
                        packed_storage(c) == (m.acc == DType::f16);
  if (in_place) {
    name_[static_cast<size_t>(id)] = name_[static_cast<size_t>(c)];
    line("// dot: accumulates in place into " + name_[static_cast<size_t>(c)], id);
  } else {
    line(decl_stmt(id), id);
    line("#pragma unroll");
    line("for (int i = 0; i < " + str(lay(id).regs()) + "; ++i) " + at(id) + " = " + at(c) + ";");
  }
  helpers_.emplace(wgmma_name(m), wgmma_helper(m));
  int regs = 0;  // the accumulator's registers as wgmma reads them
  const std::string acc = accumulator_registers(id, &regs);
  open("");
  line("// " + m.instruction() + ": " + t.str());
  const int groups = threads_ / 128;
  // Per warpgroup, the offset of its part of each operand tile (linear in the warpgroup's index).
  auto base = [&](const char* name, const passes::MmaOperand& o, bool rows_are_m) {
    const int count = rows_are_m ? t.warpgroups_m : t.warpgroups_n;
    auto first = [&](int w) { return rows_are_m ? t.row0(w, 0) : t.col0(w, 0); };
    const int64_t step = count > 1 ? layout::operand_descriptor(o.tile, o.mn_major, first(1), 0).start -
                                         layout::operand_descriptor(o.tile, o.mn_major, first(0), 0).start
                                   : 0;
    for (int w = 0; w < count; ++w)
      check_internal(layout::operand_descriptor(o.tile, o.mn_major, first(w), 0).start == w * step,
                     "emit_wgmma: warpgroup offsets are not linear");
    std::string wg = groups == 1 || count == 1 ? "" : rows_are_m ? "(tid / 128 % " + str(t.warpgroups_m) + ")" : "(tid / " + str(128 * t.warpgroups_m) + ")";
    line("const unsigned " + std::string(name) + " = " + operand_address(o) + (wg.empty() ? "" : " + " + wg + " * " + str(step)) +
         ";  // " + (o.mn_major ? "MN" : "K") + "-major, " + str(o.tile.swizzle) + "B swizzle");
  };
  const bool ra = m.a_in_registers();
  if (!ra) base("tj_a", m.a, true);
  base("tj_b", m.b, false);
  const bool transposable = m.in == DType::bf16 || m.in == DType::f16;
  const std::string trans = !transposable ? ""
                            : ra          ? "<" + str(m.b.mn_major ? 1 : 0) + ">"
                                          : "<" + str(m.a.mn_major ? 1 : 0) + ", " + str(m.b.mn_major ? 1 : 0) + ">";
  // a in registers (layout::wgmma_a_fragment): instruction (mt, ks) reads registers mt * K / 2 + 8 * ks + [0, 8),
  // paired into its four 32-bit operands.
  auto a_regs = [&](int mt, int64_t ks) {
    const std::string v = name_[static_cast<size_t>(m.a.value)];
    const int64_t r0 = mt * t.k / 2 + 8 * ks;
    std::string s;
    for (int q = 0; q < 4; ++q)
      s += (q ? ", " : "") + std::string("tj::pack_b16x2(") + v + "[" + str(r0 + 2 * q) + "], " + v + "[" + str(r0 + 2 * q + 1) + "])";
    return s;
  };
  if (m.a.k_major_copy || m.b.k_major_copy) {
    // Outside a pipeline the copy goes into the one buffer that an earlier product (of a previous iteration,
    // or another dot of the tile) may still be reading in another warpgroup.
    if (!L_.pipe.loop_of.count(m.b.k_major_copy ? m.b.load : m.a.load)) sync("no warpgroup still reads the K-major copy");
    if (m.a.k_major_copy) copy_k_major(m.a, "a");
    if (m.b.k_major_copy) copy_k_major(m.b, "b");
    line("tj::fence_proxy_async_shared();  // the copies are visible to wgmma (the async proxy)");
    sync("every thread's part of the copies is written");
  }
  line("tj::wgmma_fence();");
  line(register_fence(id));
  // One call issues every instruction of the K tile (one asm statement: NVVM handles its accumulator operands once),
  // one line of operands per instruction: k-step outermost, then M, then N.
  line("tj::" + wgmma_name(m) + trans + "(" + acc + ", 1,");
  auto desc = [](const std::string& b, const layout::SmemDescriptor& d) {
    return "tj::wgmma_desc(" + b + (d.start ? " + " + str(d.start) : std::string()) + ", " + str(d.lbo) + ", " + str(d.sbo) +
           ", " + str(d.mode()) + ")";
  };
  const int64_t steps = t.k / t.instr_k;
  for (int64_t ks = 0; ks < steps; ++ks) {
    const int64_t k0 = ks * t.instr_k;
    for (int mt = 0; mt < t.m_tiles; ++mt)
      for (int nt = 0; nt < t.n_tiles; ++nt) {
        const layout::SmemDescriptor db = layout::operand_descriptor(m.b.tile, m.b.mn_major, t.col0(0, nt), k0);
        const std::string a = ra ? a_regs(mt, ks) : desc("tj_a", layout::operand_descriptor(m.a.tile, m.a.mn_major, t.row0(0, mt), k0));
        const bool last = ks + 1 == steps && mt + 1 == t.m_tiles && nt + 1 == t.n_tiles;
        line("    " + a + ", " + desc("tj_b", db) + (last ? ");" : ","));
      }
  }
  line("tj::wgmma_commit();");
  close();
}

void Emitter::emit_dot(NodeId id) {
  if (auto it = L_.mma.dots.find(id); it != L_.mma.dots.end()) return emit_wgmma(id, it->second);
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
    // Precision::tf32 multiplies the operands as tensor cores read them (the interpreter does the same).
    auto operand = [&](const std::string& e) {
      const std::string v = cast(e, ta, DType::f32);
      return ir::dot_precision(g_, id) == ir::DotPrecision::tf32 ? "tj::to_tf32(" + v + ")" : v;
    };
    const std::string prod = wide ? "__dmul_rn(" + ea + ", " + eb + ")" : "__fmul_rn(" + operand(ea) + ", " + operand(eb) + ")";
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
  auto [pa, sta] = shared_source(id, a, 0);
  auto [pb, stb] = shared_source(id, b, ra ? 0 : (a_bytes + 15) / 16 * 16, nullptr, !sta);
  if (sta || stb) sync();
  line("const " + mem_type(ta) + "* const A = " + pa + ";  // [" + str(sa.dims[0]) + ", " + str(K) + "]");
  line("const " + mem_type(ta) + "* const B = " + pb + ";  // [" + str(K) + ", " + str(N) + "]");
  // k outermost: every accumulator still sums its products in order k = 0, 1, ...
  open("for (int kk = 0; kk < " + str(K) + "; ++kk)");
  element_loop(id, true, true, {acc + " = " + step + ";"});
  close();
  close();
}

}  // namespace tilejit::codegen::detail
