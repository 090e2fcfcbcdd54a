// Kernel names: the characters that may reach generated source and file names, and long names in file names.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "child_processes.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;

namespace {

auto named(const std::string& name, float factor = 2.0f) {
  return tilejit::kernel(name, [factor](Tensor<f32, 1> x, Meta<"B"> B) {
    auto offs = arange(0, B);
    store(x, offs, load(x, offs) * factor);
  });
}

// The entry named in the generated source's header: `// tilejit kernel "<name>" (entry <entry>)`.
std::string entry_of(const std::string& source) {
  const size_t at = source.find("(entry ");
  REQUIRE(at != std::string::npos);
  return source.substr(at + 7, source.find(')', at) - at - 7);
}

}  // namespace

TEST_CASE("a name that could inject source or break a file name is a UserError at the kernel's line") {
  try {
    named("x\"\n#error injected\n");
    FAIL("expected a UserError");
  } catch (const tilejit::UserError& e) {
    CHECK(e.rule() == "a kernel name may hold only ASCII letters, digits and _ . : -");
    CHECK(e.value() == "\"x\\\"\\n#error injected\\n\" (character 1 is \"\\\"\")");
    CHECK(e.limit().find("1 to 256 characters from A-Z a-z 0-9 _ . : -") != std::string::npos);
    CHECK(e.file().find("test_names.cpp") != std::string::npos);
  }
  for (const std::string bad : {"a/b", "a b", "tab\there", "caf\xc3\xa9", "*/ evil /*", ""}) {
    INFO(bad);
    CHECK_THROWS_WITH_AS(named(bad), doctest::Contains("test_names.cpp"), tilejit::UserError);
  }
  CHECK_THROWS_WITH_AS(named(std::string(257, 'a')), doctest::Contains("a kernel name has 1 to 256 characters"),
                       tilejit::UserError);
  CHECK_NOTHROW(named("ns::gemm_v2.bf16-128x64"));
  CHECK_NOTHROW(named(std::string(256, 'a')));
}

TEST_CASE("a long name is cut in file names, with a hash that keeps cut names apart, and compiles") {
  const std::string base(230, 'n');
  const tilejit::Config c{{"B", 128}};
  const std::string e1 = entry_of(named(base + "1").cuda_source(c));
  const std::string e2 = entry_of(named(base + "2").cuda_source(c));
  CHECK(e1.size() <= 3 + 64 + 1 + 16);
  CHECK(e1 != e2);
  CHECK(e1.starts_with("tj_nnnnnnnn"));
  CHECK(entry_of(named("short_name").cuda_source(c)).starts_with("tj_short_name_"));
  // The first compile of a process names NVRTC's precompiled header after the entry; with the
  // whole name that file name was too long.
  tilejit::testing::run_in_children(1, [&](int) {
    try {
      named(base + "3", 1.0f + static_cast<float>(std::random_device{}() % 1000003) * 1e-7f).warmup({c});  // new code
      return 0;
    } catch (const std::exception&) {
      return 1;
    }
  });
}
