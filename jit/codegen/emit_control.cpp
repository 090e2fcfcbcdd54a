// Control flow: for loops with loop-carried values, ifs with results, and their parallel assignments.
#include "codegen/emitter.h"

namespace tilejit::codegen::detail {

void Emitter::assign_all(const std::vector<std::pair<NodeId, NodeId>>& dst_src) {
  // Parallel assignment: when a source is the current value of another destination, go through temporaries.
  std::set<std::string> dsts;
  bool clash = false;
  for (const auto& [d, s] : dst_src) {
    if (dsts.count(name_[static_cast<size_t>(s)])) clash = true;
    dsts.insert(name_[static_cast<size_t>(d)]);
  }
  std::vector<std::pair<NodeId, std::string>> plan;
  for (const auto& [d, s] : dst_src) {
    if (name_[static_cast<size_t>(d)] == name_[static_cast<size_t>(s)]) continue;
    if (clash) {
      const std::string tmp = name_[static_cast<size_t>(d)] + "_next";
      if (uniform(d)) {
        line("const " + reg_type(g_.node(d).dtype) + " " + tmp + " = " + at(s) + ";");
      } else {
        line(reg_type(g_.node(d).dtype) + " " + tmp + "[" + str(lay(d).regs()) + "];");
        line("#pragma unroll");
        line("for (int i = 0; i < " + str(lay(d).regs()) + "; ++i) " + tmp + "[i] = " + at(s) + ";");
      }
      plan.push_back({d, tmp});
    } else {
      plan.push_back({d, ""});
      if (uniform(d)) {
        line(at(d) + " = " + at(s) + ";");
      } else {
        line("#pragma unroll");
        line("for (int i = 0; i < " + str(lay(d).regs()) + "; ++i) " + at(d) + " = " + at(s) + ";");
      }
    }
  }
  if (!clash) return;
  for (const auto& [d, tmp] : plan) {
    if (uniform(d)) {
      line(at(d) + " = " + tmp + ";");
    } else {
      line("#pragma unroll");
      line("for (int i = 0; i < " + str(lay(d).regs()) + "; ++i) " + at(d) + " = " + tmp + "[i];");
    }
  }
}

void Emitter::emit_for(NodeId id) {
  const auto ops = g_.operands(id);
  const auto body = ir::loop_body(g_, id);
  const size_t carried = ops.size() - 3;
  NodeId index = ir::kNoNode;
  std::vector<NodeId> args(carried, ir::kNoNode);
  for (NodeId b : g_.region(body).nodes) {
    if (g_.node(b).op == Op::LoopIndex) index = b;
    if (g_.node(b).op == Op::LoopArg) args[static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g_, b).index)] = b;
  }
  const std::string iv = index == ir::kNoNode ? "tj_i" + str(id) : var(index);
  if (index != ir::kNoNode) name_[static_cast<size_t>(index)] = iv;
  const auto pipe = L_.pipe.loops.find(id);
  std::vector<std::pair<NodeId, NodeId>> init;
  for (size_t k = 0; k < carried; ++k) {
    if (args[k] == ir::kNoNode) continue;
    line(decl(args[k]) + ";  // loop-carried value " + str(static_cast<int64_t>(k)));
    init.push_back({args[k], ops[3 + k]});
  }
  assign_all(init);
  // Pins the accumulator's initial value here: otherwise the compiler sinks it into the path that skips
  // the loop, after the loop's last wgmma, and ptxas then serializes every wgmma of the kernel (C7515).
  if (pipe != L_.pipe.loops.end())
    for (const passes::CarriedProduct& c : pipe->second.carried)
      line(register_fence(c.arg) + "  // the accumulator's first value stays before the loop");
  // A loop skipped with the wait for its carried products when it runs no iteration: that wait closes the if.
  if (pipe != L_.pipe.loops.end() && pipe->second.skip_when_empty) {
    line("if (" + at(ops[0]) + " < " + at(ops[1]) + ") {  // the loop and the wait for its products, skipped together when it runs no iteration");
    ++depth_;
  }
  open("for (int " + iv + " = " + at(ops[0]) + "; " + iv + " < " + at(ops[1]) + "; " + iv + " += " + at(ops[2]) + ")", id);
  emit_region(body);
  const NodeId yield = g_.region(body).nodes.back();
  std::vector<std::pair<NodeId, NodeId>> next;
  for (size_t k = 0; k < carried; ++k)
    if (args[k] != ir::kNoNode) next.push_back({args[k], g_.operand(yield, static_cast<int>(k))});
  assign_all(next);
  close();
  for (NodeId u : L_.info.users[static_cast<size_t>(id)]) {
    if (g_.node(u).op != Op::LoopResult) continue;
    const NodeId arg = args[static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g_, u).index)];
    check_internal(arg != ir::kNoNode, "emitter: loop result without a loop argument");
    name_[static_cast<size_t>(u)] = name_[static_cast<size_t>(arg)];
  }
}

void Emitter::emit_if(NodeId id) {
  std::vector<NodeId> results;
  for (NodeId u : L_.info.users[static_cast<size_t>(id)])
    if (g_.node(u).op == Op::IfResult) results.push_back(u);
  for (NodeId r : results) line(decl(r) + ";  // if result " + str(ir::attrs<ir::IndexAttrs>(g_, r).index));
  const std::vector<uint32_t> branches = ir::regions_of(g_, id);  // then, else
  for (int k = 0; k < 2; ++k) {
    const uint32_t region = branches[static_cast<size_t>(k)];
    const auto& nodes = g_.region(region).nodes;
    if (k == 1 && nodes.size() == 1 && results.empty()) break;  // empty else
    if (k == 0) {
      open("if (" + at(g_.operand(id, 0)) + ")", id);
    } else {
      out_.erase(out_.size() - 1);  // the newline after the then-branch's "}"
      line_tail(" else {");
      ++depth_;
    }
    emit_region(region);
    std::vector<std::pair<NodeId, NodeId>> assign;
    for (NodeId r : results) assign.push_back({r, g_.operand(nodes.back(), ir::attrs<ir::IndexAttrs>(g_, r).index)});
    assign_all(assign);
    --depth_;
    line("}");
  }
}

}  // namespace tilejit::codegen::detail
