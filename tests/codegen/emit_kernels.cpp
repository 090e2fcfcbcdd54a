// The codegen test kernels: one small DSL kernel per feature of the CUDA emitter, registered by name.
#include "emit_kernels.h"

#include <source_location>

#include <tilejit/tilejit.h>

#include "../../samples/sample_kernels.h"

namespace tilejit::testing {

namespace {

using namespace tilejit::dsl;

template <class K>
std::function<std::shared_ptr<const ir::Graph>(const Config&)> traced(K k) {
  return [k](const Config& c) { return k.trace(c); };
}

std::vector<EmitCase> make_cases() {
  std::vector<EmitCase> cases;
  // Each kernel records the line of its registration as its source location.
  auto add = [&](std::string name, std::string what, auto fn, Config config, codegen::Options options = {},
                 std::source_location where = std::source_location::current()) {
    cases.push_back(
        EmitCase{name, std::move(what), config, traced(tilejit::kernel(name, fn, where)), std::move(options)});
  };

  // ---- TMA copies and elementwise work on tiles ---------------------------------------
  add("scale_bf16", "host descriptors, bf16 -> f32 -> bf16 in place",
      [](Tensor<bf16, 2> x, Tensor<bf16, 2> y, Scalar<float> alpha, Meta<"BM"> BM, Meta<"BN"> BN) {
        auto m = program_id(0) * BM;
        auto n = program_id(1) * BN;
        auto t = descriptor_load(x, {m, n}, {BM, BN});
        descriptor_store(y, {m, n}, (t.to<f32>() * alpha).to<bf16>());
      },
      Config{{"BM", 64}, {"BN", 128}});

  add("copy_f32", "pure TMA copy: the store reads the load's buffer",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"B"> B) {
        auto m = program_id(0) * B, n = program_id(1) * B;
        descriptor_store(y, {m, n}, descriptor_load(x, {m, n}, {B, B}));
      },
      Config{{"B", 64}});

  add("copy_plus_one", "copy + 1 computed in place in the TMA buffer",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"B"> B) {
        auto m = program_id(0) * B, n = program_id(1) * B;
        auto t = descriptor_load(x, {m, n}, {B, B});
        descriptor_store(y, {m, n}, t + 1.0f);
      },
      Config{{"B", 64}});

  add("staged_store", "a store of a computed block gets its own staging buffer",
      [](Tensor<f32, 2> y, Meta<"B"> B) {
        descriptor_store(y, {program_id(0) * B, 0}, full<f32>({B, B}, 3.5f));
      },
      Config{{"B", 32}});

  add("two_stores_one_tile", "two stores straight from one loaded tile",
      [](Tensor<bf16, 2> x, Tensor<bf16, 2> y, Tensor<bf16, 2> z) {
        auto t = descriptor_load(x, {program_id(0) * 32, 0}, {32, 64});
        descriptor_store(y, {program_id(0) * 32, 0}, t);
        descriptor_store(z, {0, program_id(0) * 32}, t);
      },
      Config{});

  add("load_sum_rows", "a loaded tile read in place by a reduction and copied to registers",
      [](Tensor<f32, 2> x, Tensor<f32, 1> y) {
        auto t = descriptor_load(x, {program_id(0) * 16, 0}, {16, 64});
        auto s = sum(t * t, 1);
        descriptor_store(y, {program_id(0) * 16}, s);
      },
      Config{});

  // ---- ranks and coordinates ---------------------------------------------------------------------
  add("rank1", "1-D tile",
      [](Tensor<f32, 1> x, Tensor<f32, 1> y) {
        auto t = descriptor_load(x, {program_id(0) * 256}, {256});
        descriptor_store(y, {program_id(0) * 256}, t * 2.0f);
      },
      Config{});
  add("rank3", "3-D tile, coordinates innermost first",
      [](Tensor<f16, 3> x, Tensor<f16, 3> y) {
        auto t = descriptor_load(x, {program_id(2), program_id(1) * 8, program_id(0) * 32}, {2, 8, 32});
        descriptor_store(y, {program_id(2), program_id(1) * 8, program_id(0) * 32}, -t);
      },
      Config{});
  add("rank4", "4-D tile",
      [](Tensor<i32, 4> x, Tensor<i32, 4> y) {
        auto c0 = program_id(0), c1 = program_id(1), c2 = program_id(2);
        auto t = descriptor_load(x, {c2, c1 * 2, c0 * 4, 0}, {1, 2, 4, 16});
        descriptor_store(y, {c2, c1 * 2, c0 * 4, 0}, t * 3);
      },
      Config{});
  add("rank5", "5-D tile",
      [](Tensor<u8, 5> x, Tensor<u8, 5> y) {
        auto p = program_id(0);
        auto t = descriptor_load(x, {p, 1, 2, 3, 0}, {1, 2, 2, 4, 32});
        descriptor_store(y, {p, 1, 2, 3, 0}, t);
      },
      Config{});

  // ---- descriptor features -------------------------------------------------------------------------
  add("nan_fill", "Fill::nan on a host descriptor",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto t = descriptor_load(x, {program_id(0) * 32 - 8, -4}, {32, 32}, {}, Fill::nan);
        descriptor_store(y, {program_id(0) * 32, 0}, t);
      },
      Config{});
  add("element_strides", "element strides (every second row)",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto t = descriptor_load(x, {program_id(0) * 64, 0}, {64, 32}, {2, 1});
        descriptor_store(y, {program_id(0) * 32, 0}, t);
      },
      Config{});
  add("dedup", "identical descriptors are shared, a different box gets its own",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto a = descriptor_load(x, {0, 0}, {32, 32});
        auto b = descriptor_load(x, {32, 0}, {32, 32});
        auto c = descriptor_load(x, {0, 0}, {16, 32});
        descriptor_store(y, {0, 0}, a + b);
        descriptor_store(y, {64, 0}, c);
      },
      Config{});
  add("merged_view", "a merged (3-D as 2-D) host descriptor",
      [](Tensor<bf16, 3> x, Tensor<bf16, 2> y) {
        auto v = x.merge({2, 1});
        auto t = descriptor_load(v, {program_id(0) * 64, 0}, {64, 64});
        descriptor_store(y, {program_id(0) * 64, 0}, t);
      },
      Config{});
  add("prefetch_host", "prefetch.tensormap of a grid-constant descriptor",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        prefetch_descriptor(x, {32, 32});
        auto t = descriptor_load(x, {program_id(0) * 32, 0}, {32, 32});
        descriptor_store(y, {program_id(0) * 32, 0}, t);
      },
      Config{});
  add("tensor_array", "descriptor arrays: one host-encoded descriptor per tensor, indexed in the kernel",
      [](TensorArray<f32, 2> xs, TensorArray<f32, 2> ys) {
        auto g = program_id(1);
        auto t = descriptor_load(xs[g], {program_id(0) * 32, 0}, {32, 32});
        descriptor_store(ys[g], {program_id(0) * 32, 0}, t * 2.0f);
      },
      Config{});
  add("prefetch_array", "prefetch of an element of a descriptor array",
      [](TensorArray<bf16, 2> xs, Tensor<bf16, 2> y) {
        auto x = xs[program_id(1)];
        prefetch_descriptor(x, {64, 64});
        descriptor_store(y, {program_id(1) * 64, 0}, descriptor_load(x, {0, 0}, {64, 64}));
      },
      Config{});
  add("array_prefetch_modes", "descriptor array elements taken with each prefetch mode",
      [](TensorArray<f32, 2> xs, Tensor<f32, 2> y) {
        auto b = program_id(1) * 3;
        auto x0 = xs.at(b, Prefetch::none);
        auto x1 = xs.at(b + 1, Prefetch::l2);
        auto x2 = xs[b + 2];
        auto t = descriptor_load(x0, {0, 0}, {32, 32}) + descriptor_load(x1, {0, 0}, {32, 32}) +
                 descriptor_load(x2, {0, 0}, {32, 32});
        descriptor_store(y, {program_id(1) * 32, 0}, t);
      },
      Config{});
  add("array_prefetch_explicit", "an element taken without prefetch, prefetched explicitly once",
      [](TensorArray<f32, 2> xs, Tensor<f32, 2> y) {
        auto x = xs.at(program_id(1), Prefetch::none);
        prefetch_descriptor(x, {32, 32});
        descriptor_store(y, {program_id(1) * 32, 0}, descriptor_load(x, {0, 0}, {32, 32}));
      },
      Config{});
  add("tile_view", "tile_view indexing",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto tx = tile_view(x, {32, 32});
        auto ty = tile_view(y, {32, 32});
        auto t = descriptor_load(tx(program_id(0), program_id(1)));
        descriptor_store(ty(program_id(1), program_id(0)), t.trans());
      },
      Config{});

  // ---- stores that reduce ---------------------------------------------------------------------------
  add("reduce_add", "TMA reduce-add store (f32)",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto t = descriptor_load(x, {program_id(0) * 32, 0}, {32, 64});
        descriptor_store(y, {0, 0}, t, StoreReduce::add);
      },
      Config{});
  add("reduce_min", "TMA reduce-min store (i32)",
      [](Tensor<i32, 2> x, Tensor<i32, 2> y) {
        auto t = descriptor_load(x, {program_id(0) * 32, 0}, {32, 32});
        descriptor_store(y, {0, 0}, t, StoreReduce::min);
      },
      Config{});
  add("int_minmax_neg", "integer min / max of negated values, elementwise and as a row reduction (through tj::max_i32)",
      [](Tensor<i32, 2> x, Tensor<u8, 2> y, Tensor<i32, 2> o1, Tensor<i32, 1> o2, Tensor<u8, 2> o3) {
        auto t = descriptor_load(x, {0, 0}, {16, 32});
        auto u = descriptor_load(y, {0, 0}, {16, 32});
        descriptor_store(o1, {0, 0}, maximum(maximum(-t, t * 3), t * -1));
        descriptor_store(o2, {0}, max(t * -1, 1));
        descriptor_store(o3, {0, 0}, minimum(minimum(-u, u), u * 2));
      },
      Config{});
  add("reduce_max", "TMA reduce-max store (bf16) of a computed tile",
      [](Tensor<bf16, 2> x, Tensor<bf16, 2> y) {
        auto t = descriptor_load(x, {program_id(0) * 32, 0}, {32, 64});
        descriptor_store(y, {0, 0}, abs(t), StoreReduce::max);
      },
      Config{});

  // ---- descriptors built on the device ----------------------------------------------------------------
  add("jagged_rows", "rows(start, end): a device-built descriptor from runtime offsets",
      [](Tensor<bf16, 2> values, Tensor<i32, 1> offsets, Tensor<bf16, 2> out, Meta<"BM"> BM, Meta<"D"> D) {
        auto b = program_id(1);
        auto start = load(offsets, b), end = load(offsets, b + 1);
        auto seq = values.rows(start, end);
        auto t = descriptor_load(seq, {program_id(0) * BM, 0}, {BM, D});
        descriptor_store(out.rows(start, end), {program_id(0) * BM, 0}, (t.to<f32>() * 2.0f).to<bf16>());
      },
      Config{{"BM", 64}, {"D", 64}});
  add("make_view", "make_view with runtime sizes and strides (every tensormap.replace field)",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<i64> rows, Scalar<i64> cols) {
        auto v = make_view(x, rows * 4, {rows, cols}, {x.stride(0), 1});
        auto t = descriptor_load(v, {program_id(0) * 16, 0}, {16, 64}, {}, Fill::nan);
        descriptor_store(y, {program_id(0) * 16, 0}, t);
      },
      Config{});
  add("make_view_estride", "device-built descriptor with element strides, rank 3",
      [](Tensor<f16, 3> x, Tensor<f16, 3> y) {
        auto v = make_view(x, 0, {x.size(0), x.size(1), x.size(2)}, {x.stride(0), x.stride(1), 1});
        auto t = descriptor_load(v, {0, program_id(0) * 8, 0}, {4, 8, 64}, {2, 1, 1});
        descriptor_store(y, {0, program_id(0) * 8, 0}, t);
      },
      Config{});
  add("device_placement", "Placement::device on a kernel parameter: built at kernel start",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto t = descriptor_load(x.with_placement(Placement::device), {program_id(0) * 32, 0}, {32, 32});
        descriptor_store(y, {program_id(0) * 32, 0}, t);
      },
      Config{});
  add("prefetch_device", "prefetch of a device-built descriptor",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<i32> n) {
        auto v = x.rows(0, n);
        prefetch_descriptor(v, {32, 32});
        descriptor_store(y, {program_id(0) * 32, 0}, descriptor_load(v, {program_id(0) * 32, 0}, {32, 32}));
      },
      Config{});
  {
    codegen::Options checked;
    checked.debug_checks = true;
    add("debug_checks", "checked mode: device-built fields, TMA coordinates and pointer accesses validated in the kernel",
        [](Tensor<bf16, 2> x, Tensor<bf16, 2> y, Tensor<f32, 1> z, Scalar<i32> n) {
          auto v = x.rows(program_id(0), n);
          descriptor_store(y, {0, program_id(1) * 64}, descriptor_load(v, {0, 0}, {16, 64}));
          auto i = arange(0, 128);
          store(z, i, load(v, i * 2, i < n, 0).to<f32>());
        },
        Config{}, checked);
    add("debug_i64_coord", "checked mode: an i64 TMA coordinate is tested before its conversion to i32",
        [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<i64> row) {
          descriptor_store(y, {0, 0}, descriptor_load(x, {row, 0}, {16, 16}));
        },
        Config{}, checked);
    checked.watchdog_ms = 250;
    cases.push_back(EmitCase{"debug_watchdog", "checked mode: the persistent GEMM with warp roles, every mbarrier wait under the watchdog",
                             Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3).warp_specialize(),
                             traced(tilejit::samples::persistent_matmul_kernel()), checked});
  }
  add("merged_make_view", "a merged view of a device-built view",
      [](Tensor<f32, 3> x, Tensor<f32, 2> y, Scalar<i64> n) {
        auto v = make_view(x, 0, {n, x.size(1), x.size(2)}, {x.stride(0), x.stride(1), 1}).merge({2, 1});
        descriptor_store(y, {0, 0}, descriptor_load(v, {program_id(0) * 32, 0}, {32, 32}));
      },
      Config{});

  // ---- loops ------------------------------------------------------------------------------------------
  add("loop_loads", "a TMA load in a loop: the mbarrier phase flips per iteration",
      [](Tensor<f32, 2> x, Tensor<f32, 1> y, Scalar<i32> k) {
        auto acc = for_range(0, k, 32, zeros<f32>({32}), [&](Scalar<i32> i, Value<f32, 1> a) {
          auto t = descriptor_load(x, {program_id(0) * 32, i}, {32, 32});
          return a + sum(t, 1);
        });
        descriptor_store(y, {program_id(0) * 32}, acc);
      },
      Config{});
  add("loop_copy", "copy tiles in a loop: reloads wait for the previous store to read the buffer",
      [](Tensor<bf16, 2> x, Tensor<bf16, 2> y, Scalar<i32> n) {
        for_range(0, n, 64, [&](Scalar<i32> j) {
          descriptor_store(y, {program_id(0) * 64, j}, descriptor_load(x, {program_id(0) * 64, j}, {64, 64}));
        });
      },
      Config{});
  add("loop_store_staged", "a staged store in a loop waits for the previous store before rewriting",
      [](Tensor<f32, 2> y, Scalar<i32> n) {
        for_range(0, n, 1, [&](Scalar<i32> j) {
          descriptor_store(y, {j * 32, 0}, full<f32>({32, 32}, j.to<f32>()));
        });
      },
      Config{});
  add("loop_device_view", "a view that changes per iteration is rebuilt in the loop",
      [](Tensor<f32, 2> x, Tensor<i32, 1> offsets, Tensor<f32, 2> y, Scalar<i32> groups) {
        for_range(0, groups, 1, [&](Scalar<i32> g) {
          auto start = load(offsets, g), end = load(offsets, g + 1);
          auto t = descriptor_load(x.rows(start, end), {0, 0}, {32, 32});
          descriptor_store(y.rows(start, end), {0, 0}, t * 2.0f);
        });
      },
      Config{});
  add("loop_invariant_view", "a loop-invariant view is hoisted and built once",
      [](Tensor<f32, 2> x, Tensor<f32, 1> y, Scalar<i32> n, Scalar<i32> k) {
        auto acc = for_range(0, k, 32, zeros<f32>({32}), [&](Scalar<i32> i, Value<f32, 1> a) {
          auto v = x.rows(0, n);
          return a + sum(descriptor_load(v, {0, i}, {32, 32}), 1);
        });
        descriptor_store(y, {program_id(0) * 32}, acc);
      },
      Config{});
  add("gemm_dot", "a K loop of TMA loads feeding dot (shared memory read in place)",
      [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Scalar<i32> K, Meta<"BM"> BM, Meta<"BN"> BN,
         Meta<"BK"> BK) {
        auto m = program_id(0) * BM, n = program_id(1) * BN;
        auto acc = for_range(0, K, BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
          auto ta = descriptor_load(a, {m, k}, {BM, BK});
          auto tb = descriptor_load(b, {k, n}, {BK, BN});
          return dot(ta, tb, acc);
        });
        descriptor_store(c, {m, n}, acc);
      },
      Config{{"BM", 64}, {"BN", 64}, {"BK", 32}}.num_warps(4).num_stages(2));
  add("gemm_decayed_acc", "a K loop whose accumulator is scaled before each product (acc * decay), scaled in place and kept in flight",
      [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Scalar<i32> K, Scalar<f32> decay, Meta<"BM"> BM,
         Meta<"BN"> BN, Meta<"BK"> BK) {
        auto m = program_id(0) * BM, n = program_id(1) * BN;
        auto acc = for_range(0, K, BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
          auto scaled = acc * decay;
          return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), scaled);
        });
        descriptor_store(c, {m, n}, acc);
      },
      Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3));
  add("gemm_f16_acc", "a K loop of f16 TMA tiles into an f16 accumulator: wgmma packs two elements per register",
      [](Tensor<f16, 2> a, Tensor<f16, 2> b, Tensor<f16, 2> c, Scalar<i32> K, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
        auto m = program_id(0) * BM, n = program_id(1) * BN;
        auto acc = for_range(0, K, BK, zeros<f16>({BM, BN}), [&](Scalar<i32> k, Value<f16, 2> acc) {
          return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
        });
        descriptor_store(c, {m, n}, (acc.to<f32>() * 2.0f).to<f16>());
      },
      Config{{"BM", 64}, {"BN", 64}, {"BK", 64}}.num_warps(4).num_stages(2));
  add("gemm_tf32_nn", "a tf32 K loop with b loaded [K, N]: the threads copy b K-major for wgmma, two copies in flight",
      [](Tensor<f32, 2> a, Tensor<f32, 2> b, Tensor<f32, 2> c, Scalar<i32> K, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
        auto m = program_id(0) * BM, n = program_id(1) * BN;
        auto acc = for_range(0, K, BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
          return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
        });
        descriptor_store(c, {m, n}, acc);
      },
      Config{{"BM", 64}, {"BN", 64}, {"BK", 32}}.num_warps(4).num_stages(2));
  add("dot_e4m3_mn_major", "one fp8 dot with a loaded [K, M] and used through .trans(): a copied K-major, no pipeline",
      [](Tensor<f8e4m3, 2> a, Tensor<f8e4m3, 2> b, Tensor<f32, 2> c) {
        auto ta = descriptor_load(a, {0, 0}, {64, 64}).trans();
        descriptor_store(c, {0, 0}, dot(ta, descriptor_load(b, {0, 0}, {64, 64}).trans(), zeros<f32>({64, 64})));
      },
      Config{});
  // The samples' attention kernel (bench/bench_attention): two products per iteration, K and V tiles in a ring.
  cases.push_back(EmitCase{"attention_loop", "attention's inner loop (samples::attention_kernel), two stages",
                           Config{{"BM", 64}, {"BN", 64}, {"D", 64}}.num_warps(4).num_stages(2), traced(tilejit::samples::attention_kernel()), {}});
  cases.push_back(EmitCase{"attention_bhsd", "the same loop over [heads, S, D] tensors, {1, BM, D} tiles reshaped (samples::attention_bhsd_kernel)",
                           Config{{"BM", 64}, {"BN", 64}, {"D", 64}}.num_warps(4).num_stages(2), traced(tilejit::samples::attention_bhsd_kernel()), {}});
  cases.push_back(EmitCase{"attention_overlap",
                           "attention's loop with overlap_products: P V of the previous block issued after S, two stages",
                           Config{{"BM", 64}, {"BN", 64}, {"D", 64}}.num_warps(4).num_stages(2).overlap_products(),
                           traced(tilejit::samples::attention_kernel()), {}});
  cases.push_back(EmitCase{"attention_pingpong",
                           "attention's overlapped loop, 128 x 128 blocks on two consumer warpgroups that take turns at the tensor cores",
                           Config{{"BM", 128}, {"BN", 128}, {"D", 64}}.num_warps(8).num_stages(2).overlap_products().pingpong(),
                           traced(tilejit::samples::attention_kernel()), {}});
  cases.push_back(EmitCase{"attention_d128_roles",
                           "attention's loop at D = 128, 128 x 128 blocks, roles: tilejit's choice of overlap and turns",
                           Config{{"BM", 128}, {"BN", 128}, {"D", 128}}.num_warps(8).num_stages(2).warp_specialize(),
                           traced(tilejit::samples::attention_kernel()), {}});
  cases.push_back(EmitCase{"attention_causal_warp_roles",
                           "sample 12's causal attention: two loops sharing one ring, filled by one producer warpgroup, 2 stages",
                           Config{{"BM", 64}, {"BN", 64}, {"D", 64}, {"CAUSAL", 1}}.num_warps(4).num_stages(2).warp_specialize(),
                           traced(tilejit::samples::attention_forward_kernel()), {}});
  cases.push_back(EmitCase{"jagged_hstu_warp_roles",
                           "sample 13's causal jagged HSTU with a producer warpgroup: the consumers build the views' "
                           "descriptors, the producer awaits them",
                           Config{{"BM", 128}, {"BN", 128}, {"D", 128}, {"CAUSAL", 1}, {"BIAS", 0}}.num_warps(8).num_stages(2).warp_specialize(),
                           traced(tilejit::samples::jagged_hstu_kernel()), {}});
  cases.push_back(EmitCase{"jagged_hstu_bias",
                           "sample 13's jagged HSTU with the relative attention bias (a gathered pointer load of the table "
                           "per score), 128 x 64 blocks, 3 stages, a producer warpgroup",
                           Config{{"BM", 128}, {"BN", 64}, {"D", 128}, {"CAUSAL", 0}, {"BIAS", 1}}.num_warps(8).num_stages(3).warp_specialize(),
                           traced(tilejit::samples::jagged_hstu_kernel()), {}});
  cases.push_back(EmitCase{"jagged_hstu_bias_lean_producer",
                           "sample 13's jagged HSTU with the relative bias, 128 x 128 blocks on two consumer warpgroups, the "
                           "producer keeping 24 registers (Config::producer_registers) so that the consumers get 240",
                           Config{{"BM", 128}, {"BN", 128}, {"D", 128}, {"CAUSAL", 0}, {"BIAS", 1}}
                               .num_warps(8)
                               .num_stages(2)
                               .warp_specialize()
                               .producer_registers(24),
                           traced(tilejit::samples::jagged_hstu_kernel()), {}});
  cases.push_back(EmitCase{"jagged_hstu_fast",
                           "sample 13's jagged HSTU with Accuracy::fast: the silu's sigmoid through the hardware's tanh, "
                           "64 x 64 blocks, 3 stages, a producer warpgroup, two programs per SM",
                           Config{{"BM", 64}, {"BN", 64}, {"D", 128}, {"CAUSAL", 0}, {"BIAS", 0}}
                               .num_warps(4)
                               .num_stages(3)
                               .warp_specialize()
                               .programs_per_sm(2),
                           traced(tilejit::samples::jagged_hstu_kernel(tilejit::dsl::Accuracy::fast)), {}});
  cases.push_back(EmitCase{"persistent_gemm",
                           "a tile loop around a pipelined K loop (samples::persistent_matmul_kernel), 3 stages, no warp roles",
                           Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3).warp_specialize(false),
                           traced(tilejit::samples::persistent_matmul_kernel()), {}});
  cases.push_back(EmitCase{"persistent_gemm_warp_roles",
                           "the persistent GEMM with a producer warpgroup that runs the tile loop too (warp_specialize), 3 stages",
                           Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3).warp_specialize(),
                           traced(tilejit::samples::persistent_matmul_kernel()), {}});
  cases.push_back(EmitCase{"swiglu_two_products", "SwiGLU with two dots reading one x tile per K step, both kept in flight",
                           Config{{"BM", 128}, {"BN", 64}, {"BK", 64}}.num_warps(8).num_stages(3),
                           traced(tilejit::samples::swiglu_two_products_kernel()), {}});
  cases.push_back(EmitCase{"block_scaled_gemm", "a K loop with a TMA scale tile and a pointer load that feed no dot, 3 stages",
                           Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3),
                           traced(tilejit::samples::block_scaled_matmul_kernel()), {}});
  cases.push_back(EmitCase{"softmax_online", "the online softmax over blocks of 4096 (samples::softmax_online_kernel), 8 warps",
                           Config{{"BN", 4096}}.num_warps(8).num_stages(0), traced(tilejit::samples::softmax_online_kernel()), {}});
  cases.push_back(EmitCase{"softmax_online_evict",
                           "the online softmax with cache hints (samples::softmax_online_evict_kernel): the first read kept "
                           "in L2, the second read and the store evicted first",
                           Config{{"BN", 4096}}.num_warps(8).num_stages(0), traced(tilejit::samples::softmax_online_evict_kernel()), {}});
  cases.push_back(EmitCase{"cross_entropy_grad",
                           "the fused cross-entropy loss and gradient (samples::cross_entropy_grad_kernel) over bf16 logits, "
                           "blocks of 4096, 8 warps",
                           Config{{"BN", 4096}}.num_warps(8).num_stages(0), traced(tilejit::samples::cross_entropy_grad_kernel()), {}});
  cases.push_back(EmitCase{"moe_grouped_gemm",
                           "sample 11's grouped GEMM: a K loop inside an if, the store's view made after the loop (moved before it)",
                           Config{{"BM", 128}, {"BN", 256}, {"BK", 64}, {"GM", 8}}.num_warps(8).num_stages(4),
                           traced(tilejit::samples::moe_grouped_matmul_kernel()), {}});
  cases.push_back(EmitCase{"moe_grouped_gemm_warp_roles",
                           "sample 11's grouped GEMM with warp roles asked for: the producer takes the if around the K loop too",
                           Config{{"BM", 128}, {"BN", 256}, {"BK", 64}, {"GM", 8}}.num_warps(8).num_stages(4).warp_specialize(),
                           traced(tilejit::samples::moe_grouped_matmul_kernel()), {}});
  cases.push_back(EmitCase{"moe_tile_schedule", "sample 11's tile schedule: prefix sums as reductions over [EP, EP] blocks",
                           Config{{"BM", 128}, {"EP", 64}, {"BJ", 64}}, traced(tilejit::samples::moe_tile_schedule_kernel()), {}});
  cases.push_back(EmitCase{"swiglu_fused", "one product split into gate and up halves by reshape, where and sum",
                           Config{{"BM", 128}, {"BN", 64}, {"BK", 64}}.num_warps(8).num_stages(3), traced(tilejit::samples::swiglu_kernel()), {}});
  const auto bench_gemm = [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 2> c, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc.to<bf16>());
  };
  add("gemm_bf16", "the benchmark GEMM: bf16 in and out, K from the tensor, 128 x 256 tiles on two warpgroups", bench_gemm,
      Config{{"BM", 128}, {"BN", 256}, {"BK", 64}}.num_warps(8).num_stages(3));
  add("gemm_warp_roles", "the benchmark GEMM with a producer warpgroup (warp_specialize), 4 stages", bench_gemm,
      Config{{"BM", 128}, {"BN", 256}, {"BK", 64}}.num_warps(8).num_stages(4).warp_specialize());
  add("gemm_persistent", "the benchmark GEMM made persistent by its configuration: a loop over the grid's tiles in groups of 8 row blocks, with roles",
      bench_gemm, Config{{"BM", 128}, {"BN", 256}, {"BK", 64}}.num_warps(8).num_stages(3).warp_specialize().persistent().tile_group(8));
  add("gemm_persistent_inline", "the persistent GEMM left to tilejit (no producer warpgroup): the K loop and the wait after it skipped together when K is 0",
      bench_gemm, Config{{"BM", 128}, {"BN", 256}, {"BK", 64}}.num_warps(8).num_stages(3).persistent());
  add("gemm_m16", "the benchmark GEMM with 16-row tiles (a decode step's tokens): one m64 wgmma per k-step, rows 16-63 padding",
      bench_gemm, Config{{"BM", 16}, {"BN", 128}, {"BK", 64}}.num_warps(4).num_stages(6));
  add("gemm_m32_two_warpgroups", "32-row tiles over two warpgroups, which split N (m64n64 each, rows 32-63 padding), 4 stages",
      bench_gemm, Config{{"BM", 32}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(4));
  add("gemm_cluster", "the benchmark GEMM in clusters of 2 x 1: B's tile multicast when both programs load it, 128 x 128 tiles",
      bench_gemm, Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_stages(4).cluster(2, 1));
  add("gemm_cluster_warp_roles", "the clustered GEMM with a producer warpgroup, which exchanges the keys and issues the multicast",
      bench_gemm, Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_stages(4).cluster(2, 1).warp_specialize());
  add("gemm_bias_gelu", "a wgmma GEMM whose epilogue (bias row, GELU, cast) runs on the accumulator fragment",
      [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 1> bias, Tensor<bf16, 2> c, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
        auto m = program_id(0) * BM, n = program_id(1) * BN;
        auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
          return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
        });
        auto x = acc + descriptor_load(bias, {n}, {BN}).to<f32>().expand_dims<0>();
        descriptor_store(c, {m, n}, (x * 0.5f * (erf(x * 0.70710678f) + 1.0f)).to<bf16>());
      },
      Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3));
  add("dot_register_a", "P = (Q @ K^T) as bf16, then P @ V with P read from registers (attention's two products)",
      [](Tensor<bf16, 2> q, Tensor<bf16, 2> k, Tensor<bf16, 2> v, Tensor<f32, 2> o, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"D"> D) {
        auto m = program_id(0) * BM;
        auto s = dot(descriptor_load(q, {m, 0}, {BM, D}), descriptor_load(k, {0, 0}, {BN, D}).trans(), zeros<f32>({BM, BN}));
        auto p = s.to<bf16>();
        descriptor_store(o, {m, 0}, dot(p, descriptor_load(v, {0, 0}, {BN, D}), zeros<f32>({BM, D})));
      },
      Config{{"BM", 128}, {"BN", 64}, {"D", 64}}.num_warps(8).num_stages(2));
  add("swap_loop", "loop-carried values swapped each iteration (parallel assignment)",
      [](Tensor<f32, 1> y, Scalar<i32> n) {
        auto [a, b] = for_range(0, n, 1, std::tuple{zeros<f32>({128}), full<f32>({128}, 1.0f)},
                                [&](Scalar<i32>, Value<f32, 1> p, Value<f32, 1> q) { return std::tuple{q, p}; });
        descriptor_store(y, {0}, a - b);
      },
      Config{});

  // ---- block operations ------------------------------------------------------------------------------
  add("softmax_rows", "row softmax: max, exp, sum, broadcasts",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto t = descriptor_load(x, {program_id(0) * 16, 0}, {16, 128}, {}, Fill::nan);
        auto m = max(t, 1).expand_dims<1>();
        auto e = exp(t - m);
        auto s = sum(e, 1).expand_dims<1>();
        descriptor_store(y, {program_id(0) * 16, 0}, e / s);
      },
      Config{});
  add("argmax_rows", "argmax along rows (i32 result)",
      [](Tensor<f32, 2> x, Tensor<i32, 1> y) {
        auto t = descriptor_load(x, {program_id(0) * 64, 0}, {64, 32});
        descriptor_store(y, {program_id(0) * 64}, argmax(t, 1));
      },
      Config{});
  add("reduce_combine", "a reduction of two values with a combine function (argmin with ties to the smaller column)",
      [](Tensor<f32, 2> x, Tensor<f32, 1> y, Tensor<i32, 1> yi) {
        auto t = descriptor_load(x, {program_id(0) * 8, 0}, {8, 256});
        auto cols = arange(0, 256).expand_dims<0>().broadcast_to({8, 256});
        auto [v, c] = reduce(std::tuple{t, cols}, 1, [](Scalar<f32> a, Scalar<i32> ai, Scalar<f32> b, Scalar<i32> bi) {
          auto take = b < a || (b == a && bi < ai);
          return std::tuple{where(take, b, a), where(take, bi, ai)};
        });
        descriptor_store(y, {program_id(0) * 8}, v);
        descriptor_store(yi, {program_id(0) * 8}, c);
      },
      Config{}.num_warps(8));
  add("reduce_combine_padded", "a combine reduction over a padded layout (33 columns): partials carry a flag",
      [](Tensor<f32, 1> x, Tensor<i32, 1> y) {
        auto offs = arange(0, 5 * 33).reshape({5, 33});
        auto [best, at] = reduce(std::tuple{load(x, offs), offs % 33}, 1, [](Scalar<f32> a, Scalar<i32> ai, Scalar<f32> b, Scalar<i32> bi) {
          auto take = b < a || (b == a && bi < ai);
          return std::tuple{where(take, b, a), where(take, bi, ai)};
        });
        store(y, arange(0, 5), at);
        (void)best;
      },
      Config{}.num_warps(4));
  add("reduce_axis0_scalar", "reductions over axis 0 and down to a scalar",
      [](Tensor<f32, 2> x, Tensor<f32, 1> y, Tensor<f32, 1> total) {
        auto t = descriptor_load(x, {0, program_id(0) * 64}, {32, 64});
        auto col = min(t, 0);
        descriptor_store(y, {program_id(0) * 64}, col);
        auto s = sum(col, 0);
        store(total, program_id(0), s);
      },
      Config{});
  add("permute_3d", "permute of a 3-D block through shared memory",
      [](Tensor<f32, 3> x, Tensor<f32, 3> y) {
        auto t = descriptor_load(x, {0, 0, 0}, {4, 8, 16});
        auto p = (t * 2.0f).permute({2, 0, 1});
        descriptor_store(y, {0, 0, 0}, p.permute({0, 2, 1}));
      },
      Config{});
  add("broadcast_outer", "outer product by broadcasting a row and a column",
      [](Tensor<f32, 2> y) {
        auto r = arange(0, 64).to<f32>();
        auto c = arange(0, 32).to<f32>();
        auto o = c.expand_dims<1>() * r.expand_dims<0>();
        descriptor_store(y, {program_id(0) * 32, 0}, o);
      },
      Config{});
  add("reshape_free", "reshape and expand_dims keep every element in its registers",
      [](Tensor<bf16, 2> x, Tensor<f32, 2> y) {
        auto t = descriptor_load(x, {0, 0}, {16, 64});
        auto f = t.to<f32>().reshape({32, 32});
        descriptor_store(y, {0, 0}, f + f);
      },
      Config{});
  add("dot_int8", "integer dot (i8 x i8 -> i32)",
      [](Tensor<i8, 2> a, Tensor<i8, 2> b, Tensor<i32, 2> c) {
        // 20 rows (not a multiple of 8): on CUDA cores, where the wrapping arithmetic is written out.
        auto ta = descriptor_load(a, {0, 0}, {20, 32});
        auto tb = descriptor_load(b, {0, 0}, {32, 32});
        descriptor_store(c, {0, 0}, dot(ta, tb, zeros<i32>({20, 32})));
      },
      Config{});

  add("edge_shapes", "one-element blocks, odd extents, dot with a one-element operand",
      [](Tensor<f32, 2> x, Tensor<f32, 1> y, Tensor<f32, 2> z) {
        auto a = descriptor_load(x, {0, 0}, {1, 4});
        auto b = descriptor_load(x, {0, 0}, {4, 4});
        auto r = sum(a, 1);
        auto d = dot(a.reshape({4, 1}).permute({1, 0}), b, zeros<f32>({1, 4}));
        auto e = dot(r.reshape({1, 1}), a, zeros<f32>({1, 4}));
        descriptor_store(z, {0, 0}, d * e);  // a product: d + e would fold d into e's accumulator
        store(y, program_id(0), sum(sum(b, 1), 0));
        auto odd = arange(0, 3).to<f32>();
        store(y, arange(0, 3), max(odd.expand_dims<0>().broadcast_to({5, 3}), 0));
      },
      Config{});

  // ---- pointer-style memory ----------------------------------------------------------------------------
  add("pointer_masked", "masked pointer loads and stores with arange offsets",
      [](Tensor<f32, 1> x, Tensor<f32, 1> y, Scalar<i32> n) {
        auto offs = program_id(0) * 256 + arange(0, 256);
        auto mask = offs < n;
        auto v = load(x, offs, mask, -1.0f);
        store(y, offs, v * v, mask);
      },
      Config{});
  {
    // The Triton tutorial's softmax over a row of 4096 with 4 warps, in the variant for aligned tensors
    // (the default) and in the one a launch with a misaligned tensor compiles.
    auto softmax = [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BN"> BN) {
      auto row = program_id(0).to<i64>();
      auto cols = arange(0, BN);
      auto mask = cols < x.size(1);
      auto v = load(x, row * x.stride(0) + cols, mask, -1e30f);
      auto e = exp(v - max(v, 0));
      store(y, row * y.stride(0) + cols, e / sum(e, 0), mask);
    };
    add("softmax_pointer", "row softmax with masked 16-byte pointer loads", softmax, Config{{"BN", 4096}});
    codegen::Options unaligned;
    unaligned.spec.tensors = {0, 0, 0};  // nothing known about either tensor
    add("softmax_unaligned", "row softmax for tensors of unknown alignment", softmax, Config{{"BN", 4096}}, unaligned);
  }
  add("load_bf16_as_f32", "masked bf16 pointer loads whose only use is .to<f32>(): two elements per 32-bit word",
      [](Tensor<bf16, 2> x, Tensor<bf16, 2> w, Tensor<f32, 1> y, Meta<"BN"> BN) {
        auto row = program_id(0).to<i64>();
        auto cols = arange(0, BN);
        auto mask = cols < x.size(1);
        auto v = load(x, row * x.stride(0) + cols, mask, -1.0f).to<f32>();   // fused: one fill for every vector
        auto raw = load(w, cols, mask);                                     // also read as bf16: not fused
        store(y, row, sum(v * raw.to<f32>(), 0) + max(raw, 0).to<f32>());
      },
      Config{{"BN", 1024}});
  add("softmax_tma_row", "a 1 x 4096 TMA box, split into 16 operations of 256 (load and store)",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto t = descriptor_load(x, {program_id(0), 0}, {1, 4096});
        auto e = exp(t - max(t, 1).expand_dims<1>());
        descriptor_store(y, {program_id(0), 0}, e / sum(e, 1).expand_dims<1>());
      },
      Config{}.num_warps(8));
  add("pointer_2d", "2-D pointer offsets from strides",
      [](Tensor<f16, 2> x, Tensor<f16, 2> y) {
        auto r = arange(0, 16).expand_dims<1>();
        auto c = arange(0, 32).expand_dims<0>();
        auto offs = r.to<i64>() * x.stride(0) + c.to<i64>();
        store(y, offs, load(x, offs) + load(x, offs));
      },
      Config{});
  add("atomic_add", "atomic adds of f32, bf16 and i64 values",
      [](Tensor<f32, 1> a, Tensor<bf16, 1> b, Tensor<i64, 1> c) {
        auto offs = arange(0, 128);
        atomic_add(a, offs, full<f32>({128}, 1.0f));
        atomic_add(b, offs % 7, full<bf16>({128}, 0.5f));
        atomic_add(c, program_id(0), Scalar<i64>(int64_t{1}));
      },
      Config{});

  add("evict_hints", "cache hints (Evict) on pointer loads and stores: vectors, gathers and scatters of f32, i32, bf16, u8, i1",
      [](Tensor<f32, 1> x, Tensor<i32, 1> idx, Tensor<bf16, 1> table, Tensor<u8, 1> flags, Tensor<i1, 1> keep,
         Tensor<f32, 1> y, Tensor<bf16, 1> out, Tensor<i1, 1> kept) {
        auto offs = arange(0, 512);
        auto mask = offs < x.size(0).to<i32>();
        auto i = load(idx, offs, Evict::first);                       // i32 vectors
        auto t = load(table, i, Evict::last).to<f32>();               // a bf16 gather
        auto f = load(flags, i, mask, 7, Evict::first).to<f32>();     // a masked u8 gather
        auto k = load(keep, i, Evict::last);                          // an i1 gather
        auto v = load(x, offs, mask, 0.0f, Evict::last);              // masked f32 vectors
        store(y, offs, where(k, v + t + f, 0.0f), mask, Evict::first);  // masked f32 vectors
        store(out, i, t.to<bf16>(), Evict::last);                      // a bf16 scatter
        store(kept, i, k, Evict::first);                               // an i1 scatter
      },
      Config{}.num_warps(4));

  // ---- arithmetic ------------------------------------------------------------------------------------------
  add("casts", "conversions between every element type",
      [](Tensor<f32, 2> x, Tensor<i8, 2> o1, Tensor<u8, 2> o2, Tensor<i64, 2> o3, Tensor<f16, 2> o4,
         Tensor<f8e4m3, 2> o5, Tensor<f8e5m2, 2> o6, Tensor<f64, 2> o7, Tensor<i1, 2> o8, Tensor<bf16, 2> o9) {
        auto t = descriptor_load(x, {0, 0}, {16, 16});
        descriptor_store(o1, {0, 0}, t.to<i8>());
        descriptor_store(o2, {0, 0}, t.to<u8>());
        descriptor_store(o3, {0, 0}, t.to<i64>());
        descriptor_store(o4, {0, 0}, t.to<f16>());
        descriptor_store(o5, {0, 0}, t.to<f8e4m3>());
        descriptor_store(o6, {0, 0}, t.to<f64>().to<f8e5m2>());
        descriptor_store(o7, {0, 0}, t.to<i32>().to<f64>());
        descriptor_store(o8, {0, 0}, t > 0.0f);
        descriptor_store(o9, {0, 0}, t.to<i64>().to<bf16>());
      },
      Config{});
  add("int_to_narrow", "integers and bools to f16 / bf16 / fp8 through f32 rounded to odd, never through f64",
      [](Tensor<i32, 2> x, Tensor<i64, 2> xl, Tensor<f16, 2> o1, Tensor<bf16, 2> o2, Tensor<f8e5m2, 2> o3,
         Tensor<f8e4m3, 2> o4, Tensor<bf16, 2> o5) {
        auto t = descriptor_load(x, {0, 0}, {16, 32});
        descriptor_store(o1, {0, 0}, t.to<f16>());
        descriptor_store(o2, {0, 0}, t.to<bf16>());
        descriptor_store(o3, {0, 0}, (t < 0).to<f8e5m2>());
        descriptor_store(o4, {0, 0}, t.to<i8>().to<f8e4m3>());
        descriptor_store(o5, {0, 0}, descriptor_load(xl, {0, 0}, {16, 32}).to<bf16>());
      },
      Config{}.num_warps(2));
  add("loop_vector_loads", "pointer loads indexed by a loop over column blocks move 16-byte vectors",
      [](Tensor<f32, 2> x, Tensor<f32, 1> y) {
        auto cols = arange(0, 512);
        auto n = x.size(1).to<i32>();
        Scalar<f32> s0 = 0.0f;
        auto s = for_range(0, n, 512, s0, [&](Scalar<i32> k, Scalar<f32> s) {
          auto c = k + cols;
          return s + sum(load(x, program_id(0).to<i64>() * x.stride(0) + c, c < n), 0);
        });
        store(y, program_id(0), s);
      },
      Config{});
  add("int_wrap", "i32 arithmetic wraps; division and remainder",
      [](Tensor<i32, 1> x, Tensor<i32, 1> y) {
        auto t = descriptor_load(x, {0}, {256});
        auto u = (t * 1664525 + 1013904223) / (t % 7 + 1) - (-t);
        descriptor_store(y, {0}, abs(u) ^ (u & 255));
      },
      Config{});
  add("minmax_nan", "minimum / maximum of floats propagate NaN",
      [](Tensor<f32, 2> x, Tensor<bf16, 2> y) {
        auto t = descriptor_load(x, {0, 0}, {32, 32});
        auto m = maximum(minimum(t, 6.0f), 0.0f);
        descriptor_store(y, {0, 0}, m.to<bf16>());
      },
      Config{});
  add("math_unary", "transcendental functions in f32 and bf16, tanh and sigmoid also with Accuracy::fast",
      [](Tensor<f32, 1> x, Tensor<bf16, 1> y) {
        auto t = descriptor_load(x, {0}, {128});
        auto a = exp(t) + exp2(t) + log(abs(t)) + log2(abs(t) + 1.0f) + sqrt(abs(t)) + rsqrt(abs(t) + 1.0f);
        auto b = sin(t) + cos(t) + tanh(t) + sigmoid(t) + erf(t) + tanh(t, Accuracy::fast) * sigmoid(t, Accuracy::fast);
        auto h = (a - b).to<bf16>();
        descriptor_store(y, {0}, exp(h) + sigmoid(h) + sigmoid(h, Accuracy::fast));
      },
      Config{});
  add("f64_math", "f64 arithmetic and math",
      [](Tensor<f64, 1> x, Tensor<f64, 1> y) {
        auto t = descriptor_load(x, {0}, {64});
        descriptor_store(y, {0}, sqrt(t * t + 1.0) / (exp(t) * 2.0) - maximum(t, 0.5));
      },
      Config{});
  add("fma_contract", "products and sums contracted into fma (Config::fp_contract), and fma() written out",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto t = descriptor_load(x, {0, 0}, {32, 32});
        auto m = max(t, 1) * 0.5f;                                        // the row maximum, scaled once
        auto u = t * 0.5f - m.expand_dims<1>();                           // fma(t, 0.5, -m), m negated per row
        auto w = t * t;                                                   // two users: not contracted
        descriptor_store(y, {0, 0}, exp2(u) + w * fma(w, 2.0f, 1.0f));   // the last sum takes w * fma(..)
      },
      Config{});
  add("fma_no_contract", "a kernel like it with fp_contract(false): every product and sum rounded on its own",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto t = descriptor_load(x, {0, 0}, {32, 32});
        auto m = max(t, 1) * 0.5f;
        auto u = t * 0.5f - m.expand_dims<1>();
        descriptor_store(y, {0, 0}, exp2(u) + fma(t, 2.0f, 1.0f));
      },
      Config{}.fp_contract(false));
  const auto neg_literal = [](Tensor<f64, 1> x, Tensor<f64, 1> y) {
    auto t = descriptor_load(x, {0}, {64});
    auto v0 = full<f64>({64}, -0.75);
    descriptor_store(y, {0}, (v0 - v0 * -1.25) + t + -Scalar<f64>(-0.5));
  };
  add("neg_literal", "negated negative literals (random-program seed 3479: `--0.75` was a decrement)", neg_literal,
      Config{}.fp_contract(false));
  add("neg_literal_contracted", "the same kernel contracted: c - a * b as fma(-a, b, c), -a a constant", neg_literal,
      Config{});
  add("where_select", "where with a comparison mask and bool logic",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto t = descriptor_load(x, {0, 0}, {32, 32});
        auto keep = (t > 0.0f) && !(t > 10.0f);
        descriptor_store(y, {0, 0}, where(keep, t, 0.0f));
      },
      Config{});
  add("scalar_params", "scalar parameters of every width, passed by value",
      [](Tensor<f32, 1> y, Scalar<i1> flag, Scalar<i8> a, Scalar<f16> h, Scalar<bf16> b, Scalar<i64> big,
         Scalar<double> d) {
        auto v = where(flag, a.to<f32>() + h.to<f32>(), b.to<f32>() + big.to<f32>()) + d.to<f32>();
        descriptor_store(y, {0}, full<f32>({64}, v));
      },
      Config{});
  add("tensor_size_stride", "tensor sizes and strides as kernel parameters",
      [](Tensor<f32, 3> x, Tensor<i64, 1> y) {
        auto s = x.size(0) * x.size(2) + x.stride(1);
        auto mv = x.merge({2, 1});
        store(y, program_id(0), s + mv.size(0) + mv.stride(0));
      },
      Config{});

  // ---- control flow -----------------------------------------------------------------------------------
  add("if_else_values", "if_else producing a block and a scalar",
      [](Tensor<f32, 1> x, Tensor<f32, 1> y, Scalar<i32> mode) {
        auto t = descriptor_load(x, {0}, {128});
        auto [v, s] = if_else(
            mode > 0, [&] { return std::tuple{t * 2.0f, Scalar<f32>(1.0f)}; },
            [&] { return std::tuple{t + 1.0f, Scalar<f32>(2.0f)}; });
        descriptor_store(y, {0}, v * s);
      },
      Config{});
  add("if_then_store", "a TMA store under a condition",
      [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<i32> limit) {
        auto t = descriptor_load(x, {program_id(0) * 32, 0}, {32, 32});
        if_then(program_id(0) < limit, [&] { descriptor_store(y, {program_id(0) * 32, 0}, t); });
      },
      Config{});
  add("fp8_copy", "fp8 tiles move as bytes (elemtype u8)",
      [](Tensor<f8e4m3, 2> x, Tensor<f8e4m3, 2> y, Tensor<f32, 2> z) {
        auto t = descriptor_load(x, {program_id(0) * 64, 0}, {64, 64});
        descriptor_store(y, {program_id(0) * 64, 0}, t);
        descriptor_store(z, {program_id(0) * 64, 0}, t.to<f32>());
      },
      Config{});
  add("i64_tiles", "64-bit integer tiles on a device-built descriptor",
      [](Tensor<i64, 2> x, Tensor<i64, 2> y) {
        auto v = x.with_placement(Placement::device);
        auto t = descriptor_load(v, {program_id(0) * 16, 0}, {16, 16});
        descriptor_store(y.with_placement(Placement::device), {program_id(0) * 16, 0}, t + t);
      },
      Config{}.num_warps(8).num_stages(3));
  return cases;
}

}  // namespace

const std::vector<EmitCase>& emit_cases() {
  static const std::vector<EmitCase> cases = make_cases();
  return cases;
}

const EmitCase* find_emit_case(std::string_view name) {
  for (const auto& c : emit_cases())
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace tilejit::testing
