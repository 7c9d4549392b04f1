"""A software prefetch for the numba kernels of :mod:`._kernels`: ``prefetch_row(x, row)``.

An SpMM over a sampled block reads one ``x`` row per edge at a random source node; at millions of
source rows those reads miss every cache and the kernel waits on memory.  Asking for the row a few
edges ahead lets those misses overlap (measured on the 2-core box: ~10-20% of the SpMM's time at
10M edges x 64 features; what DGL's libxsmm kernels do too).  A hint only: it never faults, so a
row past the array's end is harmless, and results do not depend on it.

The hint asks for L2, not L1 (locality 2, x86 ``prefetcht1``): into L2 the SpMM kernel measured 20-25 %
faster at 64-128 features than into L1 (10M edges, one thread, 2-core EPYC); why was not profiled
(likely L1's few outstanding-miss slots, or prefetched rows pushing out the ones in use).
"""
from __future__ import annotations

from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# LLVM names the intrinsic by its pointer type: "p0" once pointers became opaque (LLVM 15), "p0i8" before
_NAME = "llvm.prefetch.p0" if llvm.llvm_version_info[0] >= 15 else "llvm.prefetch.p0i8"
_LINE_BYTES = 64


@intrinsic
def prefetch_row(typingctx, x, row):
    """Prefetch every cache line of ``x[row, :]`` (a C-contiguous 2-d array) for reading."""
    if not isinstance(x, types.Array) or x.ndim != 2 or x.layout != "C" or not isinstance(row, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        intp = context.get_value_type(types.intp)
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        row_bytes = cgutils.unpack_tuple(builder, arr.strides, 2)[0]  # C order: the row's width in bytes
        start = builder.add(builder.ptrtoint(arr.data, intp), builder.mul(index, row_bytes))
        first_line = builder.and_(start, ir.Constant(intp, -_LINE_BYTES))
        span = builder.sub(builder.add(start, row_bytes), first_line)  # bytes from the row's first line on
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        hint = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                              _NAME)
        with cgutils.for_range_slice(builder, ir.Constant(intp, 0), span, ir.Constant(intp, _LINE_BYTES),
                                     intp) as (offset, _):
            address = builder.inttoptr(builder.add(first_line, offset), i8p)
            builder.call(hint, [address, i32(0), i32(2), i32(1)])  # read, into L2 (module docstring), data
        return context.get_dummy_value()

    return types.void(x, row), codegen
