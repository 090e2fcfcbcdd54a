// The readable text form of a graph (TILEJIT_DUMP=ir and the golden tests).
#include <bit>
#include <cstdio>

#include "tilejit/ir/ir.h"

namespace tilejit::ir {

namespace {
std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void print_region(const Graph& g, uint32_t r, int indent, bool with_loc, std::string& out) {
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  for (NodeId id : g.region(r).nodes) {
    const Node& n = g.node(id);
    out += pad;
    if (n.op != Op::Yield && n.op != Op::Store && n.op != Op::AtomicAdd && n.op != Op::DescStore &&
        n.op != Op::DescPrefetch && !is_schedule_op(n.op)) {
      out += "%" + std::to_string(id) + ": " + std::string(name_of(n.dtype));
      if (n.shape.rank) out += n.shape.str();
      out += " = ";
    }
    out += name_of(n.op);
    if (n.op == Op::Const) {
      out += " " + (is_float(n.dtype) ? fmt_double(g.const_f(id)) : std::to_string(g.const_i(id)));
    } else {
      bool first = true;
      for (NodeId o : g.operands(id)) {
        out += first ? " %" : ", %";
        out += std::to_string(o);
        first = false;
      }
      const std::string attributes = attributes_text(g, id);
      if (!attributes.empty()) out += " {" + attributes + "}";
    }
    if (with_loc && !g.location(id).file.empty())
      out += "  // " + g.location(id).file + ":" + std::to_string(g.location(id).line);
    const std::vector<uint32_t> regions = regions_of(g, id);
    for (size_t k = 0; k < regions.size(); ++k) {
      out += k == 0 ? (n.op == Op::Reduce ? " combine {\n" : " {\n") : pad + "} else {\n";
      print_region(g, regions[k], indent + 1, with_loc, out);
    }
    if (!regions.empty()) out += pad + "}";
    out += "\n";
  }
}
}  // namespace

std::string print(const Graph& g, bool with_locations) {
  std::string out = "kernel " + g.kernel_name + "(";
  for (size_t i = 0; i < g.params.size(); ++i) {
    const Param& p = g.params[i];
    if (i) out += ", ";
    switch (p.kind) {
      case Param::Tensor: out += "tensor<" + std::string(name_of(p.dtype)) + ", " + std::to_string(p.rank) + ">"; break;
      case Param::TensorArray: out += "tensor_array<" + std::string(name_of(p.dtype)) + ", " + std::to_string(p.rank) + ">"; break;
      case Param::Scalar: out += std::string(name_of(p.dtype)); break;
      case Param::Config: out += "config"; break;
    }
    out += " " + p.name;
  }
  out += ")";
  if (!g.config.empty()) {
    out += " config {";
    for (size_t i = 0; i < g.config.size(); ++i) {
      if (i) out += ", ";
      out += g.config[i].first + "=" + std::to_string(g.config[i].second);
    }
    out += "}";
  }
  out += " {\n";
  print_region(g, 0, 1, with_locations, out);
  out += "}\n";
  return out;
}

}  // namespace tilejit::ir
