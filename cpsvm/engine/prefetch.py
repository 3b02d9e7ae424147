"""LLVM's prefetch as a numba intrinsic, for dual coordinate descent's kernels
(:mod:`cpsvm.engine.dcd`): compiled into them, never imported when they run compiled
ahead of time."""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Ask the CPU to bring array[index]'s cache line in (LLVM's prefetch: read, high
    locality); no effect on the results."""

    def codegen(context, builder, signature, args):
        array_type, i8p, i32 = signature.args[0], ir.IntType(8).as_pointer(), ir.IntType(32)
        view = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]])
        # "llvm.prefetch": LLVM renames it to its overload for the pointer type
        kind = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        function = cgutils.get_or_insert_function(builder.module, kind, "llvm.prefetch")
        constants = [ir.Constant(i32, v) for v in (0, 3, 1)]  # read, keep in all caches
        builder.call(function, [builder.bitcast(pointer, i8p), *constants])
        return context.get_dummy_value()

    return types.void(array, index), codegen
