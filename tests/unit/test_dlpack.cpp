// DLPack interop (tilejit/dlpack.h): DLTensors built by hand on the CPU, every accepted form and every refusal.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tilejit/dlpack.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
using tilejit::DLPackDevice;
using tilejit::DLPackOptions;
using tilejit::from_dlpack;
using tilejit::UserError;

namespace {

// The 1.x managed tensor, spelled by hand where the installed dlpack.h predates it (Debian's 0.6).
#ifdef DLPACK_MAJOR_VERSION
using Versioned = DLManagedTensorVersioned;
#else
struct Versioned {
  struct {
    uint32_t major, minor;
  } version;
  void* manager_ctx;
  void (*deleter)(Versioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};
#endif

// Storage for hand-built tensors: 16-byte aligned, so that byte offsets choose the alignment.
alignas(256) unsigned char g_memory[4096];

struct Built {
  std::vector<int64_t> shape, strides;
  DLTensor t{};
  Built(std::vector<int64_t> sh, std::vector<int64_t> st, uint8_t code, uint8_t bits, int32_t device = 1)
      : shape(std::move(sh)), strides(std::move(st)) {
    t.data = g_memory;
    t.device.device_type = static_cast<DLDeviceType>(device);
    t.device.device_id = 0;
    t.ndim = static_cast<int>(shape.size());
    t.dtype.code = code;
    t.dtype.bits = bits;
    t.dtype.lanes = 1;
    t.shape = shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    t.byte_offset = 0;
  }
};

const DLPackOptions host{.device = DLPackDevice::host};

// The message of the UserError `f` throws; fails the test case when it throws none.
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    CHECK(std::string(e.file()).find("test_dlpack.cpp") != std::string::npos);  // the caller's line
    return e.what();
  }
  FAIL("no UserError");
  return {};
}

bool has(const std::string& s, const std::string& part) {
  if (s.find(part) != std::string::npos) return true;
  MESSAGE("'" << part << "' not in: " << s);
  return false;
}

}  // namespace

TEST_CASE("dlpack: a row-major tensor with null strides") {
  Built b({4, 8}, {}, kDLFloat, 32);
  const auto v = from_dlpack<f32, 2>(b.t, "x", host);
  CHECK(v.data() == g_memory);
  CHECK(v.sizes() == std::array<int64_t, 2>{4, 8});
  CHECK(v.strides() == std::array<int64_t, 2>{8, 1});
}

TEST_CASE("dlpack: explicit strides (padded rows, a slice) and a byte offset") {
  Built b({4, 12}, {16, 1}, kDLFloat, 32);
  b.t.byte_offset = 64;  // starts 16 floats in: still 16-byte aligned
  const auto v = from_dlpack<f32, 2>(b.t, "x", host);
  CHECK(v.data() == g_memory + 64);
  CHECK(v.strides() == std::array<int64_t, 2>{16, 1});
  // Zero strides (a broadcast) are addressable with pointer loads.
  Built z({4, 8}, {0, 1}, kDLFloat, 32);
  CHECK(from_dlpack<f32, 2>(z.t, "z", {.device = DLPackDevice::host, .tma = false}).strides()[0] == 0);
}

TEST_CASE("dlpack: every element type's code, bits and lanes") {
  CHECK_NOTHROW(from_dlpack<bf16, 1>(Built({8}, {}, kDLBfloat, 16).t, "x", host));
  CHECK_NOTHROW(from_dlpack<f16, 1>(Built({8}, {}, kDLFloat, 16).t, "x", host));
  CHECK_NOTHROW(from_dlpack<f64, 1>(Built({8}, {}, kDLFloat, 64).t, "x", host));
  CHECK_NOTHROW(from_dlpack<f8e4m3, 1>(Built({16}, {}, 10, 8).t, "x", host));  // kDLFloat8_e4m3fn
  CHECK_NOTHROW(from_dlpack<f8e5m2, 1>(Built({16}, {}, 12, 8).t, "x", host));  // kDLFloat8_e5m2
  CHECK_NOTHROW(from_dlpack<i1, 1>(Built({16}, {}, 6, 8).t, "x", host));       // kDLBool
  CHECK_NOTHROW(from_dlpack<i8, 1>(Built({16}, {}, kDLInt, 8).t, "x", host));
  CHECK_NOTHROW(from_dlpack<u8, 1>(Built({16}, {}, kDLUInt, 8).t, "x", host));
  CHECK_NOTHROW(from_dlpack<i32, 1>(Built({4}, {}, kDLInt, 32).t, "x", host));
  CHECK_NOTHROW(from_dlpack<i64, 1>(Built({2}, {}, kDLInt, 64).t, "x", host));
}

TEST_CASE("dlpack: devices") {
  Built gpu({4, 8}, {}, kDLFloat, 32, kDLCUDA);
  CHECK_NOTHROW(from_dlpack<f32, 2>(gpu.t, "x"));  // the default: kernel.launch
  Built managed({4, 8}, {}, kDLFloat, 32, kDLCUDAManaged);
  CHECK_NOTHROW(from_dlpack<f32, 2>(managed.t, "x"));
  CHECK_NOTHROW(from_dlpack<f32, 2>(managed.t, "x", host));
  Built pinned({4, 8}, {}, kDLFloat, 32, kDLCUDAHost);
  CHECK_NOTHROW(from_dlpack<f32, 2>(pinned.t, "x", host));
}

TEST_CASE("dlpack: managed tensors, legacy and versioned, by reference and by pointer") {
  DLManagedTensor legacy{};
  legacy.dl_tensor = Built({4, 8}, {}, kDLFloat, 32).t;
  static int64_t shape[2] = {4, 8};
  legacy.dl_tensor.shape = shape;
  legacy.dl_tensor.strides = nullptr;
  CHECK(from_dlpack<f32, 2>(legacy, "x", host).sizes()[1] == 8);
  CHECK(from_dlpack<f32, 2>(&legacy, "x", host).sizes()[1] == 8);

  Versioned m{};
  m.version.major = 1;
  m.version.minor = 1;
  m.dl_tensor = legacy.dl_tensor;
  CHECK(from_dlpack<f32, 2>(m, "x", host).sizes()[0] == 4);
  m.flags = 1;  // read-only: accepted for a tensor the kernel only reads
  CHECK_NOTHROW(from_dlpack<f32, 2>(&m, "x", {.device = DLPackDevice::host, .read_only = true}));
}

TEST_CASE("dlpack: a TensorArrayView of several tensors") {
  Built a({4, 8}, {}, kDLFloat, 32), b({2, 4}, {}, kDLFloat, 32);
  std::vector<const DLTensor*> ts = {&a.t, &b.t};
  const auto arr = tilejit::from_dlpack_array<f32, 2>(ts, "levels", host);
  REQUIRE(arr.tensors.size() == 2);
  CHECK(arr.tensors[1].sizes() == std::array<int64_t, 2>{2, 4});
  b.t.dtype.bits = 16;
  CHECK(has(refusal([&] { (void)tilejit::from_dlpack_array<f32, 2>(ts, "levels", host); }), "'levels[1]': dtype"));
}

TEST_CASE("dlpack: refusals name the tensor, the field, its value and what tilejit needs") {
  SUBCASE("device type") {
    Built cpu({4, 8}, {}, kDLFloat, 32);
    auto m = refusal([&] { (void)from_dlpack<f32, 2>(cpu.t, "query"); });
    CHECK(has(m, "DLPack tensor 'query': device.device_type"));
    CHECK(has(m, "kDLCPU (1)"));
    CHECK(has(m, "limit: kDLCUDA or kDLCUDAManaged"));
    Built gpu({4, 8}, {}, kDLFloat, 32, kDLCUDA);
    m = refusal([&] { (void)from_dlpack<f32, 2>(gpu.t, "query", host); });
    CHECK(has(m, "kDLCUDA (2)"));
    CHECK(has(m, "limit: kDLCPU, kDLCUDAHost or kDLCUDAManaged"));
    Built rocm({4, 8}, {}, kDLFloat, 32, 10);
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 2>(rocm.t, "query"); }), "device type 10"));
  }
  SUBCASE("dtype: code, bits, lanes") {
    Built f({4, 8}, {}, kDLFloat, 32);
    auto m = refusal([&] { (void)from_dlpack<bf16, 2>(f.t, "x", host); });
    CHECK(has(m, "'x': dtype: does not match the TensorView's element type bf16"));
    CHECK(has(m, "kDLFloat (2), 32 bits, 1 lane"));
    CHECK(has(m, "limit: kDLBfloat (4), 16 bits, 1 lane"));
    Built e4m3({16}, {}, 8, 8);  // kDLFloat8_e4m3 (with infinities) is not OCP E4M3FN
    CHECK(has(refusal([&] { (void)from_dlpack<f8e4m3, 1>(e4m3.t, "x", host); }), "limit: kDLFloat8_e4m3fn (10)"));
    Built vec({4, 8}, {}, kDLFloat, 32);
    vec.t.dtype.lanes = 4;
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 2>(vec.t, "x", host); }), "32 bits, 4 lanes"));
  }
  SUBCASE("rank and shape") {
    Built b({4, 8}, {}, kDLFloat, 32);
    auto m = refusal([&] { (void)from_dlpack<f32, 3>(b.t, "x", host); });
    CHECK(has(m, "'x': ndim: does not match the TensorView's rank: 2 (limit: 3)"));
    b.t.shape = nullptr;
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 2>(b.t, "x", host); }), "'x': shape: null with ndim > 0"));
    Built neg({4, -8}, {}, kDLFloat, 32);
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 2>(neg.t, "x", host); }), "'x': shape[1]: sizes are not negative: -8"));
  }
  SUBCASE("byte offset, strides, data") {
    Built b({4, 8}, {}, kDLFloat, 32);
    b.t.byte_offset = 6;
    auto m = refusal([&] { (void)from_dlpack<f32, 2>(b.t, "x", {.device = DLPackDevice::host, .tma = false}); });
    CHECK(has(m, "'x': byte_offset: must be a whole number of elements: 6 bytes (limit: a multiple of 4 bytes)"));
    Built neg({4, 8}, {-8, 1}, kDLFloat, 32);
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 2>(neg.t, "x", host); }), "'x': strides[0]"));
    Built null({4, 8}, {}, kDLFloat, 32);
    null.t.data = nullptr;
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 2>(null.t, "x", host); }), "'x': data: null for a tensor of 32 elements"));
    Built empty({0, 8}, {}, kDLFloat, 32);
    empty.t.data = nullptr;
    CHECK_NOTHROW(from_dlpack<f32, 2>(empty.t, "x", {.device = DLPackDevice::host, .tma = false}));
  }
  SUBCASE("TMA alignment (on by default, off for pointer-only tensors)") {
    Built b({4, 8}, {}, kDLFloat, 32);
    b.t.byte_offset = 4;  // one float in: 4 bytes past a 16-byte boundary
    auto m = refusal([&] { (void)from_dlpack<f32, 2>(b.t, "x", host); });
    CHECK(has(m, "'x': data + byte_offset, shape, strides: the base address of a TMA tensor must be 16-byte aligned"));
    CHECK(has(m, "address % 16 = 4"));
    CHECK_NOTHROW(from_dlpack<f32, 2>(b.t, "x", {.device = DLPackDevice::host, .tma = false}));
    Built rows({4, 6}, {6, 1}, kDLFloat, 32);  // rows of 24 bytes
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 2>(rows.t, "x", host); }), "6 elements = 24 bytes"));
    Built inner({4, 8}, {16, 2}, kDLFloat, 32);  // every other column
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 2>(inner.t, "x", host); }), "innermost dimension of a TMA tensor"));
    Built rank6({1, 1, 1, 1, 1, 4}, {}, kDLFloat, 32);
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 6>(rank6.t, "x", host); }), "1 to 5 dimensions"));
  }
  SUBCASE("versioned: major version and read-only flag") {
    Built b({4, 8}, {}, kDLFloat, 32);
    Versioned v{};
    v.version.major = 2;
    v.dl_tensor = b.t;
    auto m = refusal([&] { (void)from_dlpack<f32, 2>(v, "x", host); });
    CHECK(has(m, "'x': version: DLManagedTensorVersioned of another DLPack ABI"));
    CHECK(has(m, ": 2.0 (limit: major version 1)"));
    v.version.major = 1;
    v.flags = 1;
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 2>(v, "x", host); }), "'x': flags: the producer marks the tensor read-only"));
  }
  SUBCASE("null pointer") {
    const DLTensor* none = nullptr;
    CHECK(has(refusal([&] { (void)from_dlpack<f32, 2>(none, "x", host); }), "'x': the DLTensor / DLManagedTensor pointer is null"));
  }
}

TEST_CASE("dlpack: a kernel interpreted on host tensors given through DLPack") {
  auto twice = tilejit::kernel("dlpack_twice", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"B"> B) {
    auto t = descriptor_load(x, {program_id(0) * B, 0}, {B, 8});
    descriptor_store(y, {program_id(0) * B, 0}, t * 2.0f);
  });
  std::vector<float> in(4 * 16), out(4 * 8, 0.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  int64_t in_shape[2] = {4, 8}, in_strides[2] = {16, 1}, out_shape[2] = {4, 8};
  DLTensor x{in.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, in_shape, in_strides, 0};
  DLTensor y{out.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, out_shape, nullptr, 0};
  twice.interpret(tilejit::dim3(2), tilejit::Config{{"B", 2}}, from_dlpack<f32, 2>(x, "x", host),
                  from_dlpack<f32, 2>(y, "y", host));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c) CHECK(out[static_cast<size_t>(r * 8 + c)] == 2.0f * in[static_cast<size_t>(r * 16 + c)]);
}

TEST_CASE("dlpack: a read-only tensor may be read by a kernel, and a kernel that writes it is refused before it runs") {
  auto twice = tilejit::kernel("dlpack_read_only", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"B"> B) {
    auto t = descriptor_load(x, {program_id(0) * B, 0}, {B, 8});
    descriptor_store(y, {program_id(0) * B, 0}, t * 2.0f);
  });
  std::vector<float> in(4 * 8, 1.0f), out(4 * 8, 0.0f);
  int64_t shape[2] = {4, 8};
  Versioned x{}, y{};
  x.version = {1, 1};
  y.version = {1, 1};
  x.flags = y.flags = 1;  // DLPACK_FLAG_BITMASK_READ_ONLY
  x.dl_tensor = DLTensor{in.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 0};
  y.dl_tensor = DLTensor{out.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 0};
  const DLPackOptions read_only{.device = DLPackDevice::host, .read_only = true};
  const auto X = from_dlpack<f32, 2>(x, "x", read_only);
  CHECK(X.read_only());
  y.flags = 0;
  twice.interpret(tilejit::dim3(2), tilejit::Config{{"B", 2}}, X, from_dlpack<f32, 2>(y, "y", host));
  CHECK(out[31] == 2.0f);
  y.flags = 1;
  std::fill(out.begin(), out.end(), 5.0f);
  const std::string msg = refusal([&] {
    twice.interpret(tilejit::dim3(2), tilejit::Config{{"B", 2}}, X, from_dlpack<f32, 2>(y, "y", read_only));
  });
  CHECK(has(msg, "argument 1 (arg1) is a read-only view, and the kernel writes it"));
  CHECK(has(msg, "a writable tensor (a non-const pointer)"));
  for (float v : out) CHECK(v == 5.0f);
}
