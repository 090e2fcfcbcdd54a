// The tilejit public API: include this one header.
#pragma once

#include "tilejit/config.h"
#include "tilejit/dsl/control.h"
#include "tilejit/dsl/dtypes.h"
#include "tilejit/dsl/kernel.h"
#include "tilejit/dsl/tensor.h"
#include "tilejit/dsl/tma.h"
#include "tilejit/dsl/value.h"
#include "tilejit/error.h"
#include "tilejit/launch_args.h"
