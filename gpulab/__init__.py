"""gpulab: see and measure GPU kernels written in typed Python, from a notebook."""

from .compiler.build import Build, compile
from .compiler.target import Target
from .kernel import Kernel, kernel
from .types import (
    bool_, c64, c128, complex64, complex128, element_type, f16, f32, f64, float16, float32, float64,
    i8, i16, i32, i64, int8, int16, int32, int64, u8, u16, u32, u64, uint8, uint16, uint32, uint64,
)
