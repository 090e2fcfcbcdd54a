// The layering rule dsl -> jit, checked by the build: this test includes every header of the DSL front
// end (tilejit::dsl) and links only that target, which brings tilejit_jit and no runtime. A front-end
// header that includes a runtime header (or uses a runtime symbol) fails to compile or link here.
#include <doctest/doctest.h>

#include "tilejit/config.h"
#include "tilejit/dsl/control.h"
#include "tilejit/dsl/dtypes.h"
#include "tilejit/dsl/tensor.h"
#include "tilejit/dsl/tma.h"
#include "tilejit/dsl/trace.h"
#include "tilejit/dsl/value.h"
#include "tilejit/error.h"

#ifdef TILEJIT_VERSION_STRING
#error "a front-end header pulled in tilejit/version.h, a runtime header"
#endif

TEST_CASE("the DSL front end traces into the IR without the runtime") {
  using namespace tilejit::dsl;
  tilejit::ir::Graph g;
  const size_t before = g.size();
  {
    detail::TraceScope scope(g);
    auto r = arange(0, 16);
    (void)r;
  }
  CHECK(g.size() > before);
  // Outside a trace a DSL operation is a user error, as with the whole library.
  CHECK_THROWS_AS(arange(0, 16), tilejit::UserError);
}
