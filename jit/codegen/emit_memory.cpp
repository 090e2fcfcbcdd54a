// Loads and stores through pointers (scalar or vectorised, masked or not).
#include "codegen/emitter.h"

namespace tilejit::codegen::detail {

bool Emitter::one_fill(NodeId load, int v) const {
  const NodeId other = g_.operand(load, 3);
  return uniform(other) || passes::register_constancy(L_.layout, L_.axes, g_, other) >= v;
}

void Emitter::plan_loads_as_f32() {
  for (size_t i = 0; i < g_.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    const ir::Node& n = g_.node(id);
    if (L_.info.position[i] < 0 || n.op != Op::Cast || n.dtype != DType::f32 || uniform(id)) continue;
    const NodeId x = g_.operand(id, 0);
    const ir::Node& xn = g_.node(x);
    if (xn.op != Op::Load || xn.dtype != DType::bf16 || uniform(x) || L_.info.users[static_cast<size_t>(x)].size() != 1 ||
        !(lay(x).dist == lay(id).dist))
      continue;
    const int v = passes::vector_width(g_, L_.layout, L_.axes, L_.spec, x);
    if (v < 2 || v % 2 != 0 || (ir::attrs<ir::AccessAttrs>(g_, x).masked && !one_fill(x, v))) continue;
    load_as_f32_[x] = id;
  }
}

namespace {
/// The eviction hint of a pointer access as the prelude's template argument E (tj::kEvictFirst or
/// tj::kEvictLast), and ", E" after a vector width (nothing for a plain access, whose text stays as it was).
std::string evict_arg(ir::Evict e) { return e == ir::Evict::first ? "tj::kEvictFirst" : "tj::kEvictLast"; }
std::string evict_targ(ir::Evict e) { return e == ir::Evict::normal ? std::string() : ", " + evict_arg(e); }
}  // namespace

void Emitter::emit_load(NodeId id) {
  const ir::Node& n = g_.node(id);
  const auto ops = g_.operands(id);
  const bool masked = ir::attrs<ir::AccessAttrs>(g_, id).masked;
  const ir::Evict evict = ir::attrs<ir::AccessAttrs>(g_, id).evict;
  const std::string p = tensor_ptr(ops[0]);
  if (opt_.debug_checks) debug_pointer(id);
  if (ir::attrs<ir::AccessAttrs>(g_, id).ahead == ir::LoadAhead::next_iteration)
    line("// " + note(id) + ": the next iteration's elements, loaded while this one computes (prefetch_loads)");
  if (ir::attrs<ir::AccessAttrs>(g_, id).ahead == ir::LoadAhead::first_iteration)
    line("// " + note(id) + ": the loop's first elements, loaded before it (prefetch_loads)");
  std::string e = evict == ir::Evict::normal ? load_elem(p, at(ops[1]), n.dtype)
                                             : hinted_load_elem(p, at(ops[1]), n.dtype, evict_arg(evict));
  if (masked) e = "(" + at(ops[2]) + " ? " + e + " : " + at(ops[3]) + ")";
  if (uniform(id)) {
    line("const " + decl(id) + " = " + e + ";", id);
    return;
  }
  const int v = passes::vector_width(g_, L_.layout, L_.axes, L_.spec, id);
  if (v > 1) {
    // Vectors of v consecutive elements: contiguous, aligned and under one mask value (axis analysis).
    if (const auto f = load_as_f32_.find(id); f != load_as_f32_.end()) {
      // Its only use is .to<f32>(): the words go straight into f32 registers, two elements per word.
      const NodeId cast = f->second;
      line(decl_stmt(cast) + "  // " + note(id) + " and " + note(cast) + ", " + str(v) + " elements per access");
      vector_loop(id, v, [&] {
        const std::string to = "&" + var(cast) + "[i], " + p + " + " + at(ops[1]);
        line("tj::ldg_bf16_f32<" + str(v) + evict_targ(evict) + ">(" + to + (masked ? ", " + at(ops[2]) + ", " + at(ops[3]) : std::string()) + ");");
      });
      return;
    }
    line(decl_stmt(id) + "  // " + note(id) + ", " + str(v) + " elements per access");
    // A fill value constant over the vector is merged word by word (tj::ldg_or), else element by element.
    const bool one_fill = masked && this->one_fill(id, v);
    vector_loop(id, v, [&] {
      const std::string to = "&" + var(id) + "[i], " + p + " + " + at(ops[1]);
      const std::string targs = str(v) + evict_targ(evict);
      if (!masked) return line("tj::ldg<" + targs + ">(" + to + ");");
      if (one_fill) return line("tj::ldg_or<" + targs + ">(" + to + ", " + at(ops[2]) + ", " + at(ops[3]) + ");");
      line("if (" + at(ops[2]) + ") tj::ldg<" + targs + ">(" + to + ");");
      line("else for (int j = 0; j < " + str(v) + "; ++j) " + var(id) + "[i + j] = " + at(ops[3], "i + j") + ";");
    });
    return;
  }
  line(decl_stmt(id), id);
  element_loop(id, false, true, {var(id) + "[i] = " + e + ";"});
}

void Emitter::vector_loop(NodeId id, int v, const std::function<void()>& body) {
  const std::string g = guard(lay(id), "i");
  line("#pragma unroll");
  open("for (int i = 0; i < " + str(lay(id).regs()) + "; i += " + str(v) + ")");
  if (!g.empty()) open("if (" + g + ")");
  body();
  if (!g.empty()) close();
  close();
}

void Emitter::emit_store(NodeId id) {
  const ir::Node& n = g_.node(id);
  const auto ops = g_.operands(id);
  const bool masked = ir::attrs<ir::AccessAttrs>(g_, id).masked;
  const ir::Evict evict = ir::attrs<ir::AccessAttrs>(g_, id).evict;
  const std::string p = tensor_ptr(ops[0]);
  const NodeId offs = ops[1];
  if (opt_.debug_checks) debug_pointer(id);
  std::string s;
  if (n.op == Op::Store) {
    const std::string value = n.dtype == DType::i1 ? "static_cast<unsigned char>(" + at(ops[2]) + ")" : at(ops[2]);
    s = evict == ir::Evict::normal
            ? p + "[" + at(offs) + "] = " + value + ";"
            : "tj::stg1<" + evict_arg(evict) + ">(" + p + " + " + at(offs) + ", " + value + ");";
  } else {
    const std::string addr = p + " + " + at(offs);
    if (n.dtype == DType::f16) s = "tj::red_add_f16(" + addr + ", " + at(ops[2]) + ");";
    else if (n.dtype == DType::bf16) s = "tj::red_add_bf16(" + addr + ", " + at(ops[2]) + ");";
    else s = "tj::red_add(" + addr + ", " + at(ops[2]) + ");";
  }
  if (masked) s = "if (" + at(ops[3]) + ") " + s;
  if (uniform(offs)) {
    line("if (tid == 0) " + (masked ? "{ " + s + " }" : s), id);  // one thread performs a scalar effect
    return;
  }
  const int v = passes::vector_width(g_, L_.layout, L_.axes, L_.spec, id);
  if (v > 1) {
    line("// " + note(id) + ", " + str(v) + " elements per access");
    vector_loop(offs, v, [&] {
      const std::string st = "tj::stg<" + str(v) + evict_targ(evict) + ">(" + p + " + " + at(offs) + ", &" + name_[static_cast<size_t>(ops[2])] + "[i]);";
      line(masked ? "if (" + at(ops[3]) + ") " + st : st);
    });
    return;
  }
  line("// " + note(id));
  element_loop(offs, false, true, {s}, true);  // one thread per element, also where several hold it
}

}  // namespace tilejit::codegen::detail
