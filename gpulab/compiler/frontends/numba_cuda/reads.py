"""Captured arrays on the device: the numba intrinsics an operator reads them with (see :mod:`gpulab.captures`).

The kernel passes each captured array as a struct in its ``Uniforms``
(``struct CapturedK``: a data pointer, then the shape, then the strides in
bytes, all 64-bit; codegen writes it), and the operator takes a pointer to
it. :func:`array_loader` turns that pointer into a numba array (read-only,
any layout), so ``len(x)``, ``x.shape``, ``x.ndim`` and ``x.size`` are
numba's own. A read ``x[i, j]``, rewritten to ``_gpulab_read2(x, bounds,
line, column, array, i, j)``, is one of :func:`device_readers`: negative
indices count from the end; with bounds checks, an index outside the shape
loads nothing, and the first such read claims ``*bounds.claimed`` with an
atomic compare-and-swap and writes the record (:data:`gpulab.captures.RECORD_FIELDS`)
that the host reads after the launch.
"""

from __future__ import annotations

import functools

from ....captures import MAX_DIMS, READ_PREFIX, RECORD_FIELDS, ArrayType

GLOBAL = 1  # NVPTX's global address space: loads through it are LDG, not generic loads


def array_loader(array: ArrayType):
    """An intrinsic ``load(pointer) -> array`` that reads a ``struct CapturedK`` into a numba array."""
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    array_type = array.numba

    @intrinsic
    def load_array(typingctx, pointer):
        def codegen(context, builder, signature, args):
            words = builder.bitcast(args[0], ir.IntType(64).as_pointer())
            word = [builder.load(builder.gep(words, [_i64(k)]), align=8) for k in range(1 + 2 * array.ndim)]
            data_type = context.get_data_type(array_type.dtype)
            value = context.make_array(array_type)(context, builder)
            context.populate_array(value, data=builder.inttoptr(word[0], data_type.as_pointer()),
                                   shape=word[1:1 + array.ndim], strides=word[1 + array.ndim:],
                                   itemsize=_i64(context.get_abi_sizeof(data_type)), meminfo=None)
            return value._getvalue()

        return array_type(types.voidptr), codegen

    return load_array


def _i64(value: int):
    from llvmlite import ir

    return ir.Constant(ir.IntType(64), value)


@functools.cache
def device_readers(boundscheck: bool) -> dict[str, object]:
    """The readers an operator binds: name -> a numba intrinsic, checked against the shape or not."""
    return {f"{READ_PREFIX}{count}": _reader(count, boundscheck) for count in range(1, MAX_DIMS + 1)}


def _reader(count: int, boundscheck: bool):
    from numba.cuda.extending import intrinsic

    indices = ", ".join(f"i{k}" for k in range(count))
    namespace = {"typed": _typed_read, "boundscheck": boundscheck}
    exec(f"def {READ_PREFIX}{count}(typingctx, array, bounds, line, column, number, {indices}):\n"
         f"    return typed(array, (array, bounds, line, column, number, {indices}), boundscheck)\n", namespace)
    return intrinsic(namespace[f"{READ_PREFIX}{count}"])


def _typed_read(array, arguments, boundscheck: bool):
    """The signature and lowering of one read (numba's intrinsics take no ``*args``, so each count has its own)."""
    from numba import types
    from numba.core.errors import TypingError

    index = arguments[5:]
    if not isinstance(array, types.Array):
        raise TypingError(f"a captured array is read here, but numba sees a {array}")
    if array.ndim != len(index):
        raise TypingError(f"a {array.ndim}-D captured array is read with {len(index)} indices")
    for position in index:
        if not isinstance(position, (types.Integer, types.Boolean)):
            raise TypingError(f"a captured array's index must be an integer, not {position}")

    def codegen(context, builder, signature, args):
        return _lower_read(context, builder, signature, args, boundscheck)

    return array.dtype(*arguments), codegen


def _lower_read(context, builder, signature, args, boundscheck: bool):
    from llvmlite import ir
    from numba import types
    from numba.cuda import cgutils

    array_type, index_types = signature.args[0], signature.args[5:]
    array = context.make_array(array_type)(context, builder, args[0])
    shape = cgutils.unpack_tuple(builder, array.shape, array_type.ndim)
    strides = cgutils.unpack_tuple(builder, array.strides, array_type.ndim)
    written, positions, inside = [], [], cgutils.true_bit
    for value, index_type, size in zip(args[5:], index_types, shape):
        signed = isinstance(index_type, types.Integer) and index_type.signed
        value = context.cast(builder, value, index_type, types.int64 if signed else types.uint64)
        written.append(value)
        if signed:  # counted from the end, as in NumPy
            value = builder.select(builder.icmp_signed("<", value, _i64(0)), builder.add(value, size), value)
        positions.append(value)
        inside = builder.and_(inside, builder.icmp_unsigned("<", value, size))
    model = context.data_model_manager[array_type.dtype]
    result = cgutils.alloca_once(builder, model.get_value_type())
    if not boundscheck:
        builder.store(_load(context, builder, array, array_type, positions, strides), result)
        return builder.load(result)
    with builder.if_else(inside, likely=True) as (then, otherwise):
        with then:
            builder.store(_load(context, builder, array, array_type, positions, strides), result)
        with otherwise:
            builder.store(_zero(context, builder, array_type), result)
            _record(builder, args[1], [args[2], args[3], args[4]], written, signature.args[2:5], context)
    return builder.load(result)


def _load(context, builder, array, array_type, positions, strides):
    """The item at ``positions`` (after wrapping), through a global-space pointer for numbers."""
    from llvmlite import ir
    from numba import types

    address = builder.ptrtoint(array.data, ir.IntType(64))
    for position, stride in zip(positions, strides):
        address = builder.add(address, builder.mul(position, stride))
    data_type = context.get_data_type(array_type.dtype)
    model = context.data_model_manager[array_type.dtype]
    if isinstance(array_type.dtype, types.Record):  # numba passes records by pointer: keep it generic
        return model.load_from_data_pointer(builder, builder.inttoptr(address, data_type.as_pointer()))
    pointer = builder.inttoptr(address, ir.PointerType(data_type, GLOBAL))
    return model.from_data(builder, builder.load(pointer, align=context.get_abi_alignment(data_type)))


def _zero(context, builder, array_type):
    """A zero item of the array's type (what a read out of bounds gives: the primitive raises anyway)."""
    from llvmlite import ir
    from numba import types
    from numba.cuda import cgutils

    model = context.data_model_manager[array_type.dtype]
    data_type = context.get_data_type(array_type.dtype)
    if isinstance(array_type.dtype, types.Record):
        storage = cgutils.alloca_once(builder, data_type)
        builder.store(ir.Constant(data_type, None), storage)
        return model.load_from_data_pointer(builder, storage)
    return model.from_data(builder, ir.Constant(data_type, None))


def _record(builder, bounds, constants, written, constant_types, context):
    """Claim ``*bounds.claimed`` (first wins) and, if this read won, write the record of it."""
    from llvmlite import ir
    from numba import types

    i32, i64 = ir.IntType(32), ir.IntType(64)
    slots = builder.bitcast(bounds, i64.as_pointer())
    claimed = builder.inttoptr(builder.load(slots, align=8), i32.as_pointer())
    won = builder.icmp_unsigned("==", builder.extract_value(
        builder.cmpxchg(claimed, ir.Constant(i32, 0), ir.Constant(i32, 1), "monotonic", "monotonic"), 0),
        ir.Constant(i32, 0))
    with builder.if_then(won):
        record = builder.inttoptr(builder.load(builder.gep(slots, [_i64(1)]), align=8), i64.as_pointer())
        values = [context.cast(builder, value, kind, types.int64) for value, kind in zip(constants, constant_types)]
        values += [_i64(len(written)), *written]
        for field, value in zip(RECORD_FIELDS[1:], values):
            builder.store(value, builder.gep(record, [_i64(RECORD_FIELDS.index(field))]), align=8)
        builder.store(_i64(1), record, align=8)  # "failed", written last
